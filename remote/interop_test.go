package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// The interoperability tests run the official TypeScript SDK's experimental
// remote transports against acprpc's, both ways: the SDK's ws-client and
// http-client drive the demo agent (examples/agent -listen), and an acprpc
// client drives an agent served by the SDK's experimental server. The
// scripts are ../interop/src/remote-client.ts and remote-agent.ts, run with
// Node.js after `npm ci` in ../interop, which `bash scripts/test.sh` runs
// itself. A missing Node.js or SDK fails these tests (see
// interoptest.RequireNode).

// interopTimeout bounds one script's run.
const interopTimeout = time.Minute

var (
	agentOnce sync.Once
	agentBin  string
	agentErr  error
)

// interopDir is where the TypeScript scripts and their packages are.
func interopDir() string { return filepath.Join("..", "interop") }

// requireNode returns the node binary once Node.js and the pinned packages
// are installed in ../interop; see interoptest.RequireNode.
func requireNode(t *testing.T) string {
	t.Helper()
	return interoptest.RequireNode(t, interopDir())
}

// demoAgent builds examples/agent once for the tests that serve it.
func demoAgent(t *testing.T) string {
	t.Helper()
	agentOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acprpc-remote-interop-")
		if err != nil {
			agentErr = err
			return
		}
		agentBin = filepath.Join(dir, "agent")
		cmd := exec.Command("go", "build", "-o", agentBin, "github.com/acpkit/acprpc/examples/agent")
		cmd.Dir = ".." // the workspace's root: go.work joins the examples' module
		if out, err := cmd.CombinedOutput(); err != nil {
			agentErr = fmt.Errorf("go build examples/agent: %v\n%s", err, out)
		}
	})
	require.NoError(t, agentErr)
	return agentBin
}

// listening is a process that serves ACP and printed its endpoint.
type listening struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	url    string // http://127.0.0.1:PORT/acp
	stderr *strings.Builder
}

// startListening starts a server process and reads the URL it prints first.
func startListening(t *testing.T, dir, name string, args ...string) *listening {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &lockedBuilder{b: &stderr}
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	l := &listening{cmd: cmd, stdin: stdin, stderr: &stderr}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("%s did not print its endpoint: %v; stderr:\n%s", name, err, stderr.String())
	}
	l.url = strings.TrimSpace(line)
	return l
}

// stop interrupts the process and checks that it exits with status 0.
func (l *listening) stop(t *testing.T) {
	t.Helper()
	_ = l.cmd.Process.Signal(os.Interrupt)
	_ = l.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- l.cmd.Wait() }()
	select {
	case err := <-done:
		assert.NoError(t, err, "the server exits with status 0; stderr:\n%s", l.stderr.String())
	case <-time.After(interopTimeout):
		_ = l.cmd.Process.Kill()
		<-done
		t.Errorf("the server did not exit; stderr:\n%s", l.stderr.String())
	}
}

func (l *listening) urlFor(kind string) string {
	if kind == "websocket" {
		return "ws" + strings.TrimPrefix(l.url, "http")
	}
	return l.url
}

type lockedBuilder struct {
	mu sync.Mutex
	b  *strings.Builder
}

func (w *lockedBuilder) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// remoteClientReport is what remote-client.ts reports.
type remoteClientReport struct {
	Transport string          `json:"transport"`
	Scenario  string          `json:"scenario"`
	Checks    map[string]bool `json:"checks"`
	Pass      bool            `json:"pass"`
	Error     json.RawMessage `json:"error"`
	Result    json.RawMessage `json:"result"`
}

func TestTypeScriptClientsDriveAnAcprpcAgent(t *testing.T) {
	node := requireNode(t)
	agent := startListening(t, ".", demoAgent(t), "-listen", "127.0.0.1:0")
	defer agent.stop(t)
	for _, kind := range kinds {
		for _, scenario := range []string{"session-cancel", "request-cancel"} {
			t.Run(kind+" "+scenario, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), interopTimeout)
				defer cancel()
				cmd := exec.CommandContext(ctx, node, "--import", "tsx", filepath.Join("src", "remote-client.ts"),
					"--url", agent.urlFor(kind), "--scenario", scenario)
				cmd.Dir = interopDir()
				var stderr strings.Builder
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				require.NoError(t, err, "remote-client.ts; stderr:\n%s", stderr.String())
				var r remoteClientReport
				require.NoError(t, json.Unmarshal(out, &r), "%s", out)
				assert.Equal(t, map[string]string{"websocket": "websocket", "http": "streamable-http"}[kind], r.Transport)
				for name, ok := range r.Checks {
					assert.True(t, ok, "check %s failed: %s", name, out)
				}
				assert.Len(t, r.Checks, 6)
				assert.True(t, r.Pass, "%s\nstderr:\n%s", out, stderr.String())
				assert.JSONEq(t, `{"stopReason":"cancelled"}`, string(r.Result))
			})
		}
	}
}

