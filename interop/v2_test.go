package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/agentproc"
)

// ACP v2 against the TypeScript SDK's experimental v2 API, both ways: the
// SDK's v2 client drives the Go example agent; an acprpc client drives the
// SDK's v2 agent and its v1+v2 protocol router. Every message is also
// checked against the SDK's own validators on the receiving side
// (src/schema-check.ts).

// schemaReport is what src/schema-check.ts found.
type schemaReport struct {
	Version       int               `json:"version"`
	Checked       int               `json:"checked"`
	Failures      []json.RawMessage `json:"failures"`
	OutsideSchema []string          `json:"outsideSchema"`
}

// assertSchemaClean checks that every message was valid, and that the only
// method outside v2's schema is terminal/create, which the demo's v2
// scenario sends on purpose.
func assertSchemaClean(t *testing.T, s *schemaReport, version int) {
	t.Helper()
	if !assert.NotNil(t, s, "no schema report") {
		return
	}
	assert.Equal(t, version, s.Version)
	assert.Positive(t, s.Checked)
	assert.Empty(t, s.Failures, "messages the SDK's validators reject")
	if version == 2 {
		for _, m := range s.OutsideSchema {
			assert.Equal(t, "terminal/create", m, "a method outside the v2 schema")
		}
	}
}

// ---------------------------------------------------------------- the SDK's v2 client, the Go agent

// v2ClientReport is what src/v2-client.ts reports (the members the tests read).
type v2ClientReport struct {
	SDK     string          `json:"sdk"`
	Checks  map[string]bool `json:"checks"`
	Pass    bool            `json:"pass"`
	Error   *rpcError       `json:"error"`
	Schema  *schemaReport   `json:"schema"`
	Prompts []struct {
		Label     string          `json:"label"`
		Outcome   string          `json:"outcome"`
		Result    json.RawMessage `json:"result"`
		Error     *rpcError       `json:"error"`
		RequestID json.RawMessage `json:"requestId"`
	} `json:"prompts"`
	Handlers []struct {
		Method       string          `json:"method"`
		RequestID    json.RawMessage `json:"requestId"`
		SignalReason *rpcError       `json:"signalReason"`
	} `json:"handlers"`
	Updates []struct {
		SessionUpdate string  `json:"sessionUpdate"`
		State         string  `json:"state"`
		StopReason    *string `json:"stopReason"`
	} `json:"updates"`
	AgentExit *struct {
		Code *int `json:"code"`
	} `json:"agentExit"`
	Wire wireLog `json:"wire"`
}

// runV2Client runs src/v2-client.ts's scenario against the Go example
// agent and checks what every scenario must show.
func runV2Client(t *testing.T, scenario string) *v2ClientReport {
	t.Helper()
	node := requireNode(t)
	reportPath := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, nodeScript("v2-client.ts",
		"--scenario", scenario, "--timeout", "15000", "--report", reportPath, "--", agentBin, "-v")...)
	cmd.Dir = interopDir
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	runErr := cmd.Run()
	raw, _ := os.ReadFile(reportPath)
	var r v2ClientReport
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("v2-client.ts --scenario %s: exit %v\nreport:\n  %s\nwire (in = read from the Go agent):\n%s\nstderr (v2-client.ts and the Go agent):\n%s",
				scenario, runErr, withoutWire(raw), r.Wire, stderr.String())
		}
	})
	require.NoError(t, runErr, "v2-client.ts must exit 0 whenever its scenario ran")
	require.NoError(t, readReport(reportPath, &r))
	assert.Equal(t, "@agentclientprotocol/sdk@"+sdkVersion, r.SDK)
	assert.Nil(t, r.Error)
	if assert.NotNil(t, r.AgentExit) && assert.NotNil(t, r.AgentExit.Code, "the agent was killed") {
		assert.Equal(t, 0, *r.AgentExit.Code, "the Go agent's exit status (a race report makes it 66)")
	}
	var failing []string
	for name, ok := range r.Checks {
		if !ok {
			failing = append(failing, name)
		}
	}
	sort.Strings(failing)
	assert.True(t, r.Pass, "v2-client.ts checks failed: %v", failing)
	assertSchemaClean(t, r.Schema, 2)
	checkTypes(t, 2, "v2-client.ts "+scenario, r.Wire)
	return &r
}

// idles returns the stop reasons of the idle state_updates the SDK's
// client saw.
func (r *v2ClientReport) idles() []string {
	var out []string
	for _, u := range r.Updates {
		if u.SessionUpdate == "state_update" && u.State == "idle" && u.StopReason != nil {
			out = append(out, *u.StopReason)
		}
	}
	return out
}

