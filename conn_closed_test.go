package acprpc_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// A caller tells "the connection closed before an answer came" from every
// answer the peer can send with errors.Is(err, acprpc.ErrConnClosed): it
// matches however the connection closed, and it never matches an answer,
// whatever its code, message or data say.

// pendingCall starts a Call for method and returns its error channel once
// the peer has read the request.
func pendingCall(t *testing.T, ctx context.Context, c *acprpc.Conn, p *wiretest.Peer, method string, opts ...acprpc.CallOption) (wiretest.Msg, <-chan error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Call(ctx, method, nil, nil, opts...) }()
	return p.ExpectRequest(ctx, method), done
}

func TestConnClosedMatchesEveryWayOfClosing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		close func(c *acprpc.Conn, p *wiretest.Peer, stopParent context.CancelFunc)
	}{
		{"Close", func(c *acprpc.Conn, _ *wiretest.Peer, _ context.CancelFunc) { _ = c.Close() }},
		{"the peer's input ended", func(_ *acprpc.Conn, p *wiretest.Peer, _ context.CancelFunc) { p.CloseWrite() }},
		{"the peer went away", func(_ *acprpc.Conn, p *wiretest.Peer, _ context.CancelFunc) { p.Close() }},
		{"NewConn's context ended", func(_ *acprpc.Conn, _ *wiretest.Peer, stop context.CancelFunc) { stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			parent, stop := context.WithCancel(context.Background())
			defer stop()
			c, p := wiretest.ConnectContext(parent, t, wiretest.Transports[0], nil, nil)
			_, done := pendingCall(t, ctx, c, p, "session/prompt")
			tc.close(c, p, stop)
			err := wiretest.Recv(t, ctx, done)
			assertClosedNotAnswered(t, err)
			<-c.Done()
			assertClosedNotAnswered(t, c.Call(ctx, "after", nil, nil))
			assertClosedNotAnswered(t, c.Notify(ctx, "after", nil))
			require.ErrorIs(t, c.Err(), acprpc.ErrConnClosed)
		})
	}
}

// A handler's nested call, pending when the connection closes, fails with
// ErrConnClosed, not as a cancel, although the handler's context ends too.
func TestConnClosedWinsOverTheHandlersContext(t *testing.T) {
	ctx := wiretest.Context(t)
	nested := make(chan error, 1)
	h := acprpc.HandlerFunc(func(ctx context.Context, req *acprpc.Request) (any, error) {
		err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission", nil, nil)
		nested <- err
		return nil, err
	})
	c, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	p.Request("1", "session/prompt", `{"sessionId":"s"}`)
	p.ExpectRequest(ctx, "session/request_permission")
	require.NoError(t, c.Close())
	assertClosedNotAnswered(t, wiretest.Recv(t, ctx, nested))
}

// Once Done is closed, Notify reports the closed connection instead of
// queueing a line that will never be written. Each round races the
// observer against the rest of the shutdown.
func TestNotifyAfterDone(t *testing.T) {
	for range 50 {
		parent, stop := context.WithCancel(context.Background())
		c, _ := wiretest.ConnectContext(parent, t, wiretest.Transports[0], nil, nil)
		stop()
		<-c.Done()
		assertClosedNotAnswered(t, c.Notify(context.Background(), "after", nil))
	}
}

func assertClosedNotAnswered(t *testing.T, err error) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, acprpc.ErrConnClosed)
	assert.NotErrorIs(t, err, acprpc.ErrCancelled, "a closed connection is not a cancelled call")
	var rpcErr *acprpc.Error
	assert.False(t, errors.As(err, &rpcErr), "no answer came, yet the error holds one: %v", err)
}

func TestPeerAnswersNeverMatchConnClosed(t *testing.T) {
	answers := []string{
		`{"code":-32700,"message":"Parse error"}`,
		`{"code":-32600,"message":"Invalid request"}`,
		`{"code":-32601,"message":"Method not found"}`,
		`{"code":-32602,"message":"Invalid params"}`,
		`{"code":-32603,"message":"Internal error"}`,
		`{"code":-32800,"message":"Request cancelled"}`,
		`{"code":-32000,"message":"Authentication required"}`,
		`{"code":-32002,"message":"Resource not found"}`,
		`{"code":0,"message":""}`,
		`{"code":1,"message":"acprpc: connection closed"}`,
		`{"code":-32603,"message":"acprpc: connection closed","data":"acprpc: connection closed"}`,
		`{"code":-32099,"message":"Server error","data":{"closed":true}}`,
		`{}`,
		`null`,
		`"acprpc: connection closed"`,
	}
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	for _, answer := range answers {
		req, done := pendingCall(t, ctx, c, p, "x/call")
		p.Send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":` + answer + `}`)
		err := wiretest.Recv(t, ctx, done)
		require.Error(t, err, answer)
		assert.NotErrorIs(t, err, acprpc.ErrConnClosed, "the peer's answer %s", answer)
		var callErr *acprpc.CallError
		require.ErrorAs(t, err, &callErr, answer)
	}
	for _, result := range []string{`null`, `{}`, `"acprpc: connection closed"`} {
		req, done := pendingCall(t, ctx, c, p, "x/call")
		p.Respond(string(req.ID), result)
		require.NoError(t, wiretest.Recv(t, ctx, done), "the result %s", result)
	}
}

// An answer too large to keep fails its call, and that is an answer, not a
// closed connection; so is the peer's -32800 awaited after a cancel.
func TestPeerAnswersNeverMatchConnClosedOddCases(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{MaxMessageSize: 4096})
	req, done := pendingCall(t, ctx, c, p, "x/big")
	p.Respond(string(req.ID), `"`+strings.Repeat("x", 8192)+`"`)
	err := wiretest.Recv(t, ctx, done)
	require.Error(t, err)
	assert.NotErrorIs(t, err, acprpc.ErrConnClosed)

	callCtx, cancel := context.WithCancel(ctx)
	req, done = pendingCall(t, callCtx, c, p, "x/cancelled", acprpc.WaitAfterCancel(wiretest.Timeout))
	cancel()
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	p.RespondError(string(req.ID), acprpc.CodeRequestCancelled, "Request cancelled")
	err = wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
	require.NoError(t, c.Err(), "the connection lives on")
}
