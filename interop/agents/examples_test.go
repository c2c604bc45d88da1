//go:build linux

package agents

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/internal/interoptest"
)

// examples/hello's client, built as a user builds it, run against each
// real agent (against the fake model) as a user runs it: it exits 0 with
// the model's reply printed, and leaves no process behind.
func TestExampleHello(t *testing.T) {
	for _, spec := range []agentSpec{codexAgent, claudeAgent} {
		t.Run(spec.name, func(t *testing.T) {
			out := runExampleClient(t, spec, "github.com/acpkit/acprpc/examples/hello/client")
			// The client prints each agent_message_chunk on a line of its
			// own, and the model streams its reply a word at a time.
			assert.Contains(t, strings.ReplaceAll(out, "\n", ""), quickReply)
		})
	}
}

// examples/cancel's client, run the same way: it cancels its turn at the
// agent's first message, or, with -deadline, by its prompt's deadline,
// prints the stop reason, cancelled, exits 0, and leaves no process behind.
func TestExampleCancel(t *testing.T) {
	for _, spec := range []agentSpec{codexAgent, claudeAgent} {
		for _, flags := range [][]string{nil, {"-deadline", "4s"}} {
			t.Run(strings.Join(append([]string{spec.name}, flags...), " "), func(t *testing.T) {
				out := runExampleClient(t, spec, "github.com/acpkit/acprpc/examples/cancel/client", flags...)
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				assert.Equal(t, "stop reason: cancelled", lines[len(lines)-1], "the client's output:\n%s", out)
			})
		}
	}
}

// runExampleClient builds the example client pkg and runs it with flags
// and the agent spec starts, pointed at a fake model, as its arguments. It requires
// exit status 0, and that no process the client started (the agent, the
// agent's children) is alive once it has exited, and returns its output.
func runExampleClient(t *testing.T, spec agentSpec, pkg string, flags ...string) string {
	requireAgents(t)
	bin := buildCommand(t, pkg)
	model := newModelServer(t)
	agent := spec.command(t, model.URL())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	adoptOrphans(t)
	client := exec.CommandContext(ctx, bin, append(append(flags, agent.Path), agent.Args[1:]...)...)
	client.Env, client.Dir = agent.Env, t.TempDir()
	var stdout, stderr bytes.Buffer
	client.Stdout, client.Stderr = &stdout, &stderr
	require.NoError(t, client.Run(), "the client exits 0; its stdout:\n%s\nits stderr:\n%s", stdout.String(), stderr.String())
	t.Logf("%s: the client's output:\n%s", spec.name, stdout.String())
	assert.Empty(t, liveDescendants(), "no process the client started is left")
	return stdout.String()
}

var adopt sync.Once

// adoptOrphans makes this test process its descendants' reaper: a process
// whose parent exits is handed to it, not to init, so every process the
// client started stays a descendant of this one after the client has
// exited, and liveDescendants finds any that is left.
func adoptOrphans(t *testing.T) {
	adopt.Do(func() {
		const prSetChildSubreaper = 36 // prctl(2)
		_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
		require.Zero(t, errno, "prctl(PR_SET_CHILD_SUBREAPER)")
	})
}

// liveDescendants lists the live processes descended from this one.
func liveDescendants() []int {
	self := os.Getpid()
	return slices.DeleteFunc(interoptest.ProcessTree(self), func(pid int) bool { return pid == self })
}
