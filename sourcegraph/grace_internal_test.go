package sourcegraph

import (
	"context"
	"io"
	"log"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/acpkit/acprpc/internal/wiretest"
)

// A grace timer that fires as its request's handler replies runs on past
// the Stop that claim calls, and may take l.mu only once the peer, which
// has the reply, has reused the ID for a new request. It answers its own
// request, answered already, so it does nothing: the new request's answer
// is its handler's. The test fires the timer itself at that point, which
// the scheduler reaches only now and then.
func TestStaleGraceTimerLeavesTheReusedIDAlone(t *testing.T) {
	ctx := wiretest.Context(t)
	timers := make(chan func(), 1)
	l := New(&Options{CancelGrace: time.Millisecond})
	l.afterFunc = func(_ time.Duration, f func()) *time.Timer {
		timers <- f
		return time.AfterFunc(time.Hour, func() {}) // stopped by the reply's claim, as a real timer would be, too late
	}
	releaseFirst, releaseSecond := make(chan struct{}), make(chan struct{})
	h := handlerFunc(func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
		switch r.Method {
		case "first": // ignores its cancel, and replies as its grace runs out
			<-releaseFirst
			_ = c.Reply(context.Background(), r.ID, "first")
		case "second":
			<-releaseSecond
			_ = c.Reply(ctx, r.ID, "second")
		case "ping":
			_ = c.Reply(ctx, r.ID, "pong")
		}
	})
	rwc, p := wiretest.RawPipe(t)
	conn := jsonrpc2.NewConn(context.Background(), l.Stream(jsonrpc2.NewPlainObjectStream(rwc)), l.Handler(h),
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	t.Cleanup(func() {
		_ = conn.Close()
		<-conn.DisconnectNotify()
	})

	p.Request("1", "first", `{}`)
	p.Cancel("1")
	fire := wiretest.Recv(t, ctx, timers) // the cancel armed the first request's grace timer
	close(releaseFirst)
	p.ExpectResult(ctx, "1", `"first"`) // the reply claimed the answer before the timer took l.mu
	p.Request("1", "second", `{}`)      // the ID is free: its answer is out
	p.Request("2", "ping", `{}`)
	p.ExpectResult(ctx, "2", `"pong"`) // the new request holds the ID
	fire()                             // the first request's timer takes l.mu at last
	p.Request("3", "ping", `{}`)
	p.ExpectResult(ctx, "3", `"pong"`) // nothing went out under the ID
	close(releaseSecond)
	p.ExpectResult(ctx, "1", `"second"`)
}
