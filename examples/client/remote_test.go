package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

// The client reaches an agent that serves with -listen, over either
// remote transport.
func TestClientByURL(t *testing.T) {
	proc, url, err := demo.StartListeningAgent(agentBin, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, proc.Stop(), "the agent exits with status 0") }()
	for _, u := range []string{url, "ws" + strings.TrimPrefix(url, "http")} {
		t.Run(u[:strings.Index(u, ":")], func(t *testing.T) {
			out := client(t, "-url", u, "-delay", "10ms")
			assert.Contains(t, out, "agent: Stopped (session/cancel).\n")
			assert.Contains(t, out, "stopReason: cancelled\n")
		})
	}
}
