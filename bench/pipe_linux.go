package bench

import (
	"os"
	"syscall"
)

// stdioPipe returns a pipe whose read end (agentReads) or write end is
// blocking, as the ends of a spawned agent's stdin and stdout are: os/exec
// hands the child blocking descriptors, and os.Stdin and os.Stdout over them
// are files the runtime cannot poll, so each read and write is a system call
// that holds a thread. The other end, the client's, is polled as os.Pipe's
// are.
func stdioPipe(agentReads bool) (r, w *os.File, err error) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	clientEnd := fds[0]
	if agentReads {
		clientEnd = fds[1]
	}
	if err := syscall.SetNonblock(clientEnd, true); err != nil {
		syscall.Close(fds[0])
		syscall.Close(fds[1])
		return nil, nil, err
	}
	// os.NewFile polls a descriptor only if it is non-blocking.
	return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1"), nil
}
