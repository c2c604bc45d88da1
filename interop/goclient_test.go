package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
)

// agentReport is what src/agent.ts reports (the members the tests read).
type agentReport struct {
	SDK            string        `json:"sdk"`
	EndedBy        string        `json:"endedBy"`
	Sessions       []string      `json:"sessions"`
	Prompts        []agentPrompt `json:"prompts"`
	SessionCancels []struct {
		SessionID    string `json:"sessionId"`
		ActivePrompt bool   `json:"activePrompt"`
	} `json:"sessionCancels"`
	CancelRequestsReceived []struct {
		RequestID             json.RawMessage `json:"requestId"`
		MatchedPromptInFlight bool            `json:"matchedPromptInFlight"`
	} `json:"cancelRequestsReceived"`
	Wire wireLog `json:"wire"`
}

type agentPrompt struct {
	RequestID           json.RawMessage `json:"requestId"`
	SessionID           string          `json:"sessionId"`
	CancelledBy         *string         `json:"cancelledBy"`
	HandlerSignalReason *rpcError       `json:"handlerSignalReason"`
	Outgoing            []agentOutgoing `json:"outgoing"`
	LateUpdateSent      bool            `json:"lateUpdateSent"`
	Response            json.RawMessage `json:"response"`
}

// agentOutgoing is one request the TS agent sent the Go client.
type agentOutgoing struct {
	Method                string          `json:"method"`
	RequestID             json.RawMessage `json:"requestId"`
	CancelSignalAbortedAt *float64        `json:"cancelSignalAbortedAt"`
	Outcome               string          `json:"outcome"` // as the SDK settled it
	Result                json.RawMessage `json:"result"`
	Error                 *rpcError       `json:"error"`
	AnswerOnWire          *struct {
		Message json.RawMessage `json:"message"`
	} `json:"answerOnWire"`
	AnswersOnWireCount int `json:"answersOnWireCount"`
}

func (o agentOutgoing) wireAnswer() wireMsg {
	var m wireMsg
	if o.AnswerOnWire != nil {
		_ = json.Unmarshal(o.AnswerOnWire.Message, &m)
	}
	return m
}

// The Go client's side of the wire, as its Conn wrote and read it.
const (
	goToTS = "go→ts"
	tsToGo = "ts→go"
)

// wireTap records the lines that cross a pair of pipes, so a test can wait
// for one to go by and print them all when it fails.
type wireTap struct {
	mu      sync.Mutex
	lines   []tapLine
	partial map[string][]byte
	grown   chan struct{} // closed and replaced whenever a line is recorded
}

type tapLine struct {
	dir  string
	text string
}

func newWireTap() *wireTap {
	return &wireTap{partial: map[string][]byte{}, grown: make(chan struct{})}
}

func (w *wireTap) add(dir string, p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.partial[dir], p...)
	added := false
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		w.lines = append(w.lines, tapLine{dir, string(buf[:i])})
		buf = buf[i+1:]
		added = true
	}
	w.partial[dir] = append([]byte(nil), buf...)
	if added {
		close(w.grown)
		w.grown = make(chan struct{})
	}
}

