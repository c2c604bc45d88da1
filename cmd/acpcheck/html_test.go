package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acpcheck run -html writes the page beside the text report, the failed
// rule's card and the conversation in it, and a page that cannot be
// written makes the run exit 2.
func TestRunWritesHTML(t *testing.T) {
	o := testOptions(t, faultCancelEndTurn)
	t.Setenv(agentEnv, strings.TrimPrefix(o.Env[0], agentEnv+"="))
	page := filepath.Join(t.TempDir(), "report.html")
	args := []string{"run", "-html", page, "-timeout", "10s", "-cancel-wait", "3s", "-settle", "100ms", "-slow-prompt", o.SlowPrompt, "--", os.Args[0]}
	var stdout, stderr bytes.Buffer
	require.Equal(t, 1, mainCode(context.Background(), args, &stdout, &stderr), stderr.String())
	assert.Contains(t, stdout.String(), "FAIL cancel-stop-reason")
	html, err := os.ReadFile(page)
	require.NoError(t, err)
	assert.Contains(t, string(html), `<div class="finding-card" data-rule="cancel-stop-reason">`)
	assert.Contains(t, string(html), `id="conversation-v1"`)

	args[2] = filepath.Join(t.TempDir(), "no", "such", "dir", "report.html")
	stderr.Reset()
	assert.Equal(t, 2, mainCode(context.Background(), args, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "cannot write the web page")
}
