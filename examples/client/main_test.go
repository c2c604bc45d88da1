package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// agentBin is the agent, built once for every test.
var agentBin string

func TestMain(m *testing.M) { agenttest.Main(m, &agentBin) }

func client(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"-agent", agentBin}, args...), &stdout, &stderr)
	t.Log(stdout.String())
	require.Equal(t, 0, code, "exit status; stderr: %s", stderr.String())
	return stdout.String()
}

func TestCancelBySession(t *testing.T) {
	out := client(t, "-delay", "10ms")
	assert.Contains(t, out, "client: cancelling the turn: session/cancel\n")
	assert.Contains(t, out, "agent: Stopped (session/cancel).\n")
	assert.Contains(t, out, "stopReason: cancelled\n")
}

func TestCancelByRequest(t *testing.T) {
	out := client(t, "-delay", "10ms", "-cancel=request")
	assert.Contains(t, out, "client: cancelling the turn: $/cancel_request on the prompt\n")
	assert.Contains(t, out, "agent: Stopped ($/cancel_request on the prompt).\n")
	assert.Contains(t, out, "stopReason: cancelled\n")
}

func TestEndTurn(t *testing.T) {
	out := client(t, "-cancel=none", "-approve", "-terminal-startup", "1ms", "-prompt", "hello")
	assert.Contains(t, out, "allowed\n")
	assert.Contains(t, out, "Done.\n")
	assert.Contains(t, out, "stopReason: end_turn\n")
}

// The user allows the tool and the terminal starts, then the slow turn is
// cancelled while the agent works, with none of its requests outstanding.
func TestCancelWhileWorking(t *testing.T) {
	out := client(t, "-approve", "-terminal-startup", "1ms", "-delay", "200ms")
	assert.Contains(t, out, "This will take a while.\n")
	assert.Contains(t, out, "stopReason: cancelled\n")
}

func TestBadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-cancel=maybe"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-cancel must be")
}
