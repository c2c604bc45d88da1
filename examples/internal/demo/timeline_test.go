package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// record feeds a conversation through a Recorder's hooks, as a client's
// connection calls them.
func record(t *testing.T, conv ...string) []Line {
	t.Helper()
	rec := NewRecorder()
	hooks := rec.Hooks()
	for _, c := range conv {
		dir, line, _ := strings.Cut(c, " ")
		m := &acprpc.Message{Raw: []byte(line), Size: len(line)}
		if dir == "C→A" {
			hooks.Sent(context.Background(), m)
		} else {
			hooks.Received(context.Background(), m)
		}
	}
	return rec.Lines()
}

// The Recorder keeps each message whole, in order, decoded, and its own copy
// of the bytes the hook only lends.
func TestRecorderKeepsMessages(t *testing.T) {
	rec := NewRecorder()
	hooks := rec.Hooks()
	raw := []byte(`{"jsonrpc":"2.0","method":"a"}`)
	hooks.Received(context.Background(), &acprpc.Message{Raw: raw})
	hooks.Sent(context.Background(), &acprpc.Message{Raw: []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)})
	hooks.Received(context.Background(), &acprpc.Message{Raw: []byte(`not json`)})
	copy(raw, "XXXX")
	lines := rec.Lines()
	require.Len(t, lines, 3)
	assert.Equal(t, `{"jsonrpc":"2.0","method":"a"}`, string(lines[0].Raw))
	assert.True(t, lines[0].Msg.IsNotification())
	assert.Equal(t, AgentToClient, lines[0].Dir)
	assert.True(t, lines[1].Msg.IsResponse())
	assert.Equal(t, ClientToAgent, lines[1].Dir)
	assert.Equal(t, `not json`, string(lines[2].Raw), "a bad message is still shown")
	assert.LessOrEqual(t, lines[0].At, lines[2].At)
}

func TestRenderFlagsBrokenConversations(t *testing.T) {
	lines := record(t,
		`C→A {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`A→C {"jsonrpc":"2.0","id":1,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_1"},"options":[]}}`,
		`C→A {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`A→C {"jsonrpc":"2.0","id":1,"error":{"code":-32800,"message":"Request cancelled"}}`,
		`A→C {"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"late"}}}}`,
	)
	require.Len(t, lines, 6)
	var out bytes.Buffer
	sum := Render(&out, lines, false)
	t.Log(out.String())
	assert.False(t, sum.OK)
	assert.Contains(t, out.String(), "#c1 session/prompt answered 2 times")
	assert.Contains(t, out.String(), "#a1 session/request_permission answered 0 times")
	assert.Contains(t, out.String(), "✗ every request the agent had pending was cancelled or answered as cancelled; not: #a1 (session/request_permission)")
	assert.Contains(t, out.String(), "✗ 0 session/update before the answer to #c1, 1 after")
	assert.Contains(t, out.String(), "✗ #c1 was answered with an error")
}

func TestRenderCleanCascade(t *testing.T) {
	// The specification's cascading flow, as the wire facts spell it.
	lines := record(t,
		`C→A {"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[{"type":"text","text":"hi"}]}}`,
		`A→C {"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"on it"}}}}`,
		`A→C {"jsonrpc":"2.0","id":2,"method":"terminal/create","params":{"sessionId":"s","command":"make"}}`,
		`A→C {"jsonrpc":"2.0","id":3,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{"toolCallId":"call_1"},"options":[]}}`,
		`C→A {"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`,
		`A→C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":2}}`,
		`A→C {"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":3}}`,
		`C→A {"jsonrpc":"2.0","id":2,"error":{"code":-32800,"message":"Request cancelled"}}`,
		`C→A {"jsonrpc":"2.0","id":3,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`A→C {"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`,
	)
	var out bytes.Buffer
	sum := Render(&out, lines, false)
	t.Log(out.String())
	assert.True(t, sum.OK)
	assert.Equal(t, StopCancelled, sum.StopReason)
	s := out.String()
	assert.NotContains(t, s, "✗")
	assert.Contains(t, s, "$/cancel_request #a2 (terminal/create)")
	assert.Contains(t, s, "$/cancel_request #a3 (session/request_permission)")
	assert.Contains(t, s, "✓ 1 session/update before the answer to #c1, 0 after")
	for _, h := range phases[1:] {
		assert.Contains(t, s, h)
	}
}
