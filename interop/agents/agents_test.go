//go:build linux

package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/agentproc"
	"github.com/acpkit/acprpc/internal/acpmethods"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// agentSpec is how one real agent is started, and what it is known to do.
type agentSpec struct {
	name    string
	pkg     string // the npm package pinned, whose version names the agent's
	command func(t *testing.T, modelURL string) *exec.Cmd

	// requestCancelAnswered: the agent answers the $/cancel_request
	// notification, with an ID-less -32601 (codex-acp).
	requestCancelAnswered bool
	// emptyTurnAfterCancel: the prompt after a cancelled turn is answered
	// with an empty end_turn before its model call (claude-agent-acp).
	emptyTurnAfterCancel bool
	// invalidUpdates are the session/update notifications the agent sends
	// against the schema, by knownInvalid's names; the SDK refuses them.
	invalidUpdates []string
}

// codexAgent is @zed-industries/codex-acp, its Linux x64 binary run
// directly, with a CODEX_HOME that names the fake model as its provider.
var codexAgent = agentSpec{
	name: "codex-acp",
	pkg:  "@zed-industries/codex-acp",
	command: func(t *testing.T, modelURL string) *exec.Cmd {
		codexHome := filepath.Join(t.TempDir(), "codex-home")
		require.NoError(t, os.MkdirAll(codexHome, 0o700))
		config := `model = "fake-model"
model_provider = "fake"
approval_policy = "never"
sandbox_mode = "read-only"

[model_providers.fake]
name = "fake model server"
base_url = "` + modelURL + `/v1"
env_key = "FAKE_MODEL_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`
		require.NoError(t, os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(config), 0o600))
		cmd := exec.Command(filepath.Join(packagesDir, "node_modules", "@zed-industries", "codex-acp-linux-x64", "bin", "codex-acp"))
		cmd.Env = append(scratchEnv(t), "CODEX_HOME="+codexHome, "FAKE_MODEL_API_KEY=offline")
		return cmd
	},
	requestCancelAnswered: true,
}

// claudeAgent is @zed-industries/claude-agent-acp, run with node; it starts
// the Claude Code CLI, pointed at the fake model by ANTHROPIC_BASE_URL.
var claudeAgent = agentSpec{
	name: "claude-agent-acp",
	pkg:  "@zed-industries/claude-agent-acp",
	command: func(t *testing.T, modelURL string) *exec.Cmd {
		node := requireAgents(t)
		cmd := exec.Command(node, filepath.Join(packagesDir, "node_modules", "@zed-industries", "claude-agent-acp", "dist", "index.js"))
		cmd.Env = append(scratchEnv(t),
			"ANTHROPIC_BASE_URL="+modelURL,
			"ANTHROPIC_API_KEY=offline",
			"CLAUDE_CONFIG_DIR="+filepath.Join(t.TempDir(), "claude-config"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"CLAUDE_CODE_MAX_RETRIES=0",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			// The Claude Code CLI refuses to run as root unless IS_SANDBOX
			// is exactly 1.
			"IS_SANDBOX=1",
		)
		return cmd
	},
	emptyTurnAfterCancel: true,
	invalidUpdates:       []string{usageWithoutUsed},
}

// scratchEnv is an environment of the test's own: a scratch HOME and XDG
// directories, no proxy for loopback, and nothing else of this machine's
// but PATH.
func scratchEnv(t *testing.T) []string {
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TMPDIR=" + t.TempDir(),
		"NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost"}
	for _, xdg := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME"} {
		dir := filepath.Join(home, strings.ToLower(strings.TrimPrefix(xdg, "XDG_")))
		require.NoError(t, os.MkdirAll(dir, 0o700))
		env = append(env, xdg+"="+dir)
	}
	return env
}

func TestCodexAgent(t *testing.T)  { runAgent(t, codexAgent) }
func TestClaudeAgent(t *testing.T) { runAgent(t, claudeAgent) }

