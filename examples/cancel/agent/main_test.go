package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
)

// TestMain fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCountsUntilCancelled drives the agent over a Pipe: it counts, one
// message at a time, until the client's session/cancel, and answers the
// prompt "cancelled" after the messages it sent.
func TestCountsUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	counted := make(chan string, 100)
	client := acpv1.Client{SessionUpdate: func(_ context.Context, n acpv1.SessionNotification) {
		text, _ := acpv1.AgentTextOf(n.Update)
		counted <- text
	}}
	a, c := acprpc.Pipe()
	agentConn := acprpc.NewConn(ctx, a, agent.Router(), nil)
	defer agentConn.Close()
	conn := acprpc.NewConn(ctx, c, client.Router(), nil)
	defer conn.Close()

	turn := make(chan acpv1.PromptResponse, 1)
	go func() {
		res, err := acpv1.ToAgent.SessionPrompt.Call(ctx, conn, acpv1.TextPrompt("sess_1", "count"))
		assert.NoError(t, err)
		turn <- res
	}()
	for _, want := range []string{"1", "2"} {
		select {
		case got := <-counted:
			require.Equal(t, want, got)
		case <-ctx.Done():
			t.Fatal("the agent did not count")
		}
	}
	require.NoError(t, acprpc.CancelSession(ctx, conn, acpv1.SessionID("sess_1")))
	select {
	case res := <-turn:
		assert.Equal(t, acpv1.StopReasonCancelled, res.StopReason)
	case <-ctx.Done():
		t.Fatal("the cancelled turn was not answered")
	}
}
