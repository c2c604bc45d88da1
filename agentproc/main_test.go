package agentproc_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// agent a test starts must be closed, and closing must end all of its work.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
