package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// agentBin is the agent, built once for every test.
var agentBin string

func TestMain(m *testing.M) { agenttest.Main(m, &agentBin) }

// wait bounds every wait on the agent, so a broken agent fails the test
// instead of hanging it.
const wait = 10 * time.Second

// msg is one line the agent wrote.
type msg struct {
	Raw    string          `json:"-"`
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (m msg) isResponseTo(id string) bool { return m.Method == "" && string(m.ID) == id }

func (m msg) param(name string) string {
	var p map[string]json.RawMessage
	_ = json.Unmarshal(m.Params, &p)
	return string(p[name])
}

// updateText is a session/update's message text.
func (m msg) updateText() string {
	var n acpv1.SessionNotification
	_ = json.Unmarshal(m.Params, &n)
	chunk, _ := n.Update.Value.(acpv1.AgentMessageChunk)
	text, _ := chunk.Content.Value.(acpv1.TextContent)
	return text.Text
}

// peer drives the agent subprocess over its stdin and stdout, line by line,
// the way a client does, so the tests see the exact wire.
type peer struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	log    *testLog // the agent's stderr
	lines  chan msg
	exited chan error
	seen   []msg // every line read so far, in order
}

func startAgent(t *testing.T, args ...string) *peer {
	t.Helper()
	cmd := exec.Command(agentBin, args...)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	log := &testLog{t: t}
	cmd.Stderr = log
	require.NoError(t, cmd.Start())
	p := &peer{t: t, cmd: cmd, stdin: stdin, log: log, lines: make(chan msg, 64), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			m := msg{Raw: sc.Text()}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m.Method = "(not JSON)"
			}
			p.lines <- m
		}
		// Wait only once stdout is drained: it closes the pipe.
		p.exited <- cmd.Wait()
		close(p.lines)
	}()
	t.Cleanup(func() {
		p.stdin.Close()
		timeout := time.After(wait)
		for {
			select {
			case _, ok := <-p.lines:
				if ok {
					continue
				}
			case <-timeout:
				_ = cmd.Process.Kill()
				timeout = nil
				continue
			}
			return
		}
	})
	return p
}

// testLog sends the agent's stderr to the test log, and keeps it.
type testLog struct {
	t    *testing.T
	mu   sync.Mutex
	text strings.Builder
}

func (l *testLog) Write(b []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(b), "\n"))
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.Write(b)
}

// String is everything the agent has logged so far.
func (l *testLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.text.String()
}

func (p *peer) send(line string) {
	p.t.Helper()
	_, err := io.WriteString(p.stdin, line+"\n")
	require.NoError(p.t, err)
}

func (p *peer) sendf(format string, args ...any) { p.t.Helper(); p.send(fmt.Sprintf(format, args...)) }

// next returns the agent's next line.
func (p *peer) next() msg {
	p.t.Helper()
	select {
	case m, ok := <-p.lines:
		require.True(p.t, ok, "the agent closed its stdout")
		require.NotEqual(p.t, "(not JSON)", m.Method, "the agent wrote a line that is not JSON: %s", m.Raw)
		p.seen = append(p.seen, m)
		return m
	case <-time.After(wait):
		require.FailNow(p.t, "the agent said nothing", "after %v", wait)
		return msg{}
	}
}

// until reads lines up to the answer to id, and returns the lines before it
// and the answer.
func (p *peer) until(id string) (before []msg, answer msg) {
	p.t.Helper()
	for {
		m := p.next()
		if m.isResponseTo(id) {
			return before, m
		}
		before = append(before, m)
	}
}

// closeStdin ends the conversation: the agent must exit with status 0. It
// returns the lines the agent wrote after the last one read.
func (p *peer) closeStdin() []msg {
	p.t.Helper()
	require.NoError(p.t, p.stdin.Close())
	var rest []msg
	for {
		select {
		case m, ok := <-p.lines:
			if !ok {
				require.NoError(p.t, <-p.exited, "the agent must exit with status 0")
				return rest
			}
			p.seen = append(p.seen, m)
			rest = append(rest, m)
		case <-time.After(wait):
			require.FailNow(p.t, "the agent did not exit after its stdin closed")
		}
	}
}

