package wiretest

import (
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

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
