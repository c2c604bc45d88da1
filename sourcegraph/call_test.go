package sourcegraph_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
	"github.com/acpkit/acprpc/sourcegraph"
)

// link joins an acprpc Conn serving h to a sourcegraph engine serving sg
// through a Layer.
func link(t *testing.T, h acprpc.Handler, sg jsonrpc2.Handler) (*acprpc.Conn, *jsonrpc2.Conn) {
	t.Helper()
	a, b := net.Pipe()
	ac := acprpc.NewConn(context.Background(), acprpc.NewStream(a), h, nil)
	sc := sourcegraph.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(b), sg, nil, quiet)
	t.Cleanup(func() {
		_ = sc.Close()
		<-sc.DisconnectNotify()
		_ = ac.Close()
	})
	return ac, sc
}

// An acprpc client cancels a prompt served on sourcegraph's engine, by its
// context (session/cancel for its session, as ACP prescribes), by its context
// with CancelRequestOnly ($/cancel_request), and by CancelSession: the
// handler's context ends with the matching cause, and the client gets the
// marker.
func TestAcprpcClientCancelsEngineHandler(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	h := mux{"session/prompt": func(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) {
		started <- struct{}{}
		untilCancelled(causes)(ctx, c, r)
	}}
	client, _ := link(t, nil, h)
	params := map[string]any{"sessionId": "s", "prompt": []any{}}

	byContext := func(opts ...acprpc.CallOption) func() error {
		return func() error {
			callCtx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			var res struct{ StopReason string }
			go func() { done <- client.Call(callCtx, "session/prompt", params, &res, opts...) }()
			wiretest.Recv(t, ctx, started)
			cancel()
			err := wiretest.Recv(t, ctx, done)
			assert.Equal(t, "cancelled", res.StopReason)
			return err
		}
	}
	bySession := func() error {
		done := make(chan error, 1)
		var res struct{ StopReason string }
		go func() { done <- client.Call(ctx, "session/prompt", params, &res) }()
		wiretest.Recv(t, ctx, started)
		require.NoError(t, acprpc.CancelSession(ctx, client, "s"))
		err := wiretest.Recv(t, ctx, done)
		assert.Equal(t, "cancelled", res.StopReason)
		return err
	}
	for _, tc := range []struct {
		name   string
		cancel func() error
		cause  error
	}{
		{"context", byContext(), acprpc.ErrSessionCancelled},
		{"context, $/cancel_request only", byContext(acprpc.CancelRequestOnly(), acprpc.WaitAfterCancel(time.Minute)), acprpc.ErrPeerCancelled},
		{"CancelSession", bySession, acprpc.ErrSessionCancelled},
	} {
		require.NoError(t, tc.cancel(), tc.name)
		assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), tc.cause, tc.name)
	}
}

// sourcegraph.Call cancels an acprpc handler when its context ends, and
// returns an error that says so; otherwise it is the engine's Call.
func TestCallCancelsAcprpcHandler(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{}, 1)
	causes := make(chan error, 1)
	agent := wiretest.Mux{
		"slow": func(ctx context.Context, _ *acprpc.Request) (any, error) {
			started <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		},
		"echo": wiretest.Echo,
		"fail": func(context.Context, *acprpc.Request) (any, error) { return nil, acprpc.NewError(-32000, "no") },
	}
	_, conn := link(t, agent, mux{})

	callCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sourcegraph.Call(callCtx, conn, "slow", map[string]int{}, nil) }()
	wiretest.Recv(t, ctx, started)
	cancel()
	err := wiretest.Recv(t, ctx, done)
	assert.ErrorIs(t, err, acprpc.ErrCancelled)
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorIs(t, wiretest.Recv(t, ctx, causes), acprpc.ErrPeerCancelled, "the peer got $/cancel_request")

	var echoed json.RawMessage
	require.NoError(t, sourcegraph.Call(ctx, conn, "echo", map[string]int{"n": 1}, &echoed))
	assert.JSONEq(t, `{"n":1}`, string(echoed))
	var rpcErr *jsonrpc2.Error
	require.True(t, errors.As(sourcegraph.Call(ctx, conn, "fail", nil, nil), &rpcErr))
	assert.Equal(t, int64(-32000), rpcErr.Code)
	assert.ErrorIs(t, sourcegraph.Call(callCtx, conn, "echo", nil, nil), acprpc.ErrCancelled, "an ended context sends nothing")
}
