package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// nestedCaller is a session/prompt handler that asks the peer for
// permission and returns what wrap makes of the failed call's error.
func nestedCaller(wrap func(error) error) acprpc.HandlerFunc {
	return func(ctx context.Context, req *acprpc.Request) (any, error) {
		err := acprpc.ConnFromContext(ctx).Call(ctx, "session/request_permission", map[string]string{"sessionId": "s"}, nil)
		if err == nil {
			return map[string]string{"stopReason": "end_turn"}, nil
		}
		return nil, wrap(err)
	}
}

// A handler that returns the error of a failed nested call does not answer
// with the peer's code: a client that answered session/request_permission
// with -32601 must not see its session/prompt fail with -32601, as if
// session/prompt did not exist. The answer is -32603, naming the failed
// call and the peer's error.
func TestNestedCallErrorIsNotForwarded(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(error) error
	}{
		{"as is", func(err error) error { return err }},
		{"wrapped", func(err error) error { return fmt.Errorf("asking permission: %w", err) }},
		{"joined", func(err error) error { return errors.Join(errors.New("turn failed"), err) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, code := range []int64{acprpc.CodeMethodNotFound, acprpc.CodeInvalidParams, -32002, acprpc.CodeRequestCancelled} {
				ctx := wiretest.Context(t)
				_, p := wiretest.Connect(t, wiretest.Transports[0], nestedCaller(tc.wrap), nil)
				p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
				ask := p.ExpectRequest(ctx, "session/request_permission")
				p.RespondError(string(ask.ID), code, "Method not found: session/request_permission")
				m := p.ExpectError(ctx, "1", acprpc.CodeInternalError)
				assert.Contains(t, m.Error.Message, "session/request_permission", "the message names the failed call")
				assert.Contains(t, m.Error.Message, fmt.Sprint(code), "the message carries the peer's error")
			}
		})
	}
}

// A handler that means to answer with a code of its own says so with an
// *Error of its own, outside the failed call's error, and keeps its code
// and data.
func TestNestedCallErrorWithTheHandlersOwnCode(t *testing.T) {
	ctx := wiretest.Context(t)
	own := &acprpc.Error{Code: -32002, Message: "Resource not found: the terminal is gone", Data: []byte(`{"retry":false}`)}
	h := nestedCaller(func(err error) error { return fmt.Errorf("%w (because %w)", own, err) })
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	p.Request("1", "session/prompt", `{"sessionId":"s","prompt":[]}`)
	ask := p.ExpectRequest(ctx, "session/request_permission")
	p.RespondError(string(ask.ID), acprpc.CodeMethodNotFound, "Method not found")
	m := p.ExpectError(ctx, "1", -32002)
	assert.Equal(t, own.Message, m.Error.Message)
	assert.JSONEq(t, `{"retry":false}`, string(m.Error.Data))
}

// Inside a request that was cancelled, the nested call's error (here the
// peer's -32800 for the cancelled permission request) still gives way to
// the request's cancelled answer: the marker, or -32800.
func TestNestedCallErrorInACancelledRequest(t *testing.T) {
	for _, tc := range []struct{ method, want string }{
		{"session/prompt", `{"stopReason":"cancelled"}`},
		{"x/tool", ""},
	} {
		t.Run(tc.method, func(t *testing.T) {
			ctx := wiretest.Context(t)
			h := nestedCaller(func(err error) error { return err })
			_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{WaitAfterCancel: time.Minute})
			p.Request("1", tc.method, `{"sessionId":"s","prompt":[]}`)
			ask := p.ExpectRequest(ctx, "session/request_permission")
			p.Cancel("1")
			p.ExpectNotification(ctx, acprpc.MethodCancelRequest) // the cascade
			p.RespondError(string(ask.ID), acprpc.CodeRequestCancelled, "Request cancelled")
			if tc.want != "" {
				p.ExpectResult(ctx, "1", tc.want)
			} else {
				p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
			}
		})
	}
}

// A handler's own *Error, with no nested call in its chain, is answered
// with its code as before.
func TestHandlersOwnErrorKeepsItsCode(t *testing.T) {
	ctx := wiretest.Context(t)
	h := acprpc.HandlerFunc(func(context.Context, *acprpc.Request) (any, error) {
		return nil, fmt.Errorf("loading: %w", acprpc.NewError(-32002, "Resource not found"))
	})
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	p.Request("1", "session/load", `{}`)
	m := p.ExpectError(ctx, "1", -32002)
	require.NotNil(t, m.Error)
	assert.Equal(t, "Resource not found", m.Error.Message)
}

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
			c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil, wiretest.With{Parent: parent})
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

