package wiretest

import (
	"errors"
	"io"
	"sync"
)

// ErrBrokenOutput is the error of a FailAfter output once it has failed.
var ErrBrokenOutput = errors.New("wiretest: output broken")

// FailAfter returns an output that passes the first n bytes on to w and
// fails every write after them with ErrBrokenOutput, as a pipe whose reader
// died mid-line does.
func FailAfter(w io.WriteCloser, n int) io.WriteCloser { return &failAfter{w: w, left: n} }

type failAfter struct {
	w    io.WriteCloser
	mu   sync.Mutex
	left int
}

func (f *failAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(p) <= f.left {
		f.left -= len(p)
		return f.w.Write(p)
	}
	n, _ := f.w.Write(p[:f.left])
	f.left = 0
	return n, ErrBrokenOutput
}

func (f *failAfter) Close() error { return f.w.Close() }

// Discard is an output that takes everything and closes without error.
var Discard io.WriteCloser = discard{}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) Close() error                { return nil }
