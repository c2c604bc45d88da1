// Package fdio is what the runtime lets a transport do with a descriptor
// under a reader or writer: whether a wait on it parks in the runtime's
// poller, whether closing it cuts a read or write short, and a write that
// never waits for the reader. The Stream transport asks it, so that the
// connection knows which reads hold a thread and which writes it can try.
package fdio

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// Polled reports whether the runtime polls x, so that a wait on it parks
// the goroutine and frees its thread: true for a network connection and for
// a file the runtime polls (os.Pipe's), false for a file it cannot (the
// blocking stdin and stdout os/exec hands a child) and for what it cannot
// tell.
func Polled(x any) bool {
	switch f := x.(type) {
	case *os.File:
		return !errors.Is(f.SetDeadline(time.Time{}), os.ErrNoDeadline)
	case interface{ SetReadDeadline(time.Time) error }: // a net.Conn
		return true
	}
	return false
}

// CloseInterrupts reports whether closing x ends a read or write blocked on
// it. A file the runtime cannot poll, such as a blocking stdin or stdout
// handed over by a parent process, refuses deadlines, and closing it does
// not interrupt the system call in progress.
func CloseInterrupts(x any) bool {
	if _, isFile := x.(*os.File); isFile {
		return Polled(x)
	}
	_, ok := x.(io.Closer)
	return ok
}

// rawConn returns x's descriptor for system calls, or nil if it has none.
func rawConn(x any) syscall.RawConn {
	sc, ok := x.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}
