package wiretest

import (
	"context"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
)

// NoLeak fails t if a goroutine started during the test outlives it. Call
// it first in the test, so that its check runs after every other cleanup.
func NoLeak(t testing.TB) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) })
}

// Settle closes c and waits until every request it served has been
// answered or its answer dropped, which is after its handler returned: once
// Close has returned nothing new is served, and a request leaves the
// in-flight table only when its handler's return has been dealt with. So
// what the handlers recorded, and what the Conn wrote for them, is final.
// The Conn offers nothing to wake on here, so the table is polled.
func Settle(t testing.TB, ctx context.Context, c *acprpc.Conn) {
	t.Helper()
	if err := c.Close(); err != nil {
		t.Errorf("wiretest: close: %v", err)
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for c.Stats().IncomingInFlight > 0 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("wiretest: handlers did not return after Close: %d still in flight", c.Stats().IncomingInFlight)
		}
	}
}

// AwaitStall waits until progress has not moved for ten looks in a row, 20
// ms apart, and returns how long that took. It picks a moment to measure a
// flood that has been held back; nothing may depend on the moment being
// exact, since a busy machine can pause the flood too.
func AwaitStall(t testing.TB, ctx context.Context, progress func() int64) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	last, still := progress(), 0
	for still < 10 {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("wiretest: progress never stalled: %v", ctx.Err())
		}
		if now := progress(); now != last {
			last, still = now, 0
			continue
		}
		still++
	}
	return time.Since(start)
}

// Goroutines returns a dump of every goroutine's stack, for the message of
// a test that timed out waiting.
func Goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}
