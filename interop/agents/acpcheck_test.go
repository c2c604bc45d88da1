//go:build linux

package agents

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// acpcheck's report, as much of its JSON as these tests read.
type acpcheckReport struct {
	Ended   string `json:"ended"`
	Results []struct {
		ID       string            `json:"id"`
		Tier     string            `json:"tier"`
		Status   string            `json:"status"`
		Why      string            `json:"why"`
		Findings []acpcheckFinding `json:"findings"`
	} `json:"results"`
	Wire []struct {
		Seq int    `json:"seq"`
		Dir string `json:"dir"`
		Raw string `json:"raw"`
	} `json:"wire"`
}

// acpcheckFinding is one finding: what was wrong, and the wire lines
// (sequence numbers) that show it.
type acpcheckFinding struct {
	Detail string `json:"detail"`
	Lines  []int  `json:"lines"`
}

func (r acpcheckReport) statuses() map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		out[res.ID] = res.Status
	}
	return out
}

// runAcpcheck runs acpcheck against the agent spec starts, with the fake
// model, and returns its exit status and report, and the model's requests.
func runAcpcheck(t *testing.T, spec agentSpec) (int, acpcheckReport, []modelRequest) {
	requireAgents(t)
	model := newModelServer(t)
	agent := spec.command(t, model.URL())
	// A minute for an answer: Claude Code's CLI starts slowly on a loaded machine.
	code, out := acpcheckJSON(t, agent, "", "-timeout", "60s", "-prompt", "Say hello. "+quickMark, "-slow-prompt", "Count to a thousand. "+slowMark)
	keepForMatrix(t, spec, out)
	return code, parseReport(t, out), model.Requests()
}

// matrixDirEnv names a directory to keep each runAcpcheck report in, as
// "NAME VERSION.json", for `acpcheck matrix` (.ci/run draws the page).
const matrixDirEnv = "ACPCHECK_MATRIX_DIR"

// keepForMatrix writes the report to $ACPCHECK_MATRIX_DIR, if it is set.
func keepForMatrix(t *testing.T, spec agentSpec, report []byte) {
	dir := os.Getenv(matrixDirEnv)
	if dir == "" {
		return
	}
	version, ok := pinned[spec.pkg]
	require.True(t, ok, "%s's package %q is not pinned", spec.name, spec.pkg)
	require.NoError(t, os.WriteFile(filepath.Join(dir, spec.name+" "+version+".json"), report, 0o600))
}

// acpcheck runs cmd/acpcheck in dir (a scratch directory if "") with flags
// against the agent cmd describes (its path, arguments and environment),
// and returns its exit status and report.
func acpcheck(t *testing.T, agent *exec.Cmd, dir string, flags ...string) (int, acpcheckReport) {
	code, out := acpcheckJSON(t, agent, dir, flags...)
	return code, parseReport(t, out)
}

// acpcheckJSON is acpcheck, returning the report as acpcheck printed it.
func acpcheckJSON(t *testing.T, agent *exec.Cmd, dir string, flags ...string) (int, []byte) {
	bin := buildAcpcheck(t)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append(append([]string{"run", "-json", "-cwd", t.TempDir(), "-cancel-wait", "10s"}, flags...), "--", agent.Path)
	args = append(args, agent.Args[1:]...)
	check := exec.CommandContext(ctx, bin, args...)
	check.Env, check.Dir = agent.Env, cmp.Or(dir, t.TempDir())
	var stdout, stderr bytes.Buffer
	check.Stdout, check.Stderr = &stdout, &stderr
	err := check.Run()
	var exit *exec.ExitError
	require.True(t, err == nil || errors.As(err, &exit), "acpcheck: %v\n%s", err, stderr.String())
	require.True(t, json.Valid(stdout.Bytes()), "acpcheck printed no JSON report:\n%s\n%s", stdout.String(), stderr.String())
	expectOneJudge(t, bin, stdout.Bytes())
	return check.ProcessState.ExitCode(), stdout.Bytes()
}

// parseReport reads acpcheck's JSON report, logging each rule's outcome.
func parseReport(t *testing.T, out []byte) acpcheckReport {
	var rep acpcheckReport
	require.NoError(t, json.Unmarshal(out, &rep), "%s", out)
	for _, res := range rep.Results {
		t.Logf("%s: %s %s %v", res.ID, res.Status, res.Why, res.Findings)
	}
	return rep
}

// expectStatuses checks every rule's status in rep: want names the rules
// that do not pass.
func expectStatuses(t *testing.T, rep acpcheckReport, want map[string]string) {
	t.Helper()
	// Neither speaks v2, nor makes requests of a client that offers no file
	// system and no terminal.
	for _, id := range []string{"own-requests-cancelled", "v2-prompt-answer", "v2-one-idle", "v2-cancel-idle", "v2-own-requests-cancelled", "v2-session-close", "v2-entity-cancel"} {
		want[id] = "not-brought-about"
	}
	for id, status := range rep.statuses() {
		expected, ok := want[id]
		if !ok {
			expected = "pass"
		}
		assert.Equal(t, expected, status, id)
	}
}

