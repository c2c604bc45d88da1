package wiretest

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// timeout bounds every wait of a test that uses Context; a test that needs
// it has already failed.
const timeout = 10 * time.Second

// Context returns a context for one test's waits: it ends after ten
// seconds, which only a test that has already failed needs, or when the
// test ends.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
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

// NoLeak fails t if a goroutine started during the test outlives it. Call
// it first in the test, so that its check runs after every other cleanup.
func NoLeak(t testing.TB) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// stalled is the error of a wait whose ctx ended first: ctx's error and
// every goroutine's stack, which shows what the wait was stuck behind.
func stalled(ctx context.Context) error {
	return fmt.Errorf("%w; goroutines:\n%s", ctx.Err(), goroutines())
}

// goroutines returns a dump of every goroutine's stack.
func goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}
