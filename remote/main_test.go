package remote

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: every server,
// transport and Conn a test opens must be closed and waited for. Started by
// TestScaleWebSocket as its client process, the test binary is that client
// instead.
func TestMain(m *testing.M) {
	if url := os.Getenv(scaleClientEnv); url != "" {
		os.Exit(scaleClient(url))
	}
	goleak.VerifyTestMain(m)
}
