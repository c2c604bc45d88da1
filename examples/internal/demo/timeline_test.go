package demo

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// record feeds a conversation through a Recorder's taps, in chunks that cut
// lines in two, as pipes do.
func record(t *testing.T, conv ...string) []Line {
	t.Helper()
	rec := NewRecorder()
	toAgent := rec.Writer(ClientToAgent, nopCloser{io.Discard})
	for _, c := range conv {
		dir, line, _ := strings.Cut(c, " ")
		line += "\n"
		half := len(line) / 2
		for _, part := range []string{line[:half], line[half:]} {
			if dir == "C→A" {
				_, err := toAgent.Write([]byte(part))
				require.NoError(t, err)
			} else {
				_, err := io.Copy(io.Discard, rec.Reader(AgentToClient, io.NopCloser(strings.NewReader(part))))
				require.NoError(t, err)
			}
		}
	}
	return rec.Lines()
}

func TestRecorderSplitsLines(t *testing.T) {
	rec := NewRecorder()
	r := rec.Reader(AgentToClient, io.NopCloser(strings.NewReader("{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\r\n\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n{\"partial\"")))
	_, err := io.Copy(io.Discard, r)
	require.NoError(t, err)
	lines := rec.Lines()
	require.Len(t, lines, 2, "blank lines are skipped, an unfinished line waits")
	assert.Equal(t, `{"jsonrpc":"2.0","method":"a"}`, string(lines[0].Raw))
	assert.True(t, lines[0].Msg.IsNotification())
	assert.True(t, lines[1].Msg.IsResponse())
	assert.Equal(t, AgentToClient, lines[1].Dir)
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