// acpcheck against codex-acp: its known fault, the answer to the
// $/cancel_request notification (and to any notification it does not know),
// is a finding that cites each answer and its notification; it answers a
// line that is not JSON -32700 with no id member, where JSON-RPC requires
// "id": null; it does not exit when its stdin closes, nor honour
// $/cancel_request (which v1 allows, so that is not brought about).
func TestAcpcheckCodex(t *testing.T) {
	code, rep, _ := runAcpcheck(t, codexAgent)
	assert.Equal(t, 1, code)
	expectStatuses(t, rep, map[string]string{
		"notification-unanswered": "fail",
		"answer-envelope":         "fail", // those answers, and its -32700, have no id member
		"parse-error":             "fail", // its -32700 has no id member
		"cancel-request":          "not-brought-about",
		"stdin-exit":              "fail",
		"no-leftover":             "not-brought-about",
	})
	parse := rep.finding(t, "parse-error")
	require.Len(t, parse.Lines, 2)
	assert.Equal(t, "{this is not JSON", rep.Wire[parse.Lines[0]-1].Raw)
	assert.Contains(t, rep.Wire[parse.Lines[1]-1].Raw, `"code":-32700`)
	assert.NotContains(t, rep.Wire[parse.Lines[1]-1].Raw, `"id"`)
	for _, f := range rep.findings(t, "answer-envelope") {
		require.Len(t, f.Lines, 1)
		assert.NotContains(t, rep.Wire[f.Lines[0]-1].Raw, `"id"`, "an answer with no id member")
	}
	for _, res := range rep.Results {
		if res.ID != "notification-unanswered" {
			continue
		}
		require.NotEmpty(t, res.Findings)
		for _, f := range res.Findings {
			require.Len(t, f.Lines, 2)
			note := rep.Wire[f.Lines[0]-1]
			assert.Equal(t, "to_agent", note.Dir)
			assert.NotContains(t, note.Raw, `"id"`, "a notification") // a cancel, or an unknown notification
			assert.Contains(t, rep.Wire[f.Lines[1]-1].Raw, `"code":-32601`)
			assert.NotContains(t, rep.Wire[f.Lines[1]-1].Raw, `"id"`)
		}
	}
}

// acpcheck against claude-agent-acp: its known fault, the empty end_turn
// that answers the prompt after a cancelled turn, is a finding; it leaves a
// line that is not JSON unanswered and does not exit when its stdin closes.
func TestAcpcheckClaude(t *testing.T) {
	code, rep, _ := runAcpcheck(t, claudeAgent)
	assert.Equal(t, 0, code, "each rule it breaks is recorded only (a MAY, or what the pages leave open)")
	expectStatuses(t, rep, map[string]string{
		"turn-after-cancel": "fail",
		"cancel-request":    "not-brought-about",
		"parse-error":       "fail",
		"stdin-exit":        "fail",
		"no-leftover":       "not-brought-about",
	})
}

// interopDir holds the pinned TypeScript SDK, and the agent written on it.
var interopDir = filepath.Join(packagesDir, "..")

// acpcheck against an agent written on the TypeScript SDK 2.4.0 as its docs
// suggest (interop/src/docs-agent.ts): the example's turn returns when the
// client answers its permission request with the cancelled outcome, and the
// prompt is then answered end_turn, where a cancelled turn owes
// "cancelled". With -settle 5s the turn is cancelled while that request is
// open (it comes after three simulated model calls of a second each). Its
// prompt handler ignores its signal, so $/cancel_request is not honoured,
// which v1 allows.
func TestAcpcheckTypeScriptDocsAgent(t *testing.T) {
	node := interoptest.RequireNode(t, interopDir)
	agent := exec.Command(node, "--import", "tsx", filepath.Join(interopDir, "src", "docs-agent.ts"))
	agent.Env = scratchEnv(t)
	code, rep := acpcheck(t, agent, interopDir, "-settle", "5s")
	assert.Equal(t, 1, code)
	expectStatuses(t, rep, map[string]string{
		"cancel-stop-reason": "fail",
		"cancel-meta":        "fail", // the same end_turn, after a session/cancel carrying _meta
		"cancel-request":     "not-brought-about",
		"session-close":      "not-brought-about", // it does not advertise sessionCapabilities.close
	})
	meta := rep.finding(t, "cancel-meta")
	require.Len(t, meta.Lines, 3) // the prompt, the session/cancel with _meta, the answer
	assert.Contains(t, rep.Wire[meta.Lines[1]-1].Raw, `"_meta"`)
	assert.Contains(t, rep.Wire[meta.Lines[2]-1].Raw, `"stopReason":"end_turn"`)
	assertEndTurnAfterOutcome(t, rep)
}

