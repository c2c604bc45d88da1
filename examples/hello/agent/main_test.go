package main

import (
	"context"
	"encoding/json"
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

// TestPrompt drives the agent over a Pipe: the prompt's answer
// comes after its one message, which repeats the prompt.
func TestPrompt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	updates := make(chan json.RawMessage, 1)
	client := acprpc.HandlerFunc(func(_ context.Context, req *acprpc.Request) (any, error) {
		updates <- req.Params
		return nil, nil
	})
	a, c := acprpc.Pipe()
	agentConn := acprpc.NewConn(ctx, a, agent.Router(), nil)
	defer agentConn.Close()
	conn := acprpc.NewConn(ctx, c, client, nil)
	defer conn.Close()

	res, err := acprpc.CallFor[acpv1.PromptResponse](ctx, conn, acpv1.MethodSessionPrompt,
		json.RawMessage(`{"sessionId":"sess_1","prompt":[{"type":"text","text":"hi"},{"type":"text","text":" there"}]}`))
	require.NoError(t, err)
	assert.Equal(t, acpv1.StopReasonEndTurn, res.StopReason)
	require.Len(t, updates, 1, "the message is handled before the answer")
	assert.JSONEq(t, `{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"You said: hi there"}}}`,
		string(<-updates))
}