func TestAcprpcClientDrivesTheTypeScriptServer(t *testing.T) {
	node := requireNode(t)
	agent := startListening(t, interopDir(), node, "--import", "tsx", filepath.Join("src", "remote-agent.ts"))
	defer agent.stop(t)
	for _, kind := range kinds {
		for _, how := range []string{"session/cancel", "$/cancel_request"} {
			t.Run(kind+" "+how, func(t *testing.T) {
				driveTypeScriptAgent(t, agent.urlFor(kind), how)
			})
		}
	}
}

// driveTypeScriptAgent runs one prompt turn against the TypeScript agent at
// url and cancels it by how, once the agent's two nested requests have
// arrived: the turn must end "cancelled", each nested request cancelled by
// the agent's own $/cancel_request, every request answered exactly once.
func driveTypeScriptAgent(t *testing.T, url, how string) {
	ledger := &wiretest.Ledger{}
	arrived := make(chan string, 2)
	causes := make(chan error, 2)
	held := func(ctx context.Context, req *acprpc.Request) (any, error) {
		arrived <- req.Method
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, context.Cause(ctx) // the permission request's marker, or -32800
	}
	ctx := wiretest.Context(t)
	tr, err := Dial(ctx, url, nil)
	require.NoError(t, err)
	client := acprpc.NewConn(context.Background(), tr, wiretest.Mux{
		"session/request_permission": held,
		"terminal/create":            held,
	}, &acprpc.Options{Hooks: acprpc.Hooks{
		Sent:     func(_ context.Context, m *acprpc.Message) { ledger.Record(wiretest.AtoB, m.Raw) },
		Received: func(_ context.Context, m *acprpc.Message) { ledger.Record(wiretest.BtoA, m.Raw) },
	}})
	defer client.Close()

	var init, sess struct {
		ProtocolVersion int    `json:"protocolVersion"`
		SessionID       string `json:"sessionId"`
	}
	require.NoError(t, client.Call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{"terminal": true}}, &init))
	assert.Equal(t, 1, init.ProtocolVersion)
	require.NoError(t, client.Call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}}, &sess))
	require.NotEmpty(t, sess.SessionID)

	promptCtx, cancelPrompt := context.WithCancel(ctx)
	defer cancelPrompt()
	var result struct {
		StopReason string `json:"stopReason"`
	}
	turn := make(chan error, 1)
	opts := []acprpc.CallOption{acprpc.WaitAfterCancel(time.Minute)}
	if how == "$/cancel_request" {
		// The prompt's context otherwise cancels its turn with session/cancel.
		opts = append(opts, acprpc.CancelRequestOnly())
	}
	go func() {
		turn <- client.Call(promptCtx, "session/prompt", map[string]any{
			"sessionId": sess.SessionID,
			"prompt":    []map[string]string{{"type": "text", "text": "slow: analyze file X"}},
		}, &result, opts...)
	}()
	assert.ElementsMatch(t, []string{"session/request_permission", "terminal/create"}, []string{<-arrived, <-arrived})
	if how == "session/cancel" {
		require.NoError(t, acprpc.CancelSession(ctx, client, sess.SessionID))
	} else {
		cancelPrompt() // $/cancel_request for the prompt; the answer is awaited
	}
	require.NoError(t, <-turn, "the agent's answer, awaited after the cancel")
	assert.Equal(t, "cancelled", result.StopReason)
	for range 2 {
		cause := <-causes
		if !errors.Is(cause, acprpc.ErrSessionCancelled) { // CancelSession answers the permission request itself
			assert.ErrorIs(t, cause, acprpc.ErrPeerCancelled, "cancelled by the agent's $/cancel_request")
		}
	}
	require.NoError(t, ledger.AwaitAnswered(ctx))
	ledger.CheckExactlyOnce(t, wiretest.AtoB)
	ledger.CheckExactlyOnce(t, wiretest.BtoA)
	assert.Equal(t, 2, ledger.Tally(wiretest.BtoA).Requested, "the agent's two nested requests")
	if how == "session/cancel" {
		assert.Equal(t, 1, ledger.Notifications(wiretest.AtoB, "session/cancel"))
	} else {
		assert.Equal(t, 1, ledger.Tally(wiretest.AtoB).Cancelled, "the prompt, by its ID")
	}
	assert.GreaterOrEqual(t, ledger.Tally(wiretest.BtoA).Cancelled, 1, "the agent's cascade")
}