// A call or notification after the connection closed says who closed it
// and why, in the words Err gives: this side's Close or Shutdown, the peer
// hanging up, a failed write, or NewConn's context.
func TestCallAfterCloseSaysWhoClosedAndWhy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tr    wiretest.Transport
		close func(c *acprpc.Conn, p *wiretest.Peer, stopParent context.CancelFunc)
		says  string
	}{
		{"Close", wiretest.Transports[0], func(c *acprpc.Conn, _ *wiretest.Peer, _ context.CancelFunc) { _ = c.Close() },
			"connection closed by this side (Close)"},
		{"Shutdown", wiretest.Transports[0], func(c *acprpc.Conn, _ *wiretest.Peer, _ context.CancelFunc) {
			_ = c.Shutdown(context.Background())
		}, "connection closed by this side (Shutdown)"},
		{"the peer hung up", wiretest.Transports[0], func(_ *acprpc.Conn, p *wiretest.Peer, _ context.CancelFunc) { p.CloseWrite() },
			"connection closed by the peer: its output ended: EOF"},
		{"a failed write", wiretest.BreakingAfter(0), func(c *acprpc.Conn, _ *wiretest.Peer, _ context.CancelFunc) {
			_ = c.Notify(context.Background(), "_my/note", nil)
		}, "connection closed: a write to the peer failed: wiretest: output broken"},
		{"NewConn's context", wiretest.Transports[0], func(_ *acprpc.Conn, _ *wiretest.Peer, stop context.CancelFunc) { stop() },
			"connection closed: NewConn's context ended: context canceled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := wiretest.Context(t)
			parent, stop := context.WithCancel(context.Background())
			defer stop()
			c, p := wiretest.Connect(t, tc.tr, nil, nil, wiretest.With{Parent: parent})
			tc.close(c, p, stop)
			<-c.Done()
			assert.Equal(t, "acprpc: "+tc.says, c.Err().Error())
			err := c.Call(ctx, "session/prompt", nil, nil)
			assertClosedNotAnswered(t, err)
			assert.Equal(t, "acprpc: session/prompt: "+tc.says, err.Error())
			err = c.Notify(ctx, "session/update", nil)
			assertClosedNotAnswered(t, err)
			assert.Equal(t, "acprpc: session/update: "+tc.says, err.Error())
		})
	}
}

// A call made as soon as a failed write has closed the connection (its Done
// closed, its table of calls perhaps not yet) is refused with the reason,
// never with a bare "connection closed": repeated, since the window is a
// few instructions wide.
func TestCallJustAfterAFailedWriteSaysWhy(t *testing.T) {
	const says = "connection closed: a write to the peer failed: wiretest: output broken"
	for range 200 {
		ctx := wiretest.Context(t)
		c, _ := wiretest.Connect(t, wiretest.BreakingAfter(0), nil, nil)
		_ = c.Notify(ctx, "_my/note", nil)
		<-c.Done()
		err := c.Call(ctx, "_my/call", nil, nil)
		require.ErrorIs(t, err, acprpc.ErrConnClosed)
		require.Equal(t, "acprpc: _my/call: "+says, err.Error())
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
		c, _ := wiretest.Connect(t, wiretest.Transports[0], nil, nil, wiretest.With{Parent: parent})
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
	req, done = pendingCall(t, callCtx, c, p, "x/cancelled", acprpc.WaitAfterCancel(time.Minute))
	cancel()
	p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
	p.RespondError(string(req.ID), acprpc.CodeRequestCancelled, "Request cancelled")
	err = wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.NotErrorIs(t, err, acprpc.ErrConnClosed)
	require.NoError(t, c.Err(), "the connection lives on")
}

// sdkError is an error type of an SDK's own, as an SDK that embeds the
// core keeps it: its As method is how the core reads its code, message and
// data.
type sdkError struct {
	Code    int
	Message string
	Data    any
}

func (e *sdkError) Error() string { return fmt.Sprintf("sdk error %d: %s", e.Code, e.Message) }

func (e *sdkError) As(target any) bool {
	t, ok := target.(**acprpc.Error)
	if !ok {
		return false
	}
	*t = &acprpc.Error{Code: int64(e.Code), Message: e.Message}
	if e.Data != nil {
		(*t).Data, _ = json.Marshal(e.Data)
	}
	return true
}

// A handler's error of the SDK's own type, bare or wrapped, is answered
// with the code, message and data its As method gives; on the calling
// side, errors.As finds the peer's *Error for the SDK to map back.
func TestSDKErrorMapsThroughAs(t *testing.T) {
	ctx := wiretest.Context(t)
	auth := &sdkError{Code: -32000, Message: "Authentication required", Data: map[string]string{"method": "oauth"}}
	h := wiretest.Mux{
		"bare":    func(context.Context, *acprpc.Request) (any, error) { return nil, auth },
		"wrapped": func(context.Context, *acprpc.Request) (any, error) { return nil, fmt.Errorf("new session: %w", auth) },
		"no code": func(context.Context, *acprpc.Request) (any, error) { return nil, &sdkError{Message: "oops"} },
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, nil)
	for _, method := range []string{"bare", "wrapped"} {
		p.Request("1", method, `{}`)
		m := p.ExpectError(ctx, "1", -32000)
		assert.Equal(t, "Authentication required", m.Error.Message, method)
		assert.JSONEq(t, `{"method":"oauth"}`, string(m.Error.Data), method)
	}
	p.Request("2", "no code", `{}`)
	m := p.ExpectError(ctx, "2", acprpc.CodeInternalError) // never code 0 on the wire
	assert.Equal(t, "sdk error 0: oops", m.Error.Message)

	client, agent := acprpc.Pipe()
	a := acprpc.NewConn(ctx, agent, h, nil)
	defer a.Close()
	c := acprpc.NewConn(ctx, client, nil, nil)
	defer c.Close()
	err := c.Call(ctx, "wrapped", nil, nil)
	var rpcErr *acprpc.Error
	require.ErrorAs(t, err, &rpcErr)
	assert.Equal(t, int64(-32000), rpcErr.Code)
	assert.JSONEq(t, `{"method":"oauth"}`, string(rpcErr.Data))
}
