package main

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// TestMain fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestCancel runs the client against the agent, built: the turn starts,
// is cancelled at its first message, and ends "cancelled".
func TestCancel(t *testing.T) {
	bin := agenttest.Build(t, "../agent")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, exec.Command(bin), 0))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "agent: 1", lines[0], "the turn's first message, which the client cancels at")
	assert.Equal(t, "stop reason: cancelled", lines[len(lines)-1])
	assert.Less(t, len(lines), 5, "the agent stops counting once cancelled: %q", out.String())
}

// The deadline form: the prompt's context passes its deadline mid-turn,
// the turn is cancelled with session/cancel, and the call returns the
// agent's stop reason, cancelled, well before the agent would have counted
// to a hundred.
func TestCancelByDeadline(t *testing.T) {
	bin := agenttest.Build(t, "../agent")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, exec.Command(bin), 300*time.Millisecond))
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	assert.Equal(t, "agent: 1", lines[0])
	assert.Equal(t, "stop reason: cancelled", lines[len(lines)-1])
	assert.Less(t, len(lines), 50, "the agent stops counting once the deadline passed: %q", out.String())
}
