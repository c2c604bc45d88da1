//go:build unix

package fdio

import (
	"io"
	"syscall"
)

// NoWaitWriter writes to a descriptor the runtime polls, without ever
// waiting for the reader: such a descriptor is non-blocking, so one write
// system call takes what fits and returns.
type NoWaitWriter struct {
	rc      syscall.RawConn
	attempt func(fd uintptr) bool // w.write, made once so that a write allocates nothing
	b       []byte
	n       int
	err     error
}

// NewNoWaitWriter returns a NoWaitWriter for w, or nil when w is not a
// descriptor the runtime polls: a blocking file, such as the stdout os/exec
// hands a child, or a writer with no descriptor at all.
func NewNoWaitWriter(w io.Writer) *NoWaitWriter {
	rc := rawConn(w)
	if rc == nil || !Polled(w) {
		return nil
	}
	nw := &NoWaitWriter{rc: rc}
	nw.attempt = nw.write
	return nw
}

func (w *NoWaitWriter) write(fd uintptr) bool {
	w.n, w.err = syscall.Write(int(fd), w.b)
	return true // done: RawConn.Write must not wait for the descriptor to be writable
}

// TryWrite writes as much of b as the descriptor takes at once and returns
// how much that was. A reader with no room is not an error.
func (w *NoWaitWriter) TryWrite(b []byte) (int, error) {
	w.b = b
	err := w.rc.Write(w.attempt)
	n, werr := max(w.n, 0), w.err
	w.b, w.n, w.err = nil, 0, nil
	switch {
	case err != nil:
		return 0, err
	case werr == syscall.EAGAIN || werr == syscall.EINTR:
		return n, nil
	}
	return n, werr
}