// client is this side of the connection: it records the agent's updates
// and every answer the agent sends that carries no ID.
type client struct {
	mu     sync.Mutex
	text   map[acpv1.SessionID]*strings.Builder // agent_message_chunk text, per session
	idless []*acprpc.Error
	// answeredIdless counts the answers this side sent with no ID: none,
	// even to the agent's ID-less answer.
	answeredIdless int
	changed        chan struct{}
}

func newClient() *client {
	return &client{text: map[acpv1.SessionID]*strings.Builder{}, changed: make(chan struct{})}
}

// handler serves what the agents send, in acpv1's types: it keeps the text
// of each agent_message_chunk, and refuses every permission request.
func (c *client) handler() acprpc.Handler {
	r := acprpc.NewRouter()
	r.Register(acpv1.MethodSessionUpdate, acprpc.NotificationHandler(func(_ context.Context, n acpv1.SessionNotification) {
		chunk, ok := n.Update.Value.(acpv1.AgentMessageChunk)
		if !ok {
			return
		}
		if text, ok := chunk.Content.Value.(acpv1.TextContent); ok {
			c.update(func() {
				if c.text[n.SessionID] == nil {
					c.text[n.SessionID] = &strings.Builder{}
				}
				c.text[n.SessionID].WriteString(text.Text)
			})
		}
	}))
	// Neither agent asks with these settings; refusing keeps the model's
	// turn from doing anything.
	r.Register(acpv1.MethodSessionRequestPermission, acprpc.RequestHandler(
		func(context.Context, acpv1.RequestPermissionRequest) (acpv1.RequestPermissionResponse, error) {
			return acpv1.RequestPermissionResponse{Outcome: acpv1.RequestPermissionOutcome{Value: acpv1.CancelledPermissionOutcome{}}}, nil
		}))
	return r
}

func (c *client) update(f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f()
	close(c.changed)
	c.changed = make(chan struct{})
}

// takeText returns and forgets the text the agent sent in a session.
func (c *client) takeText(session acpv1.SessionID) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.text[session]
	delete(c.text, session)
	if b == nil {
		return ""
	}
	return b.String()
}

// hooks records the answers that carry no ID: an answer to a notification,
// which JSON-RPC forbids.
func (c *client) hooks() acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(_ context.Context, m *acprpc.Message) {
			if m.Kind == acprpc.KindError && m.ID.IsZero() {
				c.update(func() { c.idless = append(c.idless, m.Error) })
			}
		},
		Sent: func(_ context.Context, m *acprpc.Message) {
			if (m.Kind == acprpc.KindError || m.Kind == acprpc.KindResult) && m.ID.IsZero() {
				c.update(func() { c.answeredIdless++ })
			}
		},
	}
}

func (c *client) idlessAnswers() []*acprpc.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*acprpc.Error(nil), c.idless...)
}