// handshake runs initialize and session/new and returns the session ID.
func (p *peer) handshake() string {
	p.t.Helper()
	p.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false},"terminal":true}}}`)
	init := p.next()
	require.True(p.t, init.isResponseTo("1"), init.Raw)
	var res acpv1.InitializeResponse
	require.NoError(p.t, json.Unmarshal(init.Result, &res))
	assert.Equal(p.t, acpv1.ProtocolVersion(1), res.ProtocolVersion)
	assert.False(p.t, res.AgentCapabilities.LoadSession)

	p.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	sess := p.next()
	require.True(p.t, sess.isResponseTo("2"), sess.Raw)
	var s acpv1.NewSessionResponse
	require.NoError(p.t, json.Unmarshal(sess.Result, &s))
	require.True(p.t, strings.HasPrefix(string(s.SessionID), "sess_"), s.SessionID)
	return string(s.SessionID)
}

// prompt sends session/prompt with the given ID and reads the turn's start:
// the first update, then the two requests, in either order. It returns the
// IDs of the permission and terminal requests.
func (p *peer) prompt(id, sessionID, text string) (permID, termID string) {
	p.t.Helper()
	p.sendf(`{"jsonrpc":"2.0","id":%s,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, sessionID, text)
	first := p.next()
	require.Equal(p.t, acpv1.MethodSessionUpdate, first.Method, "the turn starts with an update: %s", first.Raw)
	assert.JSONEq(p.t, fmt.Sprintf("%q", sessionID), first.param("sessionId"))
	assert.Contains(p.t, first.param("update"), `"sessionUpdate":"agent_message_chunk"`)
	for permID == "" || termID == "" {
		m := p.next()
		require.NotNil(p.t, m.ID, "want a request: %s", m.Raw)
		assert.JSONEq(p.t, fmt.Sprintf("%q", sessionID), m.param("sessionId"))
		switch m.Method {
		case acpv1.MethodSessionRequestPermission:
			permID = string(m.ID)
			assert.Contains(p.t, m.param("toolCall"), `"toolCallId":"call_1"`)
			assert.Contains(p.t, m.param("options"), `"optionId":"allow","name":"Allow once","kind":"allow_once"`)
			assert.Contains(p.t, m.param("options"), `"optionId":"reject","name":"Reject","kind":"reject_once"`)
		case acpv1.MethodTerminalCreate:
			termID = string(m.ID)
			assert.Equal(p.t, `"sleep"`, m.param("command"))
			assert.JSONEq(p.t, `["30"]`, m.param("args"))
		default:
			require.FailNow(p.t, "unexpected line", m.Raw)
		}
	}
	require.NotEqual(p.t, permID, termID, "each request has its own ID")
	return permID, termID
}

// expectCancels reads the agent's $/cancel_request for each of ids, in any
// order, and nothing else.
func (p *peer) expectCancels(ids ...string) {
	p.t.Helper()
	var got []string
	for range ids {
		m := p.next()
		require.Equal(p.t, "$/cancel_request", m.Method, "want the agent's cancel: %s", m.Raw)
		require.Nil(p.t, m.ID, "a cancel is a notification")
		got = append(got, m.param("requestId"))
	}
	assert.ElementsMatch(p.t, ids, got, "one $/cancel_request per request, each with its own ID")
}

// answerCancelled answers the two requests the way a client does once they
// are cancelled: the permission with the cancelled outcome, the terminal
// with -32800.
func (p *peer) answerCancelled(permID, termID string) {
	p.sendf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32800,"message":"Request cancelled"}}`, termID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`, permID)
}

// expectCancelledTurn reads the end of a cancelled turn: updates, then the
// prompt's answer {"stopReason":"cancelled"}.
func (p *peer) expectCancelledTurn(promptID string) {
	p.t.Helper()
	before, answer := p.until(promptID)
	require.Nil(p.t, answer.Error, "a cancelled turn ends with a stop reason, never an error: %s", answer.Raw)
	assert.JSONEq(p.t, `{"stopReason":"cancelled"}`, string(answer.Result))
	require.NotEmpty(p.t, before, "the last update comes before the prompt's answer")
	for _, m := range before {
		assert.Equal(p.t, acpv1.MethodSessionUpdate, m.Method, m.Raw)
	}
	assert.Contains(p.t, before[len(before)-1].updateText(), "Stopped")
}

// assertAnsweredOnce checks that nothing the agent wrote answered id twice.
func (p *peer) assertAnsweredOnce(id string) {
	p.t.Helper()
	n := 0
	for _, m := range p.seen {
		if m.isResponseTo(id) {
			n++
		}
	}
	assert.Equal(p.t, 1, n, "request %s must be answered exactly once", id)
}

