//go:build !unix

package wiretest

import (
	"os"
	"testing"
	"time"
)

// pipeCapacity measures how many bytes an os.Pipe holds with nobody
// reading: a write with a deadline fills it and reports what it took.
func pipeCapacity(t testing.TB) int {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := w.SetWriteDeadline(time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	n, err := w.Write(make([]byte, 16<<20))
	if !os.IsTimeout(err) || n <= 0 {
		t.Fatalf("wiretest: filling a pipe: %d bytes, %v", n, err)
	}
	return n
}
