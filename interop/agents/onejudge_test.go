//go:build linux

package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// conversationRules are acpcheck's rules of the whole conversation, which
// its monitor judges once for run, proxy and report alike (cmd/acpcheck's
// judge_rules.go).
var conversationRules = []string{"cancel-stop-reason", "cancel-request", "one-answer", "unknown-id", "notification-unanswered",
	"update-after-answer", "framing", "answer-envelope", "error-message", "id-echo"}

// judgedReport is as much of acpcheck's JSON report as the one-judge check
// reads: each rule's status and who its findings blame, and each
// connection's wire, line by line as acpcheck recorded it.
type judgedReport struct {
	Results []struct {
		ID       string          `json:"id"`
		Status   string          `json:"status"`
		Findings []judgedFinding `json:"findings"`
	} `json:"results"`
	Wire   []json.RawMessage `json:"wire"`
	WireV2 []json.RawMessage `json:"wire_v2"`
	// CancelsUnderWay are the lines of Wire whose session/cancel went to a
	// slow turn run saw under way.
	CancelsUnderWay []int `json:"cancels_under_way"`
}

// judgedFinding is who a finding blames: "agent" or "client".
type judgedFinding struct {
	Side string `json:"side"`
}

// expectOneJudge replays each connection of a run's report through
// `acpcheck report`, as a record the proxy would have written, and checks
// that each rule of the whole conversation gets run's verdict: failed if a
// replay blames the agent (run judges the agent alone: acpcheck, its client,
// breaks the client's rules on purpose), else passed if a replay checked it.
func expectOneJudge(t *testing.T, bin string, runReport []byte) {
	t.Helper()
	var run judgedReport
	require.NoError(t, json.Unmarshal(runReport, &run))
	var replays []judgedReport
	if len(run.Wire) > 0 {
		replays = append(replays, replayWire(t, bin, 1, run.Wire, run.CancelsUnderWay))
	}
	if len(run.WireV2) > 0 {
		replays = append(replays, replayWire(t, bin, 2, run.WireV2, nil))
	}
	for _, id := range conversationRules {
		assert.Equal(t, run.status(id), verdictOf(replays, id), "%s: run and its replay through acpcheck report disagree", id)
	}
}

// replayWire writes wire as a record, ended as run ends a conversation
// (with the lines of its cancels of turns under way), and returns acpcheck
// report's JSON report on it.
func replayWire(t *testing.T, bin string, proto int, wire []json.RawMessage, underWay []int) judgedReport {
	var rec bytes.Buffer
	for _, l := range wire {
		require.NoError(t, json.Compact(&rec, l))
		rec.WriteByte('\n')
	}
	end, err := json.Marshal(map[string]any{"end": "acpcheck run closed the agent's stdin", "cancels_under_way": underWay})
	require.NoError(t, err)
	rec.Write(append(end, '\n'))
	record := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.jsonl", proto))
	require.NoError(t, os.WriteFile(record, rec.Bytes(), 0o600))
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "report", "-json", record)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var exit *exec.ExitError
	if err := cmd.Run(); err != nil {
		require.True(t, errors.As(err, &exit) && exit.ExitCode() == 1, "acpcheck report: %v\n%s", err, stderr.String())
	}
	var rep judgedReport
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "%s", stdout.String())
	return rep
}

func (r judgedReport) status(id string) string {
	for _, res := range r.Results {
		if res.ID == id {
			return res.Status
		}
	}
	return ""
}

// verdictOf is the replays' verdict on a rule together, as run gives one
// over its two connections.
func verdictOf(replays []judgedReport, id string) string {
	out := "not-brought-about"
	for _, rep := range replays {
		for _, res := range rep.Results {
			switch {
			case res.ID != id:
			case res.Status == "fail" && slices.ContainsFunc(res.Findings, func(f judgedFinding) bool { return f.Side == "agent" }):
				return "fail"
			case res.Status != "not-brought-about":
				out = "pass"
			}
		}
	}
	return out
}
