package wiretest

import (
	"errors"
	"io"
	"sync"

	"github.com/acpkit/acprpc"
)

// BreakingAfter is os.Pipe with the Conn's output passing its first n
// bytes and failing every write after them (with "wiretest: output
// broken"), as a pipe whose reader died mid-line does.
func BreakingAfter(n int) Transport {
	return Transport{Name: "os.Pipe", Open: func() (acprpc.Transport, io.ReadWriteCloser, error) {
		in, out, end, err := osPipes()
		if err != nil {
			return nil, nil, err
		}
		return acprpc.NewStreamPipes(in, &failAfter{w: out, left: n}), end, nil
	}}
}

// errBrokenOutput is the error of a BreakingAfter output once it has
// failed.
var errBrokenOutput = errors.New("wiretest: output broken")

// failAfter passes the first left bytes on to w and fails every write after
// them with errBrokenOutput.
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
	return n, errBrokenOutput
}

func (f *failAfter) Close() error { return f.w.Close() }
