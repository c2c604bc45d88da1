package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestV2CancelBySession(t *testing.T) {
	out := client(t, "-delay", "10ms", "-protocol", "2")
	assert.Contains(t, out, "client: cancelling the turn: session/cancel\n")
	assert.Contains(t, out, "agent: Stopped (session/cancel).\n")
	assert.Contains(t, out, "the agent inserted the prompt as msg_1\n")
	assert.Contains(t, out, "stopReason: cancelled\n")
	assert.NotContains(t, out, "agent: slow", "the echoed prompt is not the agent's")
}

func TestV2EndTurn(t *testing.T) {
	out := client(t, "-protocol", "2", "-cancel=none", "-approve", "-terminal-startup", "1ms", "-prompt", "hello")
	assert.Contains(t, out, "Done.\n")
	assert.Contains(t, out, "stopReason: end_turn\n")
}

func TestV2BadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-protocol", "2", "-cancel=request"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-cancel=request needs -protocol 1")
}
