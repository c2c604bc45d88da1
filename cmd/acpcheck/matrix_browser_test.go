package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// drawnMatrix is what the matrix page shows, as the browser laid it out.
type drawnMatrix struct {
	Date  string
	Rules []string
	Rows  []struct {
		Agent string
		Cells []struct{ Status, Text, Background string }
	}
	Failures []struct {
		ID, Background string
		Lines          []string
	}
}

const describeMatrix = `(() => {
  const all = (root, sel) => Array.from(root.querySelectorAll(sel));
  return {
    Date: document.querySelector("#date").textContent,
    Rules: all(document, "thead th.rule").map(th => th.textContent),
    Rows: all(document, "tr.agent").map(tr => ({Agent: tr.querySelector("th").textContent,
      Cells: all(tr, "td.cell").map(td => ({Status: td.dataset.status, Text: td.textContent,
        Background: getComputedStyle(td).backgroundColor}))})),
    Failures: all(document, "section.failure").map(s => ({ID: s.id, Background: getComputedStyle(s).backgroundColor,
      Lines: all(s, "pre.line").filter(p => p.getBoundingClientRect().height > 0).map(p => p.textContent)})),
  };
})()`

// The matrix of two agents in Chromium: a row per agent, a column per
// rule, each cell's word and colour its status (the failed one red, the
// passed green, the one not brought about grey); the failed cell's
// finding shows the wire lines it cites, and the cell's link marks it.
func TestMatrixInBrowser(t *testing.T) {
	b := newBrowser(t)
	page := filepath.Join(t.TempDir(), "matrix.html")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, mainCode(t.Context(), append([]string{"matrix", "-o", page, "-date", "2026-12-07"}, matrixReports(t)...), &stdout, &stderr), stderr.String())
	b.open(page)

	read := func() drawnMatrix {
		d, err := chromedp.Run(b.ctx, chromedp.Evaluate[drawnMatrix](describeMatrix))
		require.NoError(t, err)
		return d
	}
	d := read()
	assert.Contains(t, d.Date, "2026-12-07")
	assert.Equal(t, []string{"initialize", "cancel-stop-reason", "cancel-request"}, d.Rules)
	require.Len(t, d.Rows, 2)
	byAgent := map[string][]string{}
	colours := map[string]string{}
	for _, r := range d.Rows {
		require.Len(t, r.Cells, 3, r.Agent)
		for _, c := range r.Cells {
			byAgent[r.Agent] = append(byAgent[r.Agent], c.Text)
			if prev, ok := colours[c.Status]; ok {
				assert.Equal(t, prev, c.Background, "one colour per status")
			}
			colours[c.Status] = c.Background
		}
	}
	assert.Equal(t, []string{"passed", "failed", "not brought about"}, byAgent["faulty 1.0.0"])
	assert.Equal(t, []string{"passed", "passed", "passed"}, byAgent["good 2.0.0"])
	assert.Equal(t, "rgb(247, 208, 208)", colours["fail"])
	assert.Equal(t, "rgb(216, 240, 216)", colours["pass"])
	assert.Equal(t, "rgb(238, 238, 238)", colours["not-brought-about"])

	require.Len(t, d.Failures, 1)
	f := d.Failures[0]
	assert.Equal(t, []string{
		`2 to_agent {"jsonrpc":"2.0","method":"session/cancel"}`,
		`3 from_agent {"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`,
	}, f.Lines)

	assert.Equal(t, "rgba(0, 0, 0, 0)", f.Background)
	_, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](`document.querySelector("td.fail a").click()`))
	require.NoError(t, err)
	after := read()
	assert.Equal(t, "rgb(255, 243, 196)", after.Failures[0].Background, "the failed cell's link marks its finding")
}

func TestMatrixPageIsSelfContained(t *testing.T) {
	page := filepath.Join(t.TempDir(), "matrix.html")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, mainCode(t.Context(), append([]string{"matrix", "-o", page}, matrixReports(t)...), &stdout, &stderr))
	b, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "<script src", "the page loads nothing")
	assert.NotContains(t, string(b), `<link rel="stylesheet"`, "the page loads nothing")
}