// await waits until a line matching match has gone dir.
func (w *wireTap) await(ctx context.Context, dir string, match func(wireMsg) bool) error {
	for {
		w.mu.Lock()
		for _, l := range w.lines {
			var m wireMsg
			if l.dir == dir && json.Unmarshal([]byte(l.text), &m) == nil && match(m) {
				w.mu.Unlock()
				return nil
			}
		}
		grown := w.grown
		w.mu.Unlock()
		select {
		case <-grown:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (w *wireTap) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var b strings.Builder
	for _, l := range w.lines {
		b.WriteString("  " + l.dir + " " + l.text + "\n")
	}
	return b.String()
}

type tapReader struct {
	io.ReadCloser
	tap *wireTap
}

func (r tapReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.tap.add(tsToGo, p[:n])
	return n, err
}

type tapWriter struct {
	io.WriteCloser
	tap *wireTap
}

func (w tapWriter) Write(p []byte) (int, error) {
	n, err := w.WriteCloser.Write(p)
	w.tap.add(goToTS, p[:n])
	return n, err
}

// goClient is the Go ACP client's Handler: it records the agent's updates
// and serves session/request_permission and terminal/create, either at once
// or (block) by waiting for the request's context to end, recording why.
type goClient struct {
	block   bool
	arrived chan string // the method of each request, as it arrives

	mu      sync.Mutex
	updates []string
	started int           // requests that reached Handle
	ended   []handled     // and those that have returned
	changed chan struct{} // closed and replaced whenever one ends
}

// handled is how one of the agent's requests ended in the Go handler.
type handled struct {
	method string
	id     string
	cause  error // context.Cause once its context ended; nil if answered
}

func newGoClient(block bool) *goClient {
	return &goClient{block: block, arrived: make(chan string, 16), changed: make(chan struct{})}
}

func (g *goClient) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case "session/update":
		var p struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
				Content       struct {
					Text string `json:"text"`
				} `json:"content"`
			} `json:"update"`
		}
		if err := req.DecodeParams(&p); err != nil {
			return nil, err
		}
		g.mu.Lock()
		g.updates = append(g.updates, p.Update.SessionUpdate+": "+p.Update.Content.Text)
		g.mu.Unlock()
		return nil, nil
	case "session/request_permission", "terminal/create":
		g.mu.Lock()
		g.started++
		g.mu.Unlock()
		g.arrived <- req.Method
		if !g.block {
			g.record(handled{method: req.Method, id: req.ID.String()})
			if req.Method == "terminal/create" {
				return map[string]string{"terminalId": "term_go"}, nil
			}
			return json.RawMessage(`{"outcome":{"outcome":"selected","optionId":"allow"}}`), nil
		}
		<-ctx.Done()
		cause := context.Cause(ctx)
		g.record(handled{method: req.Method, id: req.ID.String(), cause: cause})
		return nil, cause // acprpc answers a cancelled request: marker or -32800
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

func (g *goClient) record(h handled) {
	g.mu.Lock()
	g.ended = append(g.ended, h)
	close(g.changed)
	g.changed = make(chan struct{})
	g.mu.Unlock()
}

// awaitEnded waits until every request that reached Handle has returned.
func (g *goClient) awaitEnded(ctx context.Context) error {
	for {
		g.mu.Lock()
		done, changed := len(g.ended) == g.started, g.changed
		g.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (g *goClient) handled() []handled {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]handled(nil), g.ended...)
}

func (g *goClient) updateCount() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.updates)
}

// tsAgent is src/agent.ts running as a subprocess, with a Go acprpc Conn on
// its stdin and stdout (or, for the sourcegraph tests, another engine: conn
// is then nil and closeConn closes that one).
type tsAgent struct {
	t          *testing.T
	conn       *acprpc.Conn
	closeConn  func() error
	client     *goClient
	tap        *wireTap
	cmd        *exec.Cmd
	exited     chan struct{} // closed once Wait has returned
	waitErr    error
	reportPath string
	stderr     syncBuffer // the agent's stderr and the Conn's log
	finished   bool
	report     *agentReport
	rawReport  []byte
}

