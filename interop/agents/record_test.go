//go:build linux

package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/agentproc"
)

// codexRecording is the conversation TestAcpcheckRecordsCodex records,
// committed for cmd/acpcheck's replay test, which needs no agent:
// ACPRPC_UPDATE_RECORDING=1 writes it again.
var codexRecording = filepath.Join(packagesDir, "..", "..", "cmd", "acpcheck", "testdata", "codex-acp-0.16.0.jsonl")

// buildAcpcheck builds cmd/acpcheck from the workspace.
func buildAcpcheck(t *testing.T) string {
	t.Helper()
	return buildCommand(t, "github.com/acpkit/acprpc/cmd/acpcheck")
}

// buildCommand builds the command pkg names from the workspace, as a user
// builds it, and returns the binary's path.
func buildCommand(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// An editor's conversation with codex-acp through `acpcheck proxy
// -record`, read back by `acpcheck report`: a turn to its end, a turn
// cancelled with $/cancel_request (which codex answers, a notification
// though it is, and does not honour) and then with session/cancel, and a
// turn after it. The report finds the answer to the notification, citing
// the cancel and the answer, leaves cancel-request not brought about (the
// prompt was answered only after session/cancel), and passes the proxy's
// other rules.
func TestAcpcheckRecordsCodex(t *testing.T) {
	requireAgents(t)
	bin := buildAcpcheck(t)
	record := filepath.Join(t.TempDir(), "codex.jsonl")
	recordCodexConversation(t, bin, record)

	rep := acpcheckReplay(t, bin, record)
	expectReplayOfCodex(t, rep)
	raw, err := os.ReadFile(record)
	require.NoError(t, err)
	if os.Getenv("ACPRPC_UPDATE_RECORDING") == "1" {
		require.NoError(t, os.WriteFile(codexRecording, raw, 0o644))
	}
	committed := acpcheckReplay(t, bin, codexRecording)
	assert.Equal(t, rep.statuses(), committed.statuses(), "the committed recording reads as a fresh one does; ACPRPC_UPDATE_RECORDING=1 records it again")
}

// recordCodexConversation has a conversation with codex-acp, through the
// proxy, which records it to record.
func recordCodexConversation(t *testing.T, bin, record string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	model := newModelServer(t)
	codex := codexAgent.command(t, model.URL())
	cmd := exec.Command(bin, append([]string{"proxy", "-record", record, "--", codex.Path}, codex.Args[1:]...)...)
	// The session's cwd is the root, so that the recording names no
	// directory of the machine it was made on.
	cmd.Env, cmd.Dir = codex.Env, "/"
	cl := newClient()
	cancelled := make(chan struct{}, 1) // a prompt answered stopReason cancelled
	hooks := cl.hooks()
	received := hooks.Received
	hooks.Received = func(ctx context.Context, m *acprpc.Message) {
		received(ctx, m)
		if m.Kind == acprpc.KindResult && strings.Contains(string(m.Raw), `"stopReason":"cancelled"`) {
			cancelled <- struct{}{}
		}
	}
	agent, err := agentproc.Start(ctx, cmd, cl.handler(), &agentproc.Options{Conn: &acprpc.Options{Hooks: hooks}})
	require.NoError(t, err)
	defer func() { _ = agent.Close() }()

	_, err = acprpc.CallFor[acpv1.InitializeResponse](ctx, agent.Conn, acpv1.MethodInitialize,
		acpv1.InitializeRequest{ProtocolVersion: 1, ClientInfo: &acpv1.Implementation{Name: "recorder", Version: "1"}})
	require.NoError(t, err)
	sid := newSession(t, ctx, agent, "/")
	turn, err := acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Say hello. "+quickMark))
	require.NoError(t, err)
	require.Equal(t, acpv1.StopReasonEndTurn, turn.StopReason)

	callCtx, stopCall := context.WithCancel(ctx)
	res := slowTurn(callCtx, agent, sid, acprpc.CancelRequestOnly())
	require.NoError(t, model.Await(ctx, slowRequests(1, false)))
	stopCall() // $/cancel_request, which codex answers and ignores
	require.ErrorIs(t, (<-res).err, acprpc.ErrCancelled)
	require.NoError(t, cl.awaitIdless(ctx, 1))
	require.NoError(t, acprpc.CancelSession(ctx, agent.Conn, sid))
	select {
	case <-cancelled:
	case <-ctx.Done():
		t.Fatal("the prompt was not answered cancelled after session/cancel")
	}
	turn, err = acprpc.CallFor[acpv1.PromptResponse](ctx, agent.Conn, acpv1.MethodSessionPrompt, prompt(sid, "Say hello again. "+quickMark))
	require.NoError(t, err)
	require.Equal(t, acpv1.StopReasonEndTurn, turn.StopReason)
	// codex does not exit when its stdin closes: Close ends the proxy with
	// SIGTERM, which ends codex and writes the rest of the record.
	require.ErrorIs(t, agent.Close(), agentproc.ErrTerminated)
}

// acpcheckReplay runs `acpcheck report -json` on a recording.
func acpcheckReplay(t *testing.T, bin, record string) acpcheckReport {
	t.Helper()
	var stdout, stderr bytes.Buffer
	check := exec.Command(bin, "report", "-json", record)
	check.Stdout, check.Stderr = &stdout, &stderr
	err := check.Run()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "acpcheck report finds the answer to a notification: %s", stderr.String())
	assert.Equal(t, 1, exit.ExitCode(), stderr.String())
	var rep acpcheckReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "%s", stdout.String())
	for _, res := range rep.Results {
		for _, f := range res.Findings {
			t.Logf("%s: %s", res.ID, f.Detail)
			for _, seq := range f.Lines {
				t.Logf("    #%d %s %.300s", seq, rep.Wire[seq-1].Dir, rep.Wire[seq-1].Raw)
			}
		}
	}
	return rep
}

// expectReplayOfCodex checks the replayed report of a conversation with
// codex: the two rules its answer to a notification breaks (it answers one,
// and the answer has no id member), with the lines that show it, the
// others passed but cancel-request (codex ignores $/cancel_request of a
// prompt, which v1 allows), and the client's rules not brought about, since
// codex asked nothing of the client that a cancel could reach.
func expectReplayOfCodex(t *testing.T, rep acpcheckReport) {
	t.Helper()
	assert.Equal(t, map[string]string{
		"answer-envelope":             "fail",
		"cancel-request":              "not-brought-about",
		"cancel-stop-reason":          "pass",
		"client-cancel-answered":      "not-brought-about",
		"client-permission-cancelled": "not-brought-about",
		"error-message":               "pass",
		"framing":                     "pass",
		"id-echo":                     "pass",
		"notification-unanswered":     "fail",
		"one-answer":                  "pass",
		"unknown-id":                  "pass",
		"update-after-answer":         "pass",
	}, rep.statuses())
	for _, res := range rep.Results {
		if res.ID != "notification-unanswered" {
			continue
		}
		require.Len(t, res.Findings, 1)
		f := res.Findings[0]
		require.Len(t, f.Lines, 2)
		note, answer := rep.Wire[f.Lines[0]-1], rep.Wire[f.Lines[1]-1]
		assert.Equal(t, "to_agent", note.Dir)
		assert.Contains(t, note.Raw, `"method":"$/cancel_request"`)
		assert.Equal(t, "from_agent", answer.Dir)
		assert.Contains(t, answer.Raw, `"code":-32601`)
		assert.NotContains(t, answer.Raw, `"id"`)
	}
}
