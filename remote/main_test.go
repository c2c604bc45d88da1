package remote

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: every server,
// transport and Conn a test opens must be closed and waited for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