// assertEndTurnAfterOutcome checks cancel-stop-reason's finding on the
// wire: a prompt, its session/cancel, and its end_turn answer, with the
// client's cancelled outcome for the permission request the turn waited on
// between the cancel and the answer.
func assertEndTurnAfterOutcome(t *testing.T, rep acpcheckReport) {
	t.Helper()
	f := rep.finding(t, "cancel-stop-reason")
	require.Len(t, f.Lines, 3) // the prompt, session/cancel, the answer
	cancel, answer := rep.Wire[f.Lines[1]-1], rep.Wire[f.Lines[2]-1]
	assert.Contains(t, cancel.Raw, `"session/cancel"`)
	assert.Contains(t, answer.Raw, `"stopReason":"end_turn"`)
	var outcomes []string
	for _, l := range rep.Wire[f.Lines[1]:f.Lines[2]] {
		if l.Dir == "to_agent" && strings.Contains(l.Raw, `"outcome":{"outcome":"cancelled"}`) {
			outcomes = append(outcomes, l.Raw)
		}
	}
	assert.Len(t, outcomes, 1, "the permission request answered cancelled before the prompt's end_turn")
}

// acpcheck against the example agent of github.com/coder/acp-go-sdk
// v0.13.5, built from the module proxy at that version: the SDK logs a line
// that is not JSON and reads on without answering it -32700. The example's
// Prompt ignores its context, which the SDK cancels on $/cancel_request, so
// that cancel is not honoured (v1 allows it). Its session/cancel handler
// cancels the turn's own context, which its pending permission request
// watches; when the client's cancelled outcome for that request reaches the
// turn first, the turn runs to its end and answers end_turn: a race inside
// the agent, which cancel-stop-reason catches in the runs where the outcome
// wins (the session/cancel that ends the turn which ignored
// $/cancel_request is the one it usually shows on).
func TestAcpcheckCoderExampleAgent(t *testing.T) {
	agent := exec.Command(buildCoderExample(t, "agent"))
	agent.Env = scratchEnv(t)
	code, rep := acpcheck(t, agent, "")
	want := map[string]string{
		"parse-error":    "fail",
		"cancel-request": "not-brought-about",
		"session-close":  "not-brought-about", // it does not advertise sessionCapabilities.close
	}
	if rep.statuses()["cancel-stop-reason"] == "fail" {
		want["cancel-stop-reason"] = "fail"
		assertEndTurnAfterOutcome(t, rep)
		assert.Equal(t, 1, code, "cancel-stop-reason is a MUST")
	} else {
		assert.Equal(t, 0, code, "parse-error is recorded only: a client MUST NOT write a line that is not JSON")
	}
	expectStatuses(t, rep, want)
	assertParseErrorUnanswered(t, rep)
}

// assertParseErrorUnanswered checks parse-error's finding on the wire: its
// line is the one that is not JSON, and nothing the agent sent after it is
// an answer without an ID (-32700 is answered with "id":null).
func assertParseErrorUnanswered(t *testing.T, rep acpcheckReport) {
	t.Helper()
	f := rep.finding(t, "parse-error")
	require.Len(t, f.Lines, 1)
	line := f.Lines[0]
	assert.Equal(t, "{this is not JSON", rep.Wire[line-1].Raw)
	for _, l := range rep.Wire[line:] {
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if l.Dir != "from_agent" || json.Unmarshal([]byte(l.Raw), &msg) != nil || msg.Method != "" {
			continue
		}
		assert.NotEqual(t, "null", cmp.Or(string(msg.ID), "null"), "nothing after the line that is not JSON answers it: %s", l.Raw)
	}
}

// buildCoderExample builds coder's example command (agent or client) at
// the version testdata/coderagent/go.mod pins (and go.sum verifies),
// outside the workspace, so that no other module's pin of the SDK moves.
func buildCoderExample(t *testing.T, command string) string {
	bin := filepath.Join(t.TempDir(), "coder-example-"+command)
	build := exec.Command("go", "build", "-o", bin, "github.com/coder/acp-go-sdk/example/"+command)
	build.Dir = filepath.Join("testdata", "coderagent")
	build.Env = append(os.Environ(), "GOWORK=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	return bin
}

// findings returns the findings of the rule, which must have one.
func (r acpcheckReport) findings(t *testing.T, id string) []acpcheckFinding {
	t.Helper()
	for _, res := range r.Results {
		if res.ID == id {
			require.NotEmpty(t, res.Findings, id)
			return res.Findings
		}
	}
	t.Fatalf("no rule %s in the report", id)
	return nil
}

// finding returns the first finding of the rule, which must have one.
func (r acpcheckReport) finding(t *testing.T, id string) acpcheckFinding {
	t.Helper()
	for _, res := range r.Results {
		if res.ID == id {
			require.NotEmpty(t, res.Findings, id)
			return res.Findings[0]
		}
	}
	t.Fatalf("no rule %s in the report", id)
	return acpcheckFinding{}
}
