//go:build unix

package acprpc

import (
	"os"
	ossignal "os/signal"
	"syscall"
)

// failWritesToClosedStdout makes a write to a closed stdout fail with EPIPE
// rather than kill the process with SIGPIPE, which Go does unless the
// program is notified of the signal, until the function it returns is
// called. The channel is never read: the signal is noted and dropped.
func failWritesToClosedStdout() (restore func()) {
	brokenPipe := make(chan os.Signal, 1)
	ossignal.Notify(brokenPipe, syscall.SIGPIPE)
	return func() { ossignal.Stop(brokenPipe) }
}