// A normal v2 turn: the prompt is answered with its messageId, the work
// ends with one idle state_update, end_turn; nothing is cancelled.
func TestV2TSClientNormal(t *testing.T) {
	t.Parallel()
	r := runV2Client(t, "normal")
	require.Len(t, r.Prompts, 1)
	assert.Equal(t, "resolved", r.Prompts[0].Outcome)
	assert.JSONEq(t, `{"messageId":"msg_1"}`, string(r.Prompts[0].Result))
	assert.Equal(t, []string{"end_turn"}, r.idles())
	assert.Empty(t, r.Wire.cancels("in"))
	assert.Empty(t, r.Wire.cancels("out"))
}

// session/cancel while the agent's permission and terminal requests are
// pending: the Go agent cancels each with its own $/cancel_request (the SDK
// handlers' signals fire), then ends its work with exactly one idle
// state_update, cancelled, after every other update.
func TestV2TSClientSessionCancel(t *testing.T) {
	t.Parallel()
	r := runV2Client(t, "session-cancel")
	require.Len(t, r.Handlers, 2)
	var want []string
	for _, h := range r.Handlers {
		want = append(want, string(h.RequestID))
		if assert.NotNil(t, h.SignalReason, "%s: its signal never fired", h.Method) {
			assert.Equal(t, int64(-32800), h.SignalReason.Code)
		}
	}
	got := r.Wire.cancels("in")
	sort.Strings(got)
	sort.Strings(want)
	assert.Equal(t, want, got, "one $/cancel_request per pending request, each by its own ID")
	assert.Equal(t, []string{"cancelled"}, r.idles())
	assert.Len(t, r.Wire.notifications("out", "session/cancel"), 1)
}

// A held prompt withdrawn with the SDK's cancellationSignal ($/cancel_request)
// is answered -32800, never inserted; another held one is answered -32800 by
// session/cancel, which ends the running work once.
func TestV2TSClientRequestCancel(t *testing.T) {
	t.Parallel()
	r := runV2Client(t, "request-cancel")
	require.Len(t, r.Prompts, 3)
	working, withdrawn := r.Prompts[0], r.Prompts[1]
	assert.Equal(t, "resolved", working.Outcome)
	assert.Equal(t, []string{string(withdrawn.RequestID)}, r.Wire.cancels("out"))
	for _, p := range []int{1, 2} {
		prompt := r.Prompts[p]
		assert.Equal(t, "rejected", prompt.Outcome, prompt.Label)
		if assert.NotNil(t, prompt.Error, prompt.Label) {
			assert.Equal(t, int64(-32800), prompt.Error.Code, prompt.Label)
		}
		assert.Len(t, r.Wire.responses("in", string(prompt.RequestID)), 1, "%s: answered exactly once", prompt.Label)
	}
	assert.Equal(t, []string{"cancelled"}, r.idles())
}

// ---------------------------------------------------------------- acprpc clients, the SDK's v2 agent and router

// v2GoClient is an acprpc client's handler for the TS agents: the agent's
// permission and terminal requests wait for their contexts, recording why
// they ended, and each session's idle state_update is reported.
type v2GoClient struct {
	arrived chan string // the method of each request, as it arrives
	idle    chan string // the stop reason of each idle state_update

	mu     sync.Mutex
	causes map[string]error // by method, once its context ended
}

func newV2GoClient() *v2GoClient {
	return &v2GoClient{arrived: make(chan string, 8), idle: make(chan string, 8), causes: map[string]error{}}
}

func (g *v2GoClient) Handle(ctx context.Context, req *acprpc.Request) (any, error) {
	switch req.Method {
	case "session/update":
		var p struct {
			Update struct {
				SessionUpdate, State, StopReason string
			}
		}
		if err := req.DecodeParams(&p); err == nil && p.Update.SessionUpdate == "state_update" && p.Update.State == "idle" {
			g.idle <- p.Update.StopReason
		}
		return nil, nil
	case "session/request_permission", "terminal/create":
		g.arrived <- req.Method
		<-ctx.Done()
		g.mu.Lock()
		g.causes[req.Method] = context.Cause(ctx)
		g.mu.Unlock()
		return nil, context.Cause(ctx) // the permission's marker, or -32800
	}
	if req.IsNotification() {
		return nil, nil
	}
	return nil, acprpc.MethodNotFound(req.Method)
}

func (g *v2GoClient) cause(method string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.causes[method]
}

