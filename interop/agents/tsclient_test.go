package agents

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/acpkit/acprpc/internal/interoptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acpcheck proxy judges a client nobody here wrote: the TypeScript SDK
// 2.4.0's ClientApp (interop/src/client.ts), in front of examples/agent,
// cancelling by session/cancel and by the SDK's cancellationSignal. Neither
// side breaks a rule; with session/cancel the client's rules are brought
// about: its permission request pending at the cancel is answered
// cancelled, and the terminal/create the agent cancelled -32800, once.
func TestProxyJudgesTypeScriptClient(t *testing.T) {
	node := interoptest.RequireNode(t, interopDir)
	acpcheckBin := buildAcpcheck(t)
	agent := buildCommand(t, "github.com/acpkit/acprpc/examples/agent")
	for _, scenario := range []string{"session-cancel", "request-cancel"} {
		t.Run(scenario, func(t *testing.T) {
			record := filepath.Join(t.TempDir(), "wire.jsonl")
			client := exec.Command(node, "--import", "tsx", filepath.Join(interopDir, "src", "client.ts"), "--scenario", scenario,
				"--", acpcheckBin, "proxy", "-record", record, "--", agent)
			client.Dir, client.Env = interopDir, scratchEnv(t)
			out, err := client.CombinedOutput()
			require.NoError(t, err, "%s", out)

			var stdout bytes.Buffer
			report := exec.Command(acpcheckBin, "report", "-json", record)
			report.Stdout = &stdout
			require.NoError(t, report.Run(), "acpcheck report finds nothing")
			var rep acpcheckReport
			require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep))
			statuses := rep.statuses()
			for id, status := range statuses {
				assert.NotEqual(t, "fail", status, id)
			}
			if scenario == "session-cancel" {
				assert.Equal(t, "pass", statuses["client-permission-cancelled"])
				assert.Equal(t, "pass", statuses["client-cancel-answered"])
			}
		})
	}
}
