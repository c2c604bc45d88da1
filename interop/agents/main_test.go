package agents

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the tests if any goroutine outlives them: every agent
// process, its pipes and the fake model's server must be closed and waited
// for.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
