package interop

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// interopDir is this package's directory, where the TypeScript scripts run
// (tsx is resolved from the working directory).
var interopDir string

// agentBin is examples/agent, built once for every test that needs it.
var agentBin string

// TestMain builds the Go example agent, runs the tests, and fails them if any
// goroutine outlives them: every Conn, process and pipe a test opens must be
// closed and waited for.
func TestMain(m *testing.M) {
	if os.Getenv(sourcegraphAgentEnv) != "" {
		os.Exit(runSourcegraphAgent()) // client.ts runs this binary as its agent
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop: cannot find the working directory:", err)
		os.Exit(1)
	}
	interopDir = wd
	tmp, err := os.MkdirTemp("", "acprpc-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		os.Exit(1)
	}
	agentBin = filepath.Join(tmp, "agent")
	args := []string{"build", "-o", agentBin}
	if raceEnabled {
		args = append(args, "-race") // the agent's own races fail its exit status
	}
	build := exec.Command("go", append(args, "../examples/agent")...)
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "interop: go build ../examples/agent: %v\n%s", err, out)
		os.RemoveAll(tmp)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(tmp)
		os.Exit(code)
	}))
}
