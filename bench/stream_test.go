package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// Every stream agent streams a turn's chunks and tool calls in order, then
// answers end_turn.
func TestStreamAgentsStreamInOrderThenEndTurn(t *testing.T) {
	for _, name := range StreamPeers() {
		t.Run(name, func(t *testing.T) {
			c := startStreamAgent(t, name)
			spec := StreamSpec{N: 300, Tool: 50, Seed: 7}
			stop, got := c.turn(spec, -1)
			assert.Equal(t, StopEndTurn, stop)
			assert.Equal(t, spec.N, got, "chunks read")
			// Empty turns, answered at once, as acpbench's between two timed ones.
			for range 50 {
				stop, _ := c.turn(StreamSpec{}, -1)
				require.Equal(t, StopEndTurn, stop)
			}
		})
	}
}

// Every stream agent but the echo floor, which reads nothing while it
// streams, answers cancelled once the client sends session/cancel under a
// turn that would otherwise stream for minutes.
func TestStreamAgentsAnswerCancelledAfterSessionCancel(t *testing.T) {
	for _, name := range StreamPeers() {
		if name == "echo" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			c := startStreamAgent(t, name)
			spec := StreamSpec{N: 100_000_000, Seed: 3}
			stop, got := c.turn(spec, 20)
			assert.Equal(t, StopCancelled, stop)
			assert.Less(t, got, spec.N, "chunks read")
			// The session takes a new turn after the cancelled one.
			stop, _ = c.turn(StreamSpec{N: 10, Seed: 4}, -1)
			assert.Equal(t, StopEndTurn, stop)
		})
	}
}

// streamTestClient speaks to a stream agent over os.Pipe, as acpbench's
// raw-wire client does, but decodes every line as JSON.
type streamTestClient struct {
	t       *testing.T
	in      *os.File // the agent's input, which the client writes
	out     *os.File // the agent's output, which the client reads
	r       *bufio.Reader
	nextID  int
	session string
}

// startStreamAgent serves agent name on two pipes and opens a session. On
// cleanup it ends the agent's input and waits (at most liveness) for it to
// end, leaving no goroutine behind.
func startStreamAgent(t *testing.T, name string) *streamTestClient {
	serve, ok := LookupStream(name)
	require.True(t, ok, name)
	before := goleak.IgnoreCurrent()
	inR, inW, err := os.Pipe()
	require.NoError(t, err)
	outR, outW, err := os.Pipe()
	require.NoError(t, err)
	done := serve(inR, outW)
	c := &streamTestClient{t: t, in: inW, out: outR, r: bufio.NewReader(outR), nextID: 1}
	t.Cleanup(func() {
		require.NoError(t, inW.Close())
		select {
		case <-done:
		case <-time.After(liveness):
			t.Errorf("%s: the agent did not end within %v of its input's end", name, liveness)
		}
		for _, f := range []*os.File{inR, outR, outW} {
			_ = f.Close()
		}
		goleak.VerifyNone(t, before)
	})
	c.call(MethodInitialize, `{"protocolVersion":1,"clientCapabilities":{}}`)
	c.session = c.call(MethodSessionNew, `{"cwd":"/","mcpServers":[]}`).Result.SessionID
	require.NotEmpty(t, c.session, "session/new's sessionId")
	return c
}

// streamLine is any line a stream agent writes.
type streamLine struct {
	ID     *int   `json:"id"`
	Method string `json:"method"`
	Params struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string       `json:"sessionUpdate"`
			Content       ContentBlock `json:"content"`
			ToolCallID    string       `json:"toolCallId"`
			Status        string       `json:"status"`
		} `json:"update"`
	} `json:"params"`
	Result struct {
		StopReason string `json:"stopReason"`
		SessionID  string `json:"sessionId"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

func (c *streamTestClient) send(msg string) {
	_, err := c.in.WriteString(msg + "\n")
	require.NoError(c.t, err)
}

// next reads the agent's next line, waiting at most liveness.
func (c *streamTestClient) next() streamLine {
	require.NoError(c.t, c.out.SetReadDeadline(time.Now().Add(liveness)))
	line, err := c.r.ReadBytes('\n')
	require.NoError(c.t, err, "reading the agent's next line")
	var l streamLine
	require.NoError(c.t, json.Unmarshal(line, &l), "%s", line)
	require.Empty(c.t, l.Error, "%s", line)
	return l
}

// call writes a request and returns its answer; nothing else may come first.
func (c *streamTestClient) call(method, params string) streamLine {
	id := c.nextID
	c.nextID++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	l := c.next()
	require.NotNil(c.t, l.ID, "the answer to %s", method)
	require.Equal(c.t, id, *l.ID)
	return l
}

// turn prompts for spec's turn, writes session/cancel once cancelAt chunks
// have been read (never for a negative cancelAt), checks every update in
// order, and returns the answer's stop reason and the chunks read. The
// answer must come within liveness of the cancel.
func (c *streamTestClient) turn(spec StreamSpec, cancelAt int) (stopReason string, chunks int) {
	id := c.nextID
	c.nextID++
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`,
		id, c.session, spec.Text()))
	toolDue := false
	var cancelled time.Time
	for {
		if !cancelled.IsZero() {
			require.Less(c.t, time.Since(cancelled), liveness, "no answer %v after session/cancel (%d chunks read)", liveness, chunks)
		}
		l := c.next()
		if l.ID != nil {
			require.Equal(c.t, id, *l.ID, "an answer to no request in flight")
			return l.Result.StopReason, chunks
		}
		require.Equal(c.t, MethodUpdate, l.Method)
		require.Equal(c.t, c.session, l.Params.SessionID)
		u := l.Params.Update
		if toolDue {
			require.Equal(c.t, "tool_call_update", u.SessionUpdate, "after chunk %d", chunks-1)
			require.Equal(c.t, "call_1", u.ToolCallID)
			require.Equal(c.t, "in_progress", u.Status)
			toolDue = false
			continue
		}
		require.Equal(c.t, "agent_message_chunk", u.SessionUpdate)
		require.Equal(c.t, ContentBlock{Type: "text", Text: spec.Chunk(chunks)}, u.Content, "chunk %d", chunks)
		toolDue = spec.ToolAfter(chunks)
		chunks++
		if chunks == cancelAt {
			cancelled = time.Now()
			c.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + c.session + `"}}`)
		}
	}
}