// tsV2AgentReport is what src/v2-agent.ts reports (the members the tests read).
type tsV2AgentReport struct {
	SDK        string        `json:"sdk"`
	Negotiated int           `json:"negotiated"`
	EndedBy    string        `json:"endedBy"`
	Schema     *schemaReport `json:"schema"`
	Prompts    []struct {
		Version    int    `json:"version"`
		Outcome    string `json:"outcome"`
		StopReason string `json:"stopReason"`
		Outgoing   []struct {
			Method          string    `json:"method"`
			SignalAbortedAt *float64  `json:"signalAbortedAt"`
			Outcome         string    `json:"outcome"`
			Error           *rpcError `json:"error"`
		} `json:"outgoing"`
	} `json:"prompts"`
	SessionCancels []struct {
		WorkActive bool `json:"workActive"`
	} `json:"sessionCancels"`
	Wire wireLog `json:"wire"`
}

// startTSV2Agent starts src/v2-agent.ts (with flags) as a subprocess, with
// an acprpc Conn serving client on its pipes, and returns a function that
// closes it and returns its report.
func startTSV2Agent(t *testing.T, client acprpc.Handler, flags ...string) (*agentproc.Process, func() *tsV2AgentReport) {
	t.Helper()
	node := requireNode(t)
	reportPath := filepath.Join(t.TempDir(), "agent-report.json")
	cmd := exec.Command(node, nodeScript("v2-agent.ts", append([]string{"--report", reportPath}, flags...)...)...)
	cmd.Dir = interopDir
	var stderr syncBuffer
	// The agent writes its report once its stdin ends, and exits: it gets
	// ten seconds for that, not Close's one-second default
	// before SIGTERM, which a loaded machine can outlast.
	agent, err := agentproc.Start(context.Background(), cmd, client, &agentproc.Options{Stderr: &stderr, ExitTimeout: 10 * time.Second})
	require.NoError(t, err)
	var raw []byte
	var report tsV2AgentReport
	finished := false
	finish := func() *tsV2AgentReport {
		t.Helper()
		if !finished {
			finished = true
			require.NoError(t, agent.Close(), "v2-agent.ts exit")
			raw, _ = os.ReadFile(reportPath)
			require.NoError(t, readReport(reportPath, &report), "v2-agent.ts report")
			assert.Equal(t, "@agentclientprotocol/sdk@"+sdkVersion, report.SDK)
			assert.Equal(t, "stdin-closed", report.EndedBy)
		}
		return &report
	}
	t.Cleanup(func() {
		if !finished {
			finished = true
			_ = agent.Close()
			raw, _ = os.ReadFile(reportPath)
			_ = json.Unmarshal(raw, &report)
		}
		if t.Failed() {
			t.Logf("v2-agent.ts %v\nreport:\n  %s\nwire (out = written by the TS agent):\n%s\nstderr:\n%s",
				flags, withoutWire(raw), report.Wire, stderr.String())
		}
	})
	return agent, finish
}

// openSession initializes the connection in version v and opens a session.
func openSession(t *testing.T, ctx context.Context, c *acprpc.Conn, v int) string {
	t.Helper()
	params := map[string]any{"protocolVersion": v, "info": map[string]string{"name": "acprpc-interop-go-client", "version": "0.0.0"}, "capabilities": map[string]any{}}
	if v == 1 {
		params = map[string]any{
			"protocolVersion":    1,
			"clientCapabilities": map[string]any{"fs": map[string]bool{"readTextFile": false, "writeTextFile": false}, "terminal": true},
			"clientInfo":         map[string]string{"name": "acprpc-interop-go-client", "version": "0.0.0"},
		}
	}
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	require.NoError(t, c.Call(ctx, "initialize", params, &init))
	require.Equal(t, v, init.ProtocolVersion)
	assert.Equal(t, acprpc.ProtocolVersion(v), c.ProtocolVersion(), "the Conn learns the version from the answer")
	var session struct {
		SessionID string `json:"sessionId"`
	}
	require.NoError(t, c.Call(ctx, "session/new", map[string]any{"cwd": interopDir, "mcpServers": []any{}}, &session))
	require.NotEmpty(t, session.SessionID)
	return session.SessionID
}

func awaitBoth(t *testing.T, ctx context.Context, g *v2GoClient) {
	t.Helper()
	seen := map[string]bool{}
	for len(seen) < 2 {
		seen[recvOr(t, ctx, g.arrived, "the agent's requests")] = true
	}
}

func recvOr[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("waiting for %s: %v", what, ctx.Err())
		var zero T
		return zero
	}
}

