package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// examples/client, run with acpcheck proxy as its agent's command (in front
// of examples/agent), breaks no rule of either side, whichever way it
// cancels, in v1 and in v2: the record's replay finds nothing.
func TestExampleClientThroughProxyPasses(t *testing.T) {
	agent := buildExampleAgent(t)
	client := buildExampleClient(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"session/cancel", []string{"-cancel", "session"}},
		{"$/cancel_request", []string{"-cancel", "request"}},
		{"v2 session/cancel", []string{"-cancel", "session", "-protocol", "2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record := filepath.Join(dir, "wire.jsonl")
			proxied := filepath.Join(dir, "proxied-agent")
			script := fmt.Sprintf("#!/bin/sh\nexec env %s=1 '%s' proxy -record '%s' -- '%s' \"$@\"\n", asAcpcheckEnv, os.Args[0], record, agent)
			require.NoError(t, os.WriteFile(proxied, []byte(script), 0o755))
			run := exec.Command(client, append([]string{"-agent", proxied, "-timeout", "30s"}, c.args...)...)
			out, err := run.CombinedOutput()
			require.NoError(t, err, "%s", out)
			rec, err := readRecordingFile(record)
			require.NoError(t, err)
			rep := replay(record, rec)
			for _, r := range rep.Results {
				assert.NotEqual(t, Fail, r.Status, "%s: %+v", r.ID, r.Findings)
			}
			assert.Contains(t, wireText(append(rep.Wire, rep.WireV2...)), `"method":"$/cancel_request"`, "the agent cancelled a request of the client's, which the client rules then checked")
			assert.Equal(t, Pass, rep.result(ruleClientCancelled.ID).Status)
			if c.name == "session/cancel" { // v1: the permission request pending at the cancel, answered cancelled
				assert.Equal(t, Pass, rep.result(ruleClientPermission.ID).Status)
			}
			if c.name == "$/cancel_request" { // the agent's side: the prompt it cancelled answered cancelled, once
				assert.Equal(t, Pass, rep.result(ruleCancelRequest.ID).Status, "%+v", rep.result(ruleCancelRequest.ID))
			}
		})
	}
}

// buildExampleClient builds examples/client and returns the binary's path.
func buildExampleClient(t *testing.T) string {
	t.Helper()
	client := filepath.Join(t.TempDir(), "client")
	out, err := exec.Command("go", "build", "-o", client, "github.com/acpkit/acprpc/examples/client").CombinedOutput()
	require.NoError(t, err, "%s", out)
	return client
}
