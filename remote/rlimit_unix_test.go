//go:build unix

package remote

import (
	"syscall"
	"testing"
)

// raiseFileLimit lifts the soft limit on open files to the hard one: every
// connection is a socket.
func raiseFileLimit(t testing.TB) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	lim.Cur = lim.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil && t != nil {
		t.Logf("cannot raise the open-file limit: %v", err)
	}
}