// startTSAgent spawns agent.ts with flags and connects a Go Conn serving
// client to it. The test's cleanup stops and waits for the process and
// prints everything seen if the test failed.
func startTSAgent(t *testing.T, client *goClient, flags ...string) *tsAgent {
	t.Helper()
	a, stdout, stdin := spawnTSAgent(t, flags...)
	a.client = client
	log := slog.New(slog.NewTextHandler(&a.stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a.conn = acprpc.NewConn(context.Background(), acprpc.NewStreamPipes(stdout, stdin), client, &acprpc.Options{Logger: log})
	a.closeConn = a.conn.Close
	return a
}

// spawnTSAgent starts agent.ts with flags and returns its stdout and stdin,
// tapped; the caller connects to them and sets closeConn.
func spawnTSAgent(t *testing.T, flags ...string) (a *tsAgent, stdout io.ReadCloser, stdin io.WriteCloser) {
	t.Helper()
	node := requireNode(t)
	a = &tsAgent{t: t, tap: newWireTap(), exited: make(chan struct{}),
		reportPath: filepath.Join(t.TempDir(), "agent-report.json")}
	stdinR, stdinW, err := os.Pipe()
	require.NoError(t, err)
	stdoutR, stdoutW, err := os.Pipe()
	require.NoError(t, err)
	a.cmd = exec.Command(node, nodeScript("agent.ts", append([]string{"--report", a.reportPath}, flags...)...)...)
	a.cmd.Dir = interopDir
	a.cmd.Stdin, a.cmd.Stdout, a.cmd.Stderr = stdinR, stdoutW, &a.stderr
	a.cmd.WaitDelay = 5 * time.Second
	err = a.cmd.Start()
	stdinR.Close()
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		t.Fatalf("starting agent.ts: %v", err)
	}
	go func() {
		a.waitErr = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		a.stop()
		if t.Failed() {
			if a.rawReport == nil { // the test failed before reading it
				a.rawReport, _ = os.ReadFile(a.reportPath)
				a.report = &agentReport{}
				_ = json.Unmarshal(a.rawReport, a.report)
			}
			t.Logf("agent.ts %v: exit %v\nreport:\n  %s\nagent.ts wire (out = written by the TS agent):\n%s\nGo client wire:\n%s\nagent.ts stderr and the Go Conn's log:\n%s",
				flags, a.waitErr, withoutWire(a.rawReport), a.reportWire(), a.tap, a.stderr.String())
		}
	})
	return a, tapReader{stdoutR, a.tap}, tapWriter{stdinW, a.tap}
}

func (a *tsAgent) reportWire() wireLog {
	if a.report == nil {
		return nil
	}
	return a.report.Wire
}

// stop closes the Conn, so the agent reads the end of its input, writes its
// report and exits; it is killed if it does not exit in time. Either way
// the process is waited for.
func (a *tsAgent) stop() {
	if a.finished {
		return
	}
	a.finished = true
	_ = a.closeConn()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-a.exited:
	case <-t.C:
		a.t.Errorf("agent.ts did not exit after its stdin closed; killing it")
		_ = a.cmd.Process.Kill()
		<-a.exited
	}
}

// finish stops the agent and returns its report.
func (a *tsAgent) finish() *agentReport {
	a.t.Helper()
	a.stop()
	require.NoError(a.t, a.waitErr, "agent.ts exit status")
	a.rawReport, _ = os.ReadFile(a.reportPath)
	var r agentReport
	require.NoError(a.t, readReport(a.reportPath, &r), "agent.ts report")
	a.report = &r
	assert.Equal(a.t, "@agentclientprotocol/sdk@"+sdkVersion, r.SDK)
	assert.Equal(a.t, "stdin-closed", r.EndedBy)
	return &r
}

// handshake initializes the connection and opens a session.
func (a *tsAgent) handshake(ctx context.Context) string {
	a.t.Helper()
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	require.NoError(a.t, a.conn.Call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": true},
		"clientInfo":         map[string]string{"name": "acprpc-interop-go-client", "version": "0.0.0"},
	}, &init))
	require.Equal(a.t, 1, init.ProtocolVersion)
	var session struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(a.t, a.conn.Call(ctx, "session/new", map[string]any{"cwd": interopDir, "mcpServers": []any{}}, &session))
	require.NotEmpty(a.t, session.SessionID)
	return session.SessionID
}

// promptCall is a session/prompt in flight.
type promptCall struct {
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
	result  json.RawMessage
	updates int // updates the Go handler had seen when Call returned
}

func (a *tsAgent) prompt(ctx context.Context, sessionID, text string, opts ...acprpc.CallOption) *promptCall {
	pctx, cancel := context.WithCancel(ctx)
	p := &promptCall{cancel: cancel, done: make(chan struct{})}
	params := map[string]any{"sessionId": sessionID, "prompt": []any{map[string]string{"type": "text", "text": text}}}
	go func() {
		defer close(p.done)
		p.err = a.conn.Call(pctx, "session/prompt", params, &p.result, opts...)
		p.updates = a.client.updateCount()
	}()
	a.t.Cleanup(func() { // if the test did not wait for the call, Close ends it
		cancel()
		a.conn.Close()
		<-p.done
	})
	return p
}

