package acprpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

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
			_, p := wiretest.Connect(t, wiretest.Transports[0], h, &acprpc.Options{WaitAfterCancel: wiretest.Timeout})
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
