package agentproc_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/agentproc"
	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/acpkit/acprpc/internal/wiretest"
)

// Close returns once no process of the agent's group runs. A process killed
// with the group ends a moment after the signal (one holding much memory
// takes tens of milliseconds to give it back), and Close waits for that:
// nothing of the agent is left running when it returns.
func TestStartCloseReturnsOnceNothingOfTheGroupRuns(t *testing.T) {
	ctx := wiretest.Context(t)
	cmd := helperAgent("heavy")
	agent, tree := startWatched(t, cmd, &agentproc.Options{ExitTimeout: time.Millisecond})
	child := childOf(t, agent)
	require.ErrorIs(t, agent.Close(), agentproc.ErrTerminated)
	assert.Empty(t, interoptest.StillAlive([]int{child}), "the agent's child runs on after Close")
	wiretest.Recv(t, ctx, tree.gone)
}
