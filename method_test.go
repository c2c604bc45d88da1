package acprpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

var (
	typedPrompt = acprpc.Method[promptParams, promptResult]{Name: "session/prompt"}
	typedUpdate = acprpc.Notification[sessionRef]{Name: "session/update"}
)

// typedCall is the outcome of a Method.Call made in the background.
type typedCall struct {
	res promptResult
	err error
}

// callTyped calls typedPrompt on conn in the background with ctx.
func callTyped(ctx context.Context, conn *acprpc.Conn) <-chan typedCall {
	done := make(chan typedCall, 1)
	go func() {
		res, err := typedPrompt.Call(ctx, conn, promptParams{SessionID: "s1"})
		done <- typedCall{res, err}
	}()
	return done
}

// A Method's call sends its name and params and returns the result as its
// R.
func TestMethodCallReturnsTypedResult(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	done := callTyped(ctx, conn)
	req := p.ExpectRequest(ctx, "session/prompt")
	assert.JSONEq(t, `{"sessionId":"s1","prompt":null}`, string(req.Params))
	p.Respond(string(req.ID), `{"stopReason":"end_turn"}`)
	got := wiretest.Recv(t, ctx, done)
	require.NoError(t, got.err)
	assert.Equal(t, promptResult{StopReason: "end_turn"}, got.res)
}

// An error answer is a *CallError wrapping the peer's *Error, with the zero
// R.
func TestMethodCallErrorAnswer(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	done := callTyped(ctx, conn)
	req := p.ExpectRequest(ctx, "session/prompt")
	p.RespondError(string(req.ID), acprpc.CodeInvalidParams, "no such session")
	got := wiretest.Recv(t, ctx, done)
	var callErr *acprpc.CallError
	require.ErrorAs(t, got.err, &callErr)
	assert.Equal(t, "session/prompt", callErr.Method)
	var rpcErr *acprpc.Error
	require.ErrorAs(t, got.err, &rpcErr)
	assert.EqualValues(t, acprpc.CodeInvalidParams, rpcErr.Code)
	assert.Equal(t, promptResult{}, got.res)
}

// A result that is not an R is the call's error, saying so, and the R is
// its zero value: nothing half-decoded reaches the caller.
func TestMethodCallWrongTypedResult(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	done := callTyped(ctx, conn)
	req := p.ExpectRequest(ctx, "session/prompt")
	p.Respond(string(req.ID), `{"stopReason":42}`)
	got := wiretest.Recv(t, ctx, done)
	var typeErr *json.UnmarshalTypeError
	require.ErrorAs(t, got.err, &typeErr)
	var callErr *acprpc.CallError
	require.ErrorAs(t, got.err, &callErr)
	assert.Contains(t, got.err.Error(), "cannot decode result")
	assert.Equal(t, promptResult{}, got.res)
}

// Cancelling the context of a Method's call of session/prompt sends the
// peer one session/cancel for its session, and the call returns the
// agent's cancelled stop reason.
func TestMethodCallCancelPassesThrough(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, p := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	callCtx, cancel := context.WithCancel(ctx)
	done := callTyped(callCtx, conn)
	req := p.ExpectRequest(ctx, "session/prompt")
	cancel()
	note := p.ExpectNotification(ctx, "session/cancel")
	assert.JSONEq(t, `{"sessionId":"s1"}`, string(note.Params))
	p.Respond(string(req.ID), `{"stopReason":"cancelled"}`)
	got := wiretest.Recv(t, ctx, done)
	require.NoError(t, got.err)
	assert.Equal(t, promptResult{StopReason: "cancelled"}, got.res)
}

// Handle serves the method with a typed function: params decoded, the
// result answered, params of the wrong type answered -32602 without a call.
func TestMethodHandle(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	typedPrompt.Handle(r, func(_ context.Context, p promptParams) (promptResult, error) {
		return promptResult{StopReason: "said " + p.Prompt[0].Text}, nil
	})
	_, p := routerPeer(t, r)
	p.Request("1", "session/prompt", `{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}`)
	p.ExpectResult(ctx, "1", `{"stopReason":"said hi"}`)
	p.Request("2", "session/prompt", `{"sessionId":7}`)
	p.ExpectError(ctx, "2", acprpc.CodeInvalidParams)
}

// A handler registered with Handle gets the request's own context, which
// the peer's $/cancel_request cancels.
func TestMethodHandleCancelPassesThrough(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	started := make(chan struct{})
	cause := make(chan error, 1)
	typedPrompt.Handle(r, func(ctx context.Context, _ promptParams) (promptResult, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return promptResult{}, ctx.Err()
	})
	_, p := routerPeer(t, r)
	p.Request("1", "session/prompt", `{"sessionId":"s1","prompt":[]}`)
	wiretest.Recv(t, ctx, started)
	p.Cancel("1")
	assert.ErrorIs(t, wiretest.Recv(t, ctx, cause), acprpc.ErrPeerCancelled)
	p.ExpectResult(ctx, "1", `{"stopReason":"cancelled"}`)
}

// A Notification's Notify sends its name and params, and its Handle serves
// them typed; a request of its name is answered -32601.
func TestNotificationNotifyAndHandle(t *testing.T) {
	ctx := wiretest.Context(t)
	r := acprpc.NewRouter()
	got := make(chan sessionRef, 1)
	typedUpdate.Handle(r, func(_ context.Context, n sessionRef) { got <- n })
	conn, p := routerPeer(t, r)

	require.NoError(t, typedUpdate.Notify(ctx, conn, sessionRef{SessionID: "s1"}))
	note := p.ExpectNotification(ctx, "session/update")
	assert.JSONEq(t, `{"sessionId":"s1"}`, string(note.Params))

	p.Notify("session/update", `{"sessionId":"s2"}`)
	assert.Equal(t, sessionRef{SessionID: "s2"}, wiretest.Recv(t, ctx, got))
	p.Request("1", "session/update", `{"sessionId":"s3"}`)
	p.ExpectError(ctx, "1", acprpc.CodeMethodNotFound)
}

// Notify on a closed connection says so, as Conn.Notify does.
func TestNotificationNotifyClosed(t *testing.T) {
	ctx := wiretest.Context(t)
	conn, _ := wiretest.Connect(t, wiretest.Transports[0], nil, nil)
	require.NoError(t, conn.Close())
	err := typedUpdate.Notify(ctx, conn, sessionRef{SessionID: "s1"})
	assert.True(t, errors.Is(err, acprpc.ErrConnClosed), "%v", err)
}
