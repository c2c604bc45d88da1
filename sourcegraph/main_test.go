package sourcegraph_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// connection a test opens must be closed, and every handler released.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
