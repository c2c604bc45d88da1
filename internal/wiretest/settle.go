package wiretest

import (
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

// Goroutines returns a dump of every goroutine's stack, for the message of
// a test that timed out waiting.
func Goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}