func (p *promptCall) wait(t *testing.T, ctx context.Context) {
	t.Helper()
	select {
	case <-p.done:
	case <-ctx.Done():
		t.Fatalf("session/prompt did not return: %v", ctx.Err())
	}
}

// awaitRequests waits until the agent's permission and terminal requests have
// both reached the Go handler.
func (a *tsAgent) awaitRequests(ctx context.Context) {
	a.t.Helper()
	seen := map[string]bool{}
	for len(seen) < 2 {
		select {
		case m := <-a.client.arrived:
			seen[m] = true
		case <-ctx.Done():
			a.t.Fatalf("the agent's requests did not arrive (got %v): %v", seen, ctx.Err())
		}
	}
}

// awaitAnswers waits until the Go Conn has written its answer to every
// request the agent sent, so that closing the Conn drops none of them: each
// handler has returned (a cancelled one may return after the prompt's
// answer), and its answer is on the wire.
func (a *tsAgent) awaitAnswers(ctx context.Context) {
	a.t.Helper()
	require.NoError(a.t, a.client.awaitEnded(ctx), "the Go handlers did not all return")
	for _, h := range a.client.handled() {
		err := a.tap.await(ctx, goToTS, func(m wireMsg) bool { return m.isResponse() && string(m.ID) == h.id })
		require.NoError(a.t, err, "the Go client never answered %s %s", h.method, h.id)
	}
}

// updatesBeforeResponse counts the session/update notifications the agent
// wrote before its answer to the prompt.
func updatesBeforeResponse(r *agentReport, prompt agentPrompt) int {
	n := 0
	for _, e := range r.Wire {
		m := e.parsed()
		if e.Dir == "out" && m.isResponse() && string(m.ID) == string(prompt.RequestID) {
			return n
		}
		if e.Dir == "out" && m.Method == "session/update" {
			n++
		}
	}
	return -1 // no answer
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// assertOutgoing checks the TS agent's view of its requests to the Go
// client: exactly one answer on the wire for each, and that the Go handlers
// saw the same request IDs.
func assertOutgoing(t *testing.T, prompt agentPrompt, handled []handled) map[string]agentOutgoing {
	t.Helper()
	byMethod := map[string]agentOutgoing{}
	for _, o := range prompt.Outgoing {
		byMethod[o.Method] = o
		assert.Equal(t, 1, o.AnswersOnWireCount, "%s %s: answers from the Go client on the wire", o.Method, o.RequestID)
	}
	require.Contains(t, byMethod, "session/request_permission")
	require.Contains(t, byMethod, "terminal/create")
	require.Len(t, handled, 2, "the Go handlers ended")
	for _, h := range handled {
		assert.Equal(t, string(byMethod[h.method].RequestID), h.id, "%s: the ID the Go handler saw", h.method)
	}
	return byMethod
}

// A Go client prompts the TS agent and answers its requests at once: the
// turn ends with end_turn, every update handled before Call returned.
func TestGoClientPromptAnswered(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newGoClient(false)
	a := startTSAgent(t, client, "--terminal")
	sid := a.handshake(ctx)
	p := a.prompt(ctx, sid, "hello")
	p.wait(t, ctx)
	require.NoError(t, p.err)
	assert.JSONEq(t, `{"stopReason":"end_turn"}`, string(p.result))
	a.awaitAnswers(ctx)

	r := a.finish()
	require.Len(t, r.Prompts, 1)
	prompt := r.Prompts[0]
	assert.Nil(t, prompt.CancelledBy)
	out := assertOutgoing(t, prompt, client.handled())
	assert.JSONEq(t, `{"outcome":{"outcome":"selected","optionId":"allow"}}`, string(out["session/request_permission"].Result))
	assert.JSONEq(t, `{"terminalId":"term_go"}`, string(out["terminal/create"].Result))
	for _, h := range client.handled() {
		assert.NoError(t, h.cause)
	}
	assert.Equal(t, updatesBeforeResponse(r, prompt), p.updates, "updates handled when Call returned")
	assert.Empty(t, r.Wire.cancels("in"))
	assert.Empty(t, r.Wire.cancels("out"))
}

// The Go client cancels a slow turn with CancelSession while the agent's
// permission and terminal requests are pending: the permission handler ends
// at once with ErrSessionCancelled and is answered with the cancelled
// outcome; the terminal waits for the agent's cascade and ends with
// ErrPeerCancelled, answered -32800; each once; and the prompt returns the
// agent's stopReason cancelled after its updates.
func TestGoClientCancelSession(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newGoClient(true)
	a := startTSAgent(t, client, "--terminal", "--late-update")
	sid := a.handshake(ctx)
	p := a.prompt(ctx, sid, "please be slow")
	a.awaitRequests(ctx)
	require.NoError(t, acprpc.CancelSession(ctx, a.conn, sid))
	p.wait(t, ctx)
	require.NoError(t, p.err)
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(p.result))
	a.awaitAnswers(ctx)
	for _, h := range client.handled() {
		want := acprpc.ErrSessionCancelled
		if h.method != "session/request_permission" {
			want = acprpc.ErrPeerCancelled // left to the agent's $/cancel_request
		}
		assert.ErrorIs(t, h.cause, want, "%s %s: context.Cause", h.method, h.id)
	}

	r := a.finish()
	require.Len(t, r.Prompts, 1)
	prompt := r.Prompts[0]
	if assert.NotNil(t, prompt.CancelledBy) {
		assert.Equal(t, "session/cancel", *prompt.CancelledBy)
	}
	if assert.Len(t, r.SessionCancels, 1) {
		assert.Equal(t, sid, r.SessionCancels[0].SessionID)
		assert.True(t, r.SessionCancels[0].ActivePrompt)
	}
	out := assertOutgoing(t, prompt, client.handled())
	perm, term := out["session/request_permission"], out["terminal/create"]
	assert.Equal(t, `{"outcome":{"outcome":"cancelled"}}`, string(perm.wireAnswer().Result), "CancelSession answers a pending permission with the cancelled outcome")
	assert.Equal(t, "result", perm.Outcome)
	if e := term.wireAnswer().Error; assert.NotNil(t, e, "terminal/create answer") {
		assert.Equal(t, int64(-32800), e.Code)
		assert.Equal(t, "Request cancelled", e.Message)
	}
	assert.Empty(t, r.Wire.cancels("in"), "the Go client sent $/cancel_request; session/cancel was enough")
	assert.True(t, prompt.LateUpdateSent)
	assert.Equal(t, updatesBeforeResponse(r, prompt), p.updates, "updates, the late one included, handled when Call returned")
	assert.Equal(t, 2, p.updates)
}

