package scaling

import (
	"testing"

	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// agentBin is the demo agent, built once for the test binary.
var agentBin string

// TestMain builds the agent and fails the tests if any goroutine outlives
// them.
func TestMain(m *testing.M) { agenttest.Main(m, &agentBin) }