func TestCascadeBySessionCancel(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow: analyze file X")

	// The client cancels the turn; it has not answered either request.
	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	p.expectCancelledTurn("3")

	rest := p.closeStdin()
	assert.Empty(t, rest, "nothing after the turn's answer")
	p.assertAnsweredOnce("3")
}

func TestPromptCancelledByCancelRequest(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	// A string ID, which must come back byte for byte.
	permID, termID := p.prompt(`"prompt-1"`, sid, "slow please")

	p.send(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":"prompt-1"}}`)
	p.expectCancels(permID, termID)
	p.answerCancelled(permID, termID)
	p.expectCancelledTurn(`"prompt-1"`)

	assert.Empty(t, p.closeStdin())
	p.assertAnsweredOnce(`"prompt-1"`)
}

func TestEndTurn(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "hello")

	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, permID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"terminalId":"term_1"}}`, termID)
	before, answer := p.until("3")
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(answer.Result))
	require.Len(t, before, 1)
	assert.Equal(t, acpv1.MethodSessionUpdate, before[0].Method)
	assert.Contains(t, before[0].updateText(), "term_1")

	rest := p.closeStdin()
	for _, m := range rest {
		assert.NotEqual(t, "$/cancel_request", m.Method, "nothing was cancelled: %s", m.Raw)
	}
	p.assertAnsweredOnce("3")
}

func TestPermissionRejected(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow: but I will say no")

	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"terminalId":"term_1"}}`, termID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"reject"}}}`, permID)
	before, answer := p.until("3")
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(answer.Result))
	require.Len(t, before, 1)
	assert.Contains(t, before[0].updateText(), "Permission denied")
	p.closeStdin()
}

// A slow turn keeps working once both requests are answered, until it is
// cancelled; with nothing outstanding, no $/cancel_request goes out.
func TestSlowTurnWorksUntilCancelled(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow")

	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, permID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"terminalId":"term_1"}}`, termID)
	working := p.next()
	require.Equal(t, acpv1.MethodSessionUpdate, working.Method, working.Raw)
	assert.Contains(t, working.updateText(), "This will take a while")

	// The turn has not ended: the next line is what the cancel causes.
	p.sendf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid)
	p.expectCancelledTurn("3")
	for _, m := range p.closeStdin() {
		assert.NotEqual(t, "$/cancel_request", m.Method, m.Raw)
	}
	p.assertAnsweredOnce("3")
}

// A client that answers the permission request with the cancelled outcome
// ends the turn: the agent cancels its other request and reports cancelled.
func TestCancelledOutcomeEndsTurn(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	permID, termID := p.prompt("3", sid, "slow")

	p.sendf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`, permID)
	p.expectCancels(termID)
	p.sendf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32800,"message":"Request cancelled"}}`, termID)
	p.expectCancelledTurn("3")
	p.closeStdin()
}

// The client goes away mid-turn: the agent exits with status 0, promptly.
// Its turn ends with the connection; an answer that makes it into the last
// flush is still the stop reason, and still only one.
func TestEOFMidPrompt(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	p.prompt("3", sid, "slow")

	start := time.Now()
	rest := p.closeStdin()
	assert.Less(t, time.Since(start), 3*time.Second, "the agent exits promptly")
	answers := 0
	for _, m := range rest {
		if m.isResponseTo("3") {
			answers++
			assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(m.Result), m.Raw)
		}
	}
	assert.LessOrEqual(t, answers, 1)
}

func TestUnknownMethodAndSession(t *testing.T) {
	p := startAgent(t)
	sid := p.handshake()
	p.send(`{"jsonrpc":"2.0","id":7,"method":"session/load","params":{"sessionId":"x"}}`)
	m := p.next()
	require.True(t, m.isResponseTo("7"), m.Raw)
	require.NotNil(t, m.Error)
	assert.EqualValues(t, -32601, m.Error.Code)

	p.send(`{"jsonrpc":"2.0","id":8,"method":"session/prompt","params":{"sessionId":"nope","prompt":[]}}`)
	m = p.next()
	require.True(t, m.isResponseTo("8"), m.Raw)
	require.NotNil(t, m.Error)
	assert.EqualValues(t, -32602, m.Error.Code)

	// Sessions are numbered: a second one is new.
	p.send(`{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	m = p.next()
	require.True(t, m.isResponseTo("9"), m.Raw)
	assert.NotContains(t, string(m.Result), sid)
	p.closeStdin()
}
