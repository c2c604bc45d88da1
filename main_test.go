package acprpc_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them: every
// Conn a test opens must be closed, and closing must end all of its work.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
