package wiretest

import (
	"context"
	"testing"
)

// Run runs f once per transport, as a subtest named after it: over each of
// Transports, or of over when given (Streams..., say).
func Run(t *testing.T, f func(t *testing.T, tr Transport), over ...Transport) {
	t.Helper()
	if len(over) == 0 {
		over = Transports
	}
	for _, tr := range over {
		t.Run(tr.Name, func(t *testing.T) { f(t, tr) })
	}
}

// Recv waits for a value from ch, or for ch to be closed, and returns it;
// if ctx ends first it fails the test with every goroutine's stack.
func Recv[T any](t testing.TB, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("wiretest: timed out waiting: %v", stalled(ctx))
		var zero T
		return zero
	}
}
