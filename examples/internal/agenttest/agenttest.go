// Package agenttest builds the examples' agents for their tests, so every test
// of the examples drives the real subprocess: the demo agent once for a test
// binary (Main), or the agent beside a client (Build).
package agenttest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/acpkit/acprpc/examples/internal/demo"
)

// Main builds the agent into a temporary folder, stores its path in bin, runs
// the tests under goleak, and removes the folder.
func Main(m *testing.M, bin *string) {
	dir, err := os.MkdirTemp("", "acprpc-agent-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *bin, err = demo.BuildAgent(context.Background(), dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// Build builds the command of the package at pkg (a path from the test's
// folder, "../agent") into the test's temporary folder and returns the
// binary's path, so a client's test drives the agent beside it as a user
// runs it.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