// The Go client cancels a slow prompt by ending the Call's context, with
// $/cancel_request alone (CancelRequestOnly; without it the prompt's turn
// is cancelled with session/cancel, as TestGoClientCancelSession's is), and
// with WaitAfterCancel receives the TS agent's answer. The agent cascades: its
// cancellationSignal sends $/cancel_request for its own pending requests,
// which end the Go handlers with ErrPeerCancelled, and each is answered
// exactly once. With --stop-waiting the agent's SDK stops waiting at once
// and drops the Go client's answers, which still go out exactly once.
func TestGoClientCancelPromptCall(t *testing.T) {
	for _, stopWaiting := range []bool{false, true} {
		name := "graceful"
		flags := []string{"--terminal", "--late-update"}
		if stopWaiting {
			name = "stop-waiting"
			flags = append(flags, "--stop-waiting")
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := testContext(t)
			client := newGoClient(true)
			a := startTSAgent(t, client, flags...)
			sid := a.handshake(ctx)
			p := a.prompt(ctx, sid, "please be slow", acprpc.WaitAfterCancel(15*time.Second), acprpc.CancelRequestOnly())
			a.awaitRequests(ctx)
			p.cancel()
			p.wait(t, ctx)
			require.NoError(t, p.err, "with WaitAfterCancel a result answer is returned")
			assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(p.result))
			a.awaitAnswers(ctx)
			for _, h := range client.handled() {
				assert.ErrorIs(t, h.cause, acprpc.ErrPeerCancelled, "%s %s: context.Cause", h.method, h.id)
			}
			stats := a.conn.Stats()
			assert.Equal(t, uint64(1), stats.CancelsSent)
			assert.Equal(t, uint64(2), stats.CancelsReceived)

			r := a.finish()
			require.Len(t, r.Prompts, 1)
			prompt := r.Prompts[0]
			if assert.NotNil(t, prompt.CancelledBy) {
				assert.Equal(t, "$/cancel_request", *prompt.CancelledBy)
			}
			if assert.NotNil(t, prompt.HandlerSignalReason) {
				assert.Equal(t, int64(-32800), prompt.HandlerSignalReason.Code)
			}
			assert.Equal(t, []string{string(prompt.RequestID)}, r.Wire.cancels("in"), "the Go client's $/cancel_request names the prompt")
			if assert.Len(t, r.CancelRequestsReceived, 1) {
				assert.True(t, r.CancelRequestsReceived[0].MatchedPromptInFlight)
			}
			out := assertOutgoing(t, prompt, client.handled())
			perm, term := out["session/request_permission"], out["terminal/create"]
			got := r.Wire.cancels("out")
			assert.ElementsMatch(t, []string{string(perm.RequestID), string(term.RequestID)}, got,
				"the agent's $/cancel_request: one per request, each its own ID")
			for _, o := range []agentOutgoing{perm, term} {
				assert.NotNil(t, o.CancelSignalAbortedAt, "%s: the agent aborted its signal", o.Method)
			}
			assert.Equal(t, `{"outcome":{"outcome":"cancelled"}}`, string(perm.wireAnswer().Result))
			if e := term.wireAnswer().Error; assert.NotNil(t, e, "terminal/create answer") {
				assert.Equal(t, int64(-32800), e.Code)
			}
			if stopWaiting {
				for _, o := range []agentOutgoing{perm, term} {
					assert.Equal(t, "error", o.Outcome, "%s: the SDK stopped waiting", o.Method)
					if assert.NotNil(t, o.Error) {
						assert.Equal(t, int64(-32800), o.Error.Code)
					}
				}
			} else {
				assert.Equal(t, "result", perm.Outcome)
				assert.Equal(t, "error", term.Outcome)
			}
			assert.True(t, prompt.LateUpdateSent)
			assert.Equal(t, updatesBeforeResponse(r, prompt), p.updates, "updates, the late one included, handled when Call returned")
		})
	}
}

