// Package agenttest builds the example agent once for a test binary, so every
// test of the examples drives the real subprocess.
package agenttest

import (
	"context"
	"fmt"
	"os"
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
