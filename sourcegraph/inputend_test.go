package sourcegraph_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
	"github.com/acpkit/acprpc/sourcegraph"
)

// End-of-input tests: the peer closes the connection's input right after
// its last requests and reads on. The engine closes the connection when
// its read ends, and refuses every reply from then on; the Layer holds the
// end back until each request read before it is answered.

// serveToTheEnd runs the handler h makes of the watched input on the
// engine with a Layer, and returns the scripted peer and the engine's
// DisconnectNotify.
func serveToTheEnd(t *testing.T, h func(*wiretest.EOFWatch) jsonrpc2.Handler, opts *sourcegraph.Options) (*wiretest.Peer, <-chan struct{}) {
	t.Helper()
	rwc, p := wiretest.RawPipe(t)
	w := wiretest.WatchEOF(rwc)
	conn := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(w), h(w), opts, quiet)
	t.Cleanup(func() {
		_ = conn.Close()
		<-conn.DisconnectNotify()
	})
	return p, conn.DisconnectNotify()
}

// afterTheEnd replies once the input's end has been read and then either
// the connection has closed or 50 ms have passed: slower than the close.
func afterTheEnd(w *wiretest.EOFWatch) jsonrpc2.Handler {
	return jsonrpc2.HandlerWithError(func(ctx context.Context, conn *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
		select {
		case <-w.Seen():
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		work := time.NewTimer(50 * time.Millisecond) // the handler's work, not a wait of the test's
		defer work.Stop()
		select {
		case <-conn.DisconnectNotify():
		case <-work.C:
		}
		return map[string]string{"done": req.ID.String()}, nil
	})
}

// A request read just before the end of input, its handler slower than the
// close, gets its result before the connection ends. It used to get
// nothing, every time: the engine closed on the end and refused the reply,
// and the Layer's own answer found the stream closed.
func TestInputEndRequestReadJustBeforeGetsItsResult(t *testing.T) {
	ctx := wiretest.Context(t)
	p, gone := serveToTheEnd(t, afterTheEnd, nil)
	p.Request("1", "x/slow", `{}`)
	p.CloseWrite()
	wiretest.Recv(t, ctx, gone)
	got := p.RestAnswers(ctx) // written before the connection ended
	require.Len(t, got, 1)
	assert.JSONEq(t, `{"done":"1"}`, string(got["1"].Result))
}

// Many requests in flight at the end of input: each gets its result, once.
func TestInputEndManyRequestsInFlightAreEachAnsweredOnce(t *testing.T) {
	ctx := wiretest.Context(t)
	const n = 100
	p, gone := serveToTheEnd(t, afterTheEnd, nil)
	for i := 1; i <= n; i++ {
		p.Request(fmt.Sprint(i), "x/slow", `{}`)
	}
	p.CloseWrite()
	wiretest.Recv(t, ctx, gone)
	got := p.RestAnswers(ctx)
	require.Len(t, got, n)
	for i := 1; i <= n; i++ {
		assert.JSONEq(t, fmt.Sprintf(`{"done":"%d"}`, i), string(got[fmt.Sprint(i)].Result))
	}
}

// Handlers that never reply, and ignore their contexts, are answered as
// cancelled once InputEndGrace has passed: a prompt with its marker, any
// other method -32800; then the connection ends.
func TestInputEndHandlerThatNeverRepliesIsAnsweredWithinTheBound(t *testing.T) {
	ctx := wiretest.Context(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	deaf := func(*wiretest.EOFWatch) jsonrpc2.Handler {
		return jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) {
			<-release
			return nil, nil
		})
	}
	const bound = 100 * time.Millisecond
	p, gone := serveToTheEnd(t, deaf, &sourcegraph.Options{InputEndGrace: bound})
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	p.Request("2", "x/other", `{}`)
	ended := time.Now()
	p.CloseWrite()
	wiretest.Recv(t, ctx, gone)
	assert.GreaterOrEqual(t, time.Since(ended), bound, "answered before the bound")
	got := p.RestAnswers(ctx)
	require.Len(t, got, 2)
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(got["1"].Result))
	assert.Equal(t, int64(acprpc.CodeRequestCancelled), got["2"].Code())
}

// The end of input over and over, a few requests in flight each time, in a
// loop bounded in rounds and time.
func TestInputEndStress(t *testing.T) {
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	deadline := time.Now().Add(20 * time.Second)
	for round := 0; round < rounds && time.Now().Before(deadline); round++ {
		ctx := wiretest.Context(t)
		n := 1 + round%5
		p, gone := serveToTheEnd(t, afterTheEnd, nil)
		for i := 1; i <= n; i++ {
			p.Request(fmt.Sprint(i), "x/slow", `{}`)
		}
		p.CloseWrite()
		wiretest.Recv(t, ctx, gone)
		got := p.RestAnswers(ctx)
		require.Len(t, got, n, "round %d", round)
		for id, m := range got {
			require.JSONEq(t, fmt.Sprintf(`{"done":%q}`, id), string(m.Result), "round %d", round)
		}
		p.Close()
	}
}
