package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// matrixReports writes two reports as acpcheck run -json prints them: one
// agent that fails cancel-stop-reason (citing wire lines 2 and 3) and one
// that passes it, and returns the matrix command's arguments for them.
func matrixReports(t *testing.T) []string {
	dir := t.TempDir()
	faulty := Report{
		Results: []Result{
			{Rule: ruleInitialize, Status: Pass},
			{Rule: ruleCancelStop, Status: Fail, Findings: []Finding{{Detail: "answered end_turn", Lines: []int{2, 3}, Protocol: 1}}},
			{Rule: ruleCancelRequest, Status: NotBrought, Why: "ignored"},
		},
		Wire: []Line{
			{Seq: 1, Dir: "to_agent", Raw: `{"jsonrpc":"2.0","id":1,"method":"session/prompt"}`},
			{Seq: 2, Dir: "to_agent", Raw: `{"jsonrpc":"2.0","method":"session/cancel"}`},
			{Seq: 3, Dir: "from_agent", Raw: `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`},
		},
	}
	good := Report{Results: []Result{
		{Rule: ruleInitialize, Status: Pass},
		{Rule: ruleCancelStop, Status: Pass},
		{Rule: ruleCancelRequest, Status: Pass},
	}}
	var args []string
	// In this order, the faulty agent first (its findings' anchors are f0).
	for _, c := range []struct {
		label string
		rep   Report
	}{{"faulty 1.0.0", faulty}, {"good 2.0.0", good}} {
		label, rep := c.label, c.rep
		b, err := json.Marshal(rep)
		require.NoError(t, err)
		file := filepath.Join(dir, label+".json")
		require.NoError(t, os.WriteFile(file, b, 0o600))
		args = append(args, label+"="+file)
	}
	return args
}

func TestMatrixCommand(t *testing.T) {
	out := filepath.Join(t.TempDir(), "matrix.html")
	var stdout, stderr bytes.Buffer
	code := mainCode(t.Context(), append([]string{"matrix", "-o", out, "-date", "2026-12-07"}, matrixReports(t)...), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	page, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(page), "Checked on 2026-12-07")
	assert.Contains(t, string(page), `<a href="#f0-cancel-stop-reason">failed</a>`)
	assert.Contains(t, string(page), `answered end_turn`)
}

func TestMatrixRefusesWhatIsNotAReport(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "x.json")
	require.NoError(t, os.WriteFile(notJSON, []byte("PASS initialize"), 0o600))
	empty := filepath.Join(dir, "empty.json")
	require.NoError(t, os.WriteFile(empty, []byte("{}"), 0o600))
	for _, args := range [][]string{
		{"matrix", "a=b.json"},                                   // no -o
		{"matrix", "-o", filepath.Join(dir, "m.html")},           // no report
		{"matrix", "-o", filepath.Join(dir, "m.html"), "x.json"}, // no label
		{"matrix", "-o", filepath.Join(dir, "m.html"), "a=" + notJSON},
		{"matrix", "-o", filepath.Join(dir, "m.html"), "a=" + empty},
		{"matrix", "-o", filepath.Join(dir, "m.html"), "a=" + filepath.Join(dir, "missing.json")},
	} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, mainCode(t.Context(), args, &stdout, &stderr), "%v", args)
		assert.Contains(t, stderr.String(), "acpcheck matrix: ", "%v", args)
	}
}
