package acprpc_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

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
		got := prompt(callCtx, c, "s", acprpc.WaitAfterCancel(time.Minute))
		m := p.ExpectRequest(ctx, "session/prompt")
		cancel()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
	})
	t.Run("shutdown", func(t *testing.T) {
		ctx := wiretest.Context(t)
		c, p := wiretest.Connect(t, wiretest.Transports[0], nil, &acprpc.Options{ReportCancelledTurns: true})
		got := prompt(ctx, c, "s", acprpc.WaitAfterCancel(time.Minute))
		m := p.ExpectRequest(ctx, "session/prompt")
		shut := make(chan error, 1)
		go func() { shut <- c.Shutdown(ctx) }()
		p.ExpectNotification(ctx, acprpc.MethodCancelRequest)
		p.Respond(string(m.ID), `{"stopReason":"end_turn"}`)
		assert.Equal(t, "cancelled", wiretest.Recv(t, ctx, got).StopReason)
		assert.NoError(t, wiretest.Recv(t, ctx, shut))
	})
}