// v2CancelledTurn runs a v2 turn on c and cancels it with CancelSession once
// the agent's two requests wait: the agent's $/cancel_request ends each
// (cause ErrPeerCancelled: v2's CancelSession answers nothing itself), and
// the work ends with one idle state_update, cancelled.
func v2CancelledTurn(t *testing.T, ctx context.Context, c *acprpc.Conn, g *v2GoClient) {
	t.Helper()
	sid := openSession(t, ctx, c, 2)
	var answer struct {
		MessageID string `json:"messageId"`
	}
	require.NoError(t, c.Call(ctx, "session/prompt", map[string]any{
		"sessionId": sid, "prompt": []any{map[string]string{"type": "text", "text": "slow: analyze file X"}},
	}, &answer), "a v2 prompt is answered once inserted")
	assert.NotEmpty(t, answer.MessageID)
	awaitBoth(t, ctx, g)
	require.NoError(t, acprpc.CancelSession(ctx, c, sid))
	assert.Equal(t, "cancelled", recvOr(t, ctx, g.idle, "the idle state_update"))
	for _, m := range []string{"session/request_permission", "terminal/create"} {
		assert.ErrorIs(t, g.cause(m), acprpc.ErrPeerCancelled, "%s ended by the agent's $/cancel_request", m)
	}
}

// An acprpc client cancels a turn of the SDK's v2 agent.
func TestV2GoClientCancelsTSAgent(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := newV2GoClient()
	agent, finish := startTSV2Agent(t, g)
	v2CancelledTurn(t, ctx, agent.Conn, g)
	r := finish()
	assert.Equal(t, 2, r.Negotiated)
	require.Len(t, r.Prompts, 1)
	assert.Equal(t, "cancelled", r.Prompts[0].StopReason)
	outcomes := map[string]string{}
	for _, o := range r.Prompts[0].Outgoing {
		assert.NotNil(t, o.SignalAbortedAt, "%s was cancelled", o.Method)
		outcomes[o.Method] = o.Outcome
		if o.Error != nil {
			assert.Equal(t, int64(-32800), o.Error.Code, o.Method)
		}
	}
	// The Go client's answers reached the SDK: the permission's cancelled
	// outcome (a result), and -32800 for the terminal.
	assert.Equal(t, map[string]string{"session/request_permission": "result", "terminal/create": "error"}, outcomes)
	assertSchemaClean(t, r.Schema, 2)
	assert.Len(t, r.Wire.notifications("out", "session/update"), idleAndUpdates(r), "no update after the idle")
}

// idleAndUpdates is how many updates came up to and including the first
// idle state_update: all of them, when none follows it.
func idleAndUpdates(r *tsV2AgentReport) int {
	n := 0
	for _, e := range r.Wire.notifications("out", "session/update") {
		n++
		var p struct {
			Update struct{ SessionUpdate, State string }
		}
		_ = json.Unmarshal(e.parsed().Params, &p)
		if p.Update.SessionUpdate == "state_update" && p.Update.State == "idle" {
			return n
		}
	}
	return -1
}

// The SDK's protocol router serves an acprpc v2 client with its v2 agent.
func TestV2GoClientCancelsTSRouterV2(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := newV2GoClient()
	agent, finish := startTSV2Agent(t, g, "--router")
	v2CancelledTurn(t, ctx, agent.Conn, g)
	r := finish()
	assert.Equal(t, 2, r.Negotiated, "the router picked v2")
	assertSchemaClean(t, r.Schema, 2)
}

// The SDK's protocol router serves an acprpc v1 client with its v1 agent:
// a v1 turn, cancelled by CancelSession, ends with stopReason cancelled.
func TestV1GoClientCancelsTSRouterV1(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := newV2GoClient()
	agent, finish := startTSV2Agent(t, g, "--router")
	sid := openSession(t, ctx, agent.Conn, 1)
	done := make(chan error, 1)
	var answer json.RawMessage
	go func() {
		done <- agent.Call(ctx, "session/prompt", map[string]any{
			"sessionId": sid, "prompt": []any{map[string]string{"type": "text", "text": "slow: analyze file X"}},
		}, &answer)
	}()
	awaitBoth(t, ctx, g)
	require.NoError(t, acprpc.CancelSession(ctx, agent.Conn, sid))
	require.NoError(t, recvOr(t, ctx, done, "the prompt's answer"))
	assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(answer))
	// v1's CancelSession answers the permission request at once; the
	// terminal is left to the agent's $/cancel_request.
	assert.ErrorIs(t, g.cause("session/request_permission"), acprpc.ErrSessionCancelled)
	assert.ErrorIs(t, g.cause("terminal/create"), acprpc.ErrPeerCancelled)
	assert.Empty(t, g.idle, "v1 has no state_update")
	r := finish()
	assert.Equal(t, 1, r.Negotiated, "the router picked v1")
	require.Len(t, r.Prompts, 1)
	assert.Equal(t, "cancelled", r.Prompts[0].StopReason)
	assertSchemaClean(t, r.Schema, 1)
}
