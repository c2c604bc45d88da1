package acprpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// CancelSession answers the session's permission request at once, and
// leaves its terminal/create to the agent's $/cancel_request, as ACP's
// diagram orders them: cancel, cascade, confirmations, stop reason.
func TestCancelSessionLeavesOtherRequestsToTheCascade(t *testing.T) {
	wiretest.Run(t, func(t *testing.T, tr wiretest.Transport) {
		ctx := wiretest.Context(t)
		started := make(chan string, 2)
		block := func(ctx context.Context, req *acprpc.Request) (any, error) {
			started <- req.Method
			return wiretest.BlockUntilCancelled(ctx, req)
		}
		c, p := wiretest.Connect(t, tr, wiretest.Mux{"session/request_permission": block, "terminal/create": block},
			&acprpc.Options{CancelGrace: -1})
		p.Request("7", "session/request_permission", `{"sessionId":"s1","toolCall":{"toolCallId":"t"},"options":[]}`)
		p.Request("8", "terminal/create", `{"sessionId":"s1","command":"make"}`)
		wiretest.Recv(t, ctx, started)
		wiretest.Recv(t, ctx, started)

		require.NoError(t, c.CancelSession(ctx, "s1"))
		p.ExpectNotification(ctx, acprpc.MethodSessionCancel)
		p.ExpectResult(ctx, "7", `{"outcome":{"outcome":"cancelled"}}`)
		assert.Equal(t, 1, c.Stats().IncomingInFlight, "terminal/create waits for the agent's cancel")

		p.Cancel("8")
		p.ExpectError(ctx, "8", acprpc.CodeRequestCancelled)
		assert.Equal(t, 0, c.Stats().IncomingInFlight)
	})
}

// An agent that never cancels its terminal/create does not hold the client:
// after the grace period, CancelSession cancels it too.
func TestCancelSessionCancelsWhatTheAgentLeaves(t *testing.T) {
	ctx := wiretest.Context(t)
	started := make(chan struct{})
	block := func(ctx context.Context, req *acprpc.Request) (any, error) {
		close(started)
		return wiretest.BlockUntilCancelled(ctx, req)
	}
	c, p := wiretest.Connect(t, wiretest.Transports[0], wiretest.Mux{"terminal/create": block},
		&acprpc.Options{CancelGrace: 50 * time.Millisecond})
	p.Request("8", "terminal/create", `{"sessionId":"s1","command":"make"}`)
	wiretest.Recv(t, ctx, started)
	require.NoError(t, c.CancelSession(ctx, "s1"))
	p.ExpectNotification(ctx, acprpc.MethodSessionCancel)
	m := p.ExpectError(ctx, "8", acprpc.CodeRequestCancelled)
	assert.Contains(t, m.Raw, "Request cancelled")
}
