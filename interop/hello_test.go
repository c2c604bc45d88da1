package interop

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHello runs the smallest agent and client of each language against
// the other's: examples/hello (Go, on acpv1) and src/hello-*.ts (the
// TypeScript SDK), whose lines docs/types.md counts. Each pair says one
// prompt and prints the one message that comes back.
func TestHello(t *testing.T) {
	node := requireNode(t)
	dir := t.TempDir()
	for _, name := range []string{"agent", "client"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), "../examples/hello/"+name).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	tsAgent := append([]string{node}, nodeScript("hello-agent.ts")...)
	tsClient := append([]string{node}, nodeScript("hello-client.ts")...)
	for name, cmd := range map[string][]string{
		"go-client/ts-agent": append([]string{filepath.Join(dir, "client")}, tsAgent...),
		"ts-client/go-agent": append(tsClient, filepath.Join(dir, "agent")),
	} {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			run := exec.CommandContext(ctx, cmd[0], cmd[1:]...)
			run.Dir = interopDir
			out, err := run.Output()
			require.NoError(t, err)
			assert.Equal(t, "You said: hello\n", string(out))
		})
	}
}