// Without WaitAfterCancel (and with CancelRequestOnly, so that
// TurnCancelWait does not apply), a cancelled Call returns at once with
// ErrCancelled and the agent's later answer is dropped; the agent's requests
// are still cancelled and answered exactly once.
func TestGoClientCancelPromptCallNoWait(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	client := newGoClient(true)
	a := startTSAgent(t, client, "--terminal")
	sid := a.handshake(ctx)
	p := a.prompt(ctx, sid, "please be slow", acprpc.CancelRequestOnly())
	a.awaitRequests(ctx)
	p.cancel()
	p.wait(t, ctx)
	assert.ErrorIs(t, p.err, acprpc.ErrCancelled)
	assert.ErrorIs(t, p.err, context.Canceled)
	var callErr *acprpc.CallError
	require.True(t, errors.As(p.err, &callErr))
	assert.Equal(t, "session/prompt", callErr.Method)
	assert.Nil(t, p.result)

	// The agent's answer still comes, and only once; Call has already returned.
	require.NoError(t, a.tap.await(ctx, tsToGo, func(m wireMsg) bool { return m.isResponse() && string(m.ID) == callErr.ID.String() }))
	a.awaitAnswers(ctx)
	for _, h := range client.handled() {
		assert.ErrorIs(t, h.cause, acprpc.ErrPeerCancelled, "%s %s: context.Cause", h.method, h.id)
	}
	r := a.finish()
	require.Len(t, r.Prompts, 1)
	prompt := r.Prompts[0]
	assert.Equal(t, callErr.ID.String(), string(prompt.RequestID))
	assert.Equal(t, []string{string(prompt.RequestID)}, r.Wire.cancels("in"))
	assert.Len(t, r.Wire.responses("out", string(prompt.RequestID)), 1)
	assertOutgoing(t, prompt, client.handled())
}
