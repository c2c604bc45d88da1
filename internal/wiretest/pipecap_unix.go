//go:build unix

package wiretest

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// pipeCapacity measures how many bytes an os.Pipe holds with nobody
// reading: it writes to the pipe's non-blocking descriptor until the kernel
// says it is full. No clock is involved, so a busy machine cannot cut the
// measure short.
func pipeCapacity(t testing.TB) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	rc, err := w.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	total, chunk := 0, make([]byte, 4096)
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		for {
			n, err := syscall.Write(int(fd), chunk)
			if n > 0 {
				total += n
			}
			if err != nil {
				werr = err
				return true
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(werr, syscall.EAGAIN) || total == 0 {
		t.Fatalf("wiretest: filling a pipe: %d bytes, %v", total, werr)
	}
	return total
}
