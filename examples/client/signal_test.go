package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The client interrupted in the middle of a turn shuts its connection down
// gracefully: it answers the agent's pending requests as cancelled, sends
// $/cancel_request for its prompt, still reads the agent's stop reason,
// and the agent it started exits with status 0.

// midTurn is a stdout that tells when the turn is under way: the agent
// has asked for permission and for a terminal, and nobody has answered.
type midTurn struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	reached chan struct{}
	once    sync.Once
}

func newMidTurn() *midTurn { return &midTurn{reached: make(chan struct{})} }

func (w *midTurn) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(b)
	if out := w.buf.String(); strings.Contains(out, "asks permission") && strings.Contains(out, "asks for a terminal") {
		w.once.Do(func() { close(w.reached) })
	}
	return n, err
}

func (w *midTurn) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// slowTurn is a turn that runs until it is cancelled, which the client
// never does on its own.
var slowTurn = []string{"-cancel=none", "-prompt", "slow: analyze file X", "-terminal-startup", "1h", "-v"}

// An interrupt mid-turn, ten times over: every time the turn ends with the
// agent's "cancelled" stop reason, read before the connection closed, and
// the client exits with status 0 (which it does only if the agent did).
func TestInterruptMidTurn(t *testing.T) {
	for round := range 10 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ctx, interrupt := context.WithCancel(context.Background())
			defer interrupt()
			stdout, stderr := newMidTurn(), newMidTurn() // with -v, the agent and the client both log to stderr
			code := make(chan int, 1)
			go func() { code <- run(ctx, append([]string{"-agent", agentBin}, slowTurn...), stdout, stderr) }()
			<-stdout.reached
			interrupt()
			require.Equal(t, 0, <-code, "stderr: %s", stderr.String())
			out := stdout.String()
			assert.Contains(t, out, "agent: Stopped (")
			assert.Contains(t, out, "stopReason: cancelled\n")
			assert.NotContains(t, stderr.String(), "level=WARN")
			assert.NotContains(t, stderr.String(), "level=ERROR")
		})
	}
}

// The client binary itself, sent SIGTERM mid-turn: the same, through the
// signal.
func TestSIGTERMClientMidTurn(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "client")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	stdout := newMidTurn()
	var stderr bytes.Buffer
	cmd := exec.Command(bin, append([]string{"-agent", agentBin}, slowTurn...)...)
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	cmd.Env = os.Environ()
	require.NoError(t, cmd.Start())
	<-stdout.reached
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "stderr: %s", stderr.String())
	assert.Contains(t, stdout.String(), "stopReason: cancelled\n")
	assert.NotContains(t, stderr.String(), "level=WARN")
}
