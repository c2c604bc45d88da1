//go:build linux

package agents

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acpcheck's report, as much of its JSON as these tests read.
type acpcheckReport struct {
	Results []struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Why      string `json:"why"`
		Findings []struct {
			Detail string `json:"detail"`
			Lines  []int  `json:"lines"`
		} `json:"findings"`
	} `json:"results"`
	Wire []struct {
		Seq int    `json:"seq"`
		Dir string `json:"dir"`
		Raw string `json:"raw"`
	} `json:"wire"`
}

func (r acpcheckReport) statuses() map[string]string {
	out := map[string]string{}
	for _, res := range r.Results {
		out[res.ID] = res.Status
	}
	return out
}

// runAcpcheck builds cmd/acpcheck and runs it against the agent spec
// starts, with the fake model, and returns its exit status and report.
func runAcpcheck(t *testing.T, spec agentSpec) (int, acpcheckReport) {
	requireAgents(t)
	bin := buildAcpcheck(t)

	model := newModelServer(t)
	agent := spec.command(t, model.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{"run", "-json",
		"-prompt", "Say hello. " + quickMark, "-slow-prompt", "Count to a thousand. " + slowMark,
		"-cancel-wait", "10s", "--"}, agent.Args...)
	args[len(args)-len(agent.Args)] = agent.Path
	check := exec.CommandContext(ctx, bin, args...)
	check.Env, check.Dir = agent.Env, t.TempDir()
	var stdout, stderr bytes.Buffer
	check.Stdout, check.Stderr = &stdout, &stderr
	err := check.Run()
	var exit *exec.ExitError
	require.True(t, err == nil || errors.As(err, &exit), "acpcheck: %v\n%s", err, stderr.String())
	var rep acpcheckReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "%s\n%s", stdout.String(), stderr.String())
	for _, res := range rep.Results {
		t.Logf("%s: %s %s %v", res.ID, res.Status, res.Why, res.Findings)
	}
	return check.ProcessState.ExitCode(), rep
}

// expectStatuses checks every rule's status in rep: want names the rules
// that do not pass.
func expectStatuses(t *testing.T, rep acpcheckReport, want map[string]string) {
	t.Helper()
	// Neither speaks v2, nor makes requests of a client that offers no file
	// system and no terminal.
	for _, id := range []string{"own-requests-cancelled", "v2-prompt-answer", "v2-one-idle", "v2-cancel-idle", "v2-session-close"} {
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
// is a finding that cites each answer and its notification; it does not exit when its stdin closes, nor honour
// $/cancel_request (which v1 allows, so that is not brought about).
func TestAcpcheckCodex(t *testing.T) {
	code, rep := runAcpcheck(t, codexAgent)
	assert.Equal(t, 1, code)
	expectStatuses(t, rep, map[string]string{
		"notification-unanswered": "fail",
		"cancel-request":          "not-brought-about",
		"stdin-exit":              "fail",
		"no-leftover":             "not-brought-about",
	})
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
	code, rep := runAcpcheck(t, claudeAgent)
	assert.Equal(t, 1, code)
	expectStatuses(t, rep, map[string]string{
		"turn-after-cancel": "fail",
		"cancel-request":    "not-brought-about",
		"parse-error":       "fail",
		"stdin-exit":        "fail",
		"no-leftover":       "not-brought-about",
	})
}