// awaitIdless waits for n ID-less answers.
func (c *client) awaitIdless(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		got, changed := len(c.idless), c.changed
		c.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func prompt(session acpv1.SessionID, text string) acpv1.PromptRequest {
	return acpv1.PromptRequest{SessionID: session, Prompt: []acpv1.ContentBlock{{Value: acpv1.TextContent{Text: text}}}}
}

// runAgent drives one real agent through a conversation: a turn to
// end_turn, a turn cancelled with session/cancel, a turn "cancelled" with
// $/cancel_request (which ACP v1 does not require an agent to honour), a
// prompt after those on the same session, then Close, and checks that no
// process of the agent is left.
func runAgent(t *testing.T, spec agentSpec) {
	requireAgents(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	model := newModelServer(t)
	cl := newClient()
	var wire interoptest.WireLog
	records := &wiretest.Recorder{}
	log := records.Logger()
	cmd := spec.command(t, model.URL())
	cmd.Dir = t.TempDir()
	agent, err := agentproc.Start(ctx, cmd, cl.handler(), &agentproc.Options{
		Conn:      &acprpc.Options{Hooks: wire.Hooks(cl.hooks()), Logger: log},
		StderrLog: log,
	})
	require.NoError(t, err)
	closed := false
	defer func() {
		if !closed {
			_ = agent.Close()
		}
		if t.Failed() {
			for _, r := range records.Logged() {
				t.Logf("%s stderr: %s", spec.name, r.Attrs["line"])
			}
		}
	}()

	init, err := acprpc.CallFor[acpv1.InitializeResponse](ctx, agent.Conn, acpv1.MethodInitialize,
		acpv1.InitializeRequest{ProtocolVersion: 1, ClientCapabilities: acpv1.ClientCapabilities{}})
	require.NoError(t, err)
	require.Equal(t, acpv1.ProtocolVersion(1), init.ProtocolVersion)
	sid := newSession(t, ctx, agent, cmd.Dir)

	// A turn to end_turn, the model's reply streamed as agent_message_chunks.
	turn, err := acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Say hello. "+quickMark))
	require.NoError(t, err)
	assert.Equal(t, acpv1.StopReasonEndTurn, turn.StopReason)
	assert.Contains(t, cl.takeText(sid), strings.TrimSpace(quickReply))

	// session/cancel mid-turn: "cancelled", and the model request aborted.
	res := slowTurn(ctx, agent, sid)
	require.NoError(t, model.Await(ctx, slowRequests(1, false)))
	cancelled := time.Now()
	require.NoError(t, acprpc.CancelSession(ctx, agent.Conn, sid))
	r := wiretest.Recv(t, ctx, res)
	require.NoError(t, r.err)
	assert.Equal(t, acpv1.StopReasonCancelled, r.StopReason, "session/cancel ends the turn with stopReason cancelled")
	t.Logf("%s: session/cancel to stopReason cancelled: %v", spec.name, time.Since(cancelled))
	require.NoError(t, model.Await(ctx, slowRequests(1, true)), "the cancelled turn's model request was closed by the agent")
	cl.takeText(sid)

	// A second prompt on the same session.
	before := len(model.Requests())
	turn, err = acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Say hello again. "+quickMark))
	require.NoError(t, err)
	assert.Equal(t, acpv1.StopReasonEndTurn, turn.StopReason)
	answeredWith := len(model.Requests()) - before
	if spec.emptyTurnAfterCancel {
		// Claude's bug: the answer comes before this prompt's model call,
		// with no text; the call is made afterwards, and its reply never
		// reaches the client.
		assert.Empty(t, cl.takeText(sid), "the prompt after a cancel is answered empty")
		assert.Zero(t, answeredWith, "answered before its model call")
		require.NoError(t, model.Await(ctx, func(rs []modelRequest) bool { return len(rs) > before && rs[len(rs)-1].Done }))
		turn, err = acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Once more. "+quickMark))
		require.NoError(t, err)
		t.Logf("%s: the prompt after that: %s, %q", spec.name, turn.StopReason, cl.takeText(sid))
	} else {
		assert.Contains(t, cl.takeText(sid), strings.TrimSpace(quickReply))
		assert.Positive(t, answeredWith, "the model was called for the prompt")
	}

	// $/cancel_request mid-turn, in a session of its own (CancelRequestOnly:
	// the context of a prompt otherwise cancels its turn with
	// session/cancel): the call stops waiting, and the agent, which ACP v1
	// does not oblige to honour it, goes on.
	sid2 := newSession(t, ctx, agent, cmd.Dir)
	callCtx, stopCall := context.WithCancel(ctx)
	res = slowTurn(callCtx, agent, sid2, acprpc.CancelRequestOnly())
	require.NoError(t, model.Await(ctx, slowRequests(2, false)))
	stopCall()
	require.ErrorIs(t, wiretest.Recv(t, ctx, res).err, acprpc.ErrCancelled)
	if spec.requestCancelAnswered {
		// codex-acp's bug: it answers the notification.
		require.NoError(t, cl.awaitIdless(ctx, 1), "the agent answers $/cancel_request")
		idless := cl.idlessAnswers()
		assert.Equal(t, int64(acprpc.CodeMethodNotFound), idless[0].Code, "an ID-less -32601 for the notification: %+v", idless[0])
	}
	assert.Equal(t, 1, countSlow(model.Requests(), true), "the model request outlives $/cancel_request")
	require.NoError(t, acprpc.CancelSession(ctx, agent.Conn, sid2))
	require.NoError(t, model.Await(ctx, slowRequests(2, true)), "session/cancel ends what $/cancel_request did not")
	if !spec.requestCancelAnswered {
		assert.Empty(t, cl.idlessAnswers())
	}

	cl.mu.Lock()
	assert.Zero(t, cl.answeredIdless, "nothing the agent sent was answered without an ID")
	cl.mu.Unlock()

	// Close, and no process of the agent's left.
	tree := interoptest.ProcessTree(agent.Pid())
	require.NotEmpty(t, tree)
	t.Logf("%s: %d processes before Close: %v", spec.name, len(tree), tree)
	start := time.Now()
	err = agent.Close()
	closed = true
	took := time.Since(start)
	t.Logf("%s: Close took %v: %v", spec.name, took, err)
	require.ErrorIs(t, err, agentproc.ErrTerminated, "the agent does not exit when its stdin closes, and does on SIGTERM")
	assert.Less(t, took, agentproc.DefaultExitTimeout+agentproc.DefaultTermTimeout)
	if spec.requestCancelAnswered {
		// The read loop logs the answer after the Received hook has seen it;
		// once Close has returned, the read loop is done.
		answered, logged := records.FindLogged(slog.LevelWarn, "acprpc: the peer answered a notification")
		assert.True(t, logged, "the ID-less answer is logged")
		assert.Equal(t, "$/cancel_request", answered.Attrs["method"], "the notification answered")
	}
	assert.Empty(t, interoptest.StillAlive(tree), "no process of the agent's is alive once Close has returned")
	assert.Empty(t, interoptest.GroupMembers(agent.Pid()), "nothing is left in the agent's process group")

	checkWire(t, spec, wire.Messages())
}

// checkWire puts every message of the conversation, both ways, through
// acpv1's types and the SDK's validators (interoptest.TypesRoundTrip): each
// must be valid to the SDK as it was on the wire, decode, and encode to
// what the SDK reads the same way. A message no type is listed for fails
// the test; so does one the SDK refuses, but for the agent's known bugs
// against the schema (knownInvalid), which the SDK must refuse, and which
// docs/interop.md lists.
func checkWire(t *testing.T, spec agentSpec, msgs []interoptest.GoldenMessage) {
	t.Helper()
	validator := interoptest.NewSchemaValidator(t, filepath.Join(packagesDir, ".."))
	var valid []interoptest.GoldenMessage
	invalid := map[string]int{}
	for _, m := range msgs {
		bug, params := knownInvalid(t, spec, m)
		if bug == "" {
			valid = append(valid, m)
			continue
		}
		_, err := validator.Check(1, true, "SessionNotification", params)
		assert.Error(t, err, "the SDK refuses the agent's %s: %s", bug, m.Msg)
		assert.Error(t, json.Unmarshal(params, new(acpv1.SessionNotification)), "acpv1 refuses it too: %s", m.Msg)
		invalid[bug]++
	}
	for _, bug := range spec.invalidUpdates {
		assert.Positive(t, invalid[bug], "the agent's known bug: %s", bug)
	}
	var untyped []string
	n := interoptest.TypesRoundTrip(t, validator, 1, spec.name, valid, func(method, member string) any {
		v := acpmethods.New(1, method, member)
		if v == nil {
			untyped = append(untyped, method+" "+member)
		}
		return v
	})
	assert.Empty(t, untyped, "messages with no generated type")
	assert.Equal(t, len(valid), n, "every message went through the generated types")
	updates := updateKinds(t, msgs)
	assert.Positive(t, updates["acpv1.AgentMessageChunk"], "the agent's replies were among them")
	t.Logf("%s: %d messages through acpv1 and the SDK's validators, and %v refused as known; session/update by variant: %v",
		spec.name, n, invalid, updates)
}

// usageWithoutUsed is claude-agent-acp's usage_update with "used": null,
// where the schema requires a number.
const usageWithoutUsed = "usage_update with used null"

// knownInvalid names the agent's known bug that the message m is, with the
// message's params, or returns "".
func knownInvalid(t *testing.T, spec agentSpec, m interoptest.GoldenMessage) (string, json.RawMessage) {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	require.NoError(t, json.Unmarshal(m.Msg, &n))
	if m.Dir != "in" || n.Method != acpv1.MethodSessionUpdate || !slices.Contains(spec.invalidUpdates, usageWithoutUsed) {
		return "", nil
	}
	var p struct {
		Update map[string]json.RawMessage `json:"update"`
	}
	require.NoError(t, json.Unmarshal(n.Params, &p))
	if string(p.Update["sessionUpdate"]) == `"usage_update"` && string(p.Update["used"]) == "null" {
		return usageWithoutUsed, n.Params
	}
	return "", nil
}

// updateKinds counts the session/update notifications of msgs by the Go
// type of their variant.
func updateKinds(t *testing.T, msgs []interoptest.GoldenMessage) map[string]int {
	kinds := map[string]int{}
	for _, m := range msgs {
		var n struct {
			Method string                    `json:"method"`
			Params acpv1.SessionNotification `json:"params"`
		}
		if m.Dir == "in" && json.Unmarshal(m.Msg, &n) == nil && n.Method == acpv1.MethodSessionUpdate {
			kinds[fmt.Sprintf("%T", n.Params.Update.Value)]++
		}
	}
	return kinds
}

// newSession opens a session in cwd.
func newSession(t *testing.T, ctx context.Context, agent *agentproc.Process, cwd string) acpv1.SessionID {
	t.Helper()
	session, err := acprpc.CallFor[acpv1.NewSessionResponse](ctx, agent.Conn, acpv1.MethodSessionNew,
		acpv1.NewSessionRequest{Cwd: cwd, MCPServers: []acpv1.MCPServer{}})
	require.NoError(t, err)
	require.NotEmpty(t, session.SessionID)
	return session.SessionID
}

type turnResult struct {
	acpv1.PromptResponse
	err error
}

// slowTurn prompts for a slow answer, and delivers the outcome.
func slowTurn(ctx context.Context, agent *agentproc.Process, sid acpv1.SessionID, opts ...acprpc.CallOption) chan turnResult {
	res := make(chan turnResult, 1)
	go func() {
		r, err := acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Talk for a long time. "+slowMark), opts...)
		res <- turnResult{r, err}
	}()
	return res
}

// slowRequests holds once the model has had n slow requests, or n that the
// agent closed before their end.
func slowRequests(n int, aborted bool) func([]modelRequest) bool {
	return func(rs []modelRequest) bool { return countSlow(rs, aborted) >= n }
}

// countSlow counts the model's slow requests, or those of them the agent
// closed before their end.
func countSlow(rs []modelRequest, aborted bool) int {
	n := 0
	for _, r := range rs {
		if r.Slow && (!aborted || r.Aborted) {
			n++
		}
	}
	return n
}

// packagesDir holds package.json and package-lock.json, which pin the
// agents, and node_modules once scripts/test.sh has installed them.
var packagesDir = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return wd
}()

// requireAgents returns the node binary once Node.js and the pinned agents
// are installed here; see interoptest.RequireNodeModules.
func requireAgents(t *testing.T) string {
	t.Helper()
	return interoptest.RequireNodeModules(t, packagesDir, pinned)
}

// pinned is the version of each package.json pins, which the tests check
// is the one installed.
var pinned = map[string]string{
	"@zed-industries/codex-acp":           "0.16.0",
	"@zed-industries/codex-acp-linux-x64": "0.16.0",
	"@zed-industries/claude-agent-acp":    "0.23.1",
	"pi-acp":                              "0.0.24",
	"@mariozechner/pi-coding-agent":       "0.73.1",
	"opencode-ai":                         "1.18.33",
	"opencode-linux-x64":                  "1.18.33",
	"@google/gemini-cli":                  "0.61.0",
	"acpx":                                "0.1.15",
}
