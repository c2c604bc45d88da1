package main

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// TestMain fails the tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHello runs the client against the agent, built: one prompt, one
// message back.
func TestHello(t *testing.T) {
	bin := agenttest.Build(t, "../agent")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	require.NoError(t, run(ctx, &out, exec.Command(bin)))
	assert.Equal(t, "You said: hello\n", out.String())
}
