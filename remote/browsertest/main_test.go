package browsertest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: the servers and
// the browser a test starts must be closed and waited for.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
