package acprpc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

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

// SetLogger changes where the connection's diagnostics go while it runs,
// from any goroutine.
func TestSetLogger(t *testing.T) {
	ctx := wiretest.Context(t)
	c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	badLine := func() {
		p.Send(`{"jsonrpc":"2.0","id":1,`) // answered -32700 with a warning
		p.ExpectError(ctx, "null", acprpc.CodeParseError)
	}
	badLine()
	logger, log := wiretest.NewLog()
	c.SetLogger(logger)
	badLine()
	_, found := log.Find(slog.LevelWarn, "bad message")
	assert.True(t, found, "the logger set after construction receives the warning")
	c.SetLogger(nil)
	n := len(log.Records())
	badLine()
	assert.Len(t, log.Records(), n, "a nil logger is silent")

	// Loggers swapped while the connection logs: the race detector watches.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			l, _ := wiretest.NewLog()
			for {
				select {
				case <-stop:
					return
				default:
					c.SetLogger(l)
				}
			}
		})
	}
	for range 50 {
		badLine()
	}
	close(stop)
	wg.Wait()
}

type traceKey struct{}

// Options.HandlerContext gives each handler, request or notification, a
// context of the SDK's own making: its values reach the handler, the
// library's accessors and cancellation work through it, and the answer's
// Sent hook sees it.
func TestHandlerContext(t *testing.T) {
	ctx := wiretest.Context(t)
	seen := make(chan string, 8)
	sentUnder := make(chan string, 8)
	opts := &acprpc.Options{
		HandlerContext: func(ctx context.Context, req *acprpc.Request) context.Context {
			return context.WithValue(ctx, traceKey{}, fmt.Sprintf("%s#%s %s", req.Method, req.ID, req.Params))
		},
		Hooks: acprpc.Hooks{Sent: func(ctx context.Context, m *acprpc.Message) {
			if m.Kind == acprpc.KindResult || m.Kind == acprpc.KindError {
				trace, _ := ctx.Value(traceKey{}).(string)
				sentUnder <- trace
			}
		}},
	}
	h := wiretest.Mux{
		"session/prompt": func(ctx context.Context, req *acprpc.Request) (any, error) {
			seen <- ctx.Value(traceKey{}).(string)
			r, ok := acprpc.RequestFromContext(ctx)
			assert.True(t, ok && r == req, "RequestFromContext through the derived context")
			assert.NotNil(t, acprpc.ConnFromContext(ctx), "ConnFromContext through the derived context")
			<-ctx.Done()
			seen <- context.Cause(ctx).Error()
			return nil, context.Cause(ctx)
		},
		"note": func(ctx context.Context, req *acprpc.Request) (any, error) {
			seen <- ctx.Value(traceKey{}).(string)
			return nil, nil
		},
	}
	_, p := wiretest.Connect(t, wiretest.Transports[0], h, opts)
	p.Request("7", "session/prompt", `{"sessionId":"s"}`)
	assert.Equal(t, `session/prompt#7 {"sessionId":"s"}`, wiretest.Recv(t, ctx, seen))
	p.Cancel("7")
	assert.Equal(t, acprpc.ErrPeerCancelled.Error(), wiretest.Recv(t, ctx, seen), "the peer's cancel reaches the derived context")
	p.ExpectResult(ctx, "7", `{"stopReason":"cancelled"}`)
	assert.Equal(t, `session/prompt#7 {"sessionId":"s"}`, wiretest.Recv(t, ctx, sentUnder), "the answer is sent under the handler's context")
	p.Notify("note", `[1]`)
	assert.Equal(t, `note# [1]`, wiretest.Recv(t, ctx, seen))
}

// A HandlerContext that does not derive from the request's context is
// ignored with an error logged, so the handler never loses its cancel; a
// nil one keeps the request's context.
func TestHandlerContextMustDerive(t *testing.T) {
	ctx := wiretest.Context(t)
	logger, log := wiretest.NewLog()
	var stranger atomic.Bool
	stranger.Store(true)
	opts := &acprpc.Options{Logger: logger, HandlerContext: func(context.Context, *acprpc.Request) context.Context {
		if stranger.Load() {
			return context.Background()
		}
		return nil
	}}
	_, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"block": wiretest.BlockUntilCancelled}, opts)
	p.Request("1", "block", `{}`)
	p.Cancel("1")
	p.ExpectError(ctx, "1", acprpc.CodeRequestCancelled)
	_, found := log.Find(slog.LevelError, "does not derive")
	assert.True(t, found)
	stranger.Store(false)
	p.Request("2", "block", `{}`)
	p.Cancel("2")
	p.ExpectError(ctx, "2", acprpc.CodeRequestCancelled)
}

// Options.ReportCancelledTurns: a prompt whose turn this side cancelled
// returns stopReason "cancelled" even when the agent answers "end_turn",
// whether the cancel was CancelSession or the call's own context; other
// sessions, other stop reasons and other members are the agent's. Off,
// the agent's answer passes as it is.
func TestReportCancelledTurns(t *testing.T) {
	type turn struct {
		StopReason string          `json:"stopReason"`
		Meta       json.RawMessage `json:"_meta,omitempty"`
	}
	prompt := func(ctx context.Context, c *acprpc.Conn, session string, opts ...acprpc.CallOption) <-chan turn {
		out := make(chan turn, 1)
		go func() {
			var r turn
			err := c.Call(ctx, "session/prompt", map[string]string{"sessionId": session}, &r, opts...)
			if err != nil {
				r.StopReason = "error: " + err.Error()
			}
			out <- r
		}()
		return out
	}
	t.Run("off", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
		got := prompt(ctx, c, "s")
		m := p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, c.CancelSession(ctx, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "end_turn", wiretest.Recv(t, ctx, got).StopReason)
	})
	t.Run("session cancelled", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		cancelled := prompt(ctx, c, "s")
		first := p.ExpectRequest(ctx, "session/prompt")
		other := prompt(ctx, c, "t")
		second := p.ExpectRequest(ctx, "session/prompt")
		refused := prompt(ctx, c, "s")
		third := p.ExpectRequest(ctx, "session/prompt")
		require.NoError(t, c.CancelSession(ctx, "s"))
		p.ExpectNotification(ctx, "session/cancel")
		p.Respond(string(first.ID), `{"stopReason":"end_turn","_meta":{"tokens":3}}`)
		p.Respond(string(second.ID), `{"stopReason":"end_turn"}`)
		p.Respond(string(third.ID), `{"stopReason":"refusal"}`)
		got := wiretest.Recv(t, ctx, cancelled)
		assert.Equal(t, "cancelled", got.StopReason)
		assert.JSONEq(t, `{"tokens":3}`, string(got.Meta), "the answer's other members are kept")
		assert.Equal(t, "end_turn", wiretest.Recv(t, ctx, other).StopReason, "another session's turn is its own")
		assert.Equal(t, "refusal", wiretest.Recv(t, ctx, refused).StopReason, "only end_turn is rewritten")
	})
	t.Run("call cancelled", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		callCtx, cancel := context.WithCancel(ctx)
		got := prompt(callCtx, c, "s", acprpc.WaitAfterCancel(wiretest.Timeout))
		m := p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
	})
	t.Run("shutdown", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		got := prompt(ctx, c, "s", acprpc.WaitAfterCancel(wiretest.Timeout))
		m := p.ExpectRequest(ctx, "session/prompt")
		shut := make(chan error, 1)
		go func() { shut <- c.Shutdown(ctx) }()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
		assert.NoError(t, wiretest.Recv(t, ctx, shut))
	})
}
