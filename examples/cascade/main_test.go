package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acpkit/acprpc/examples/internal/agenttest"
)

// agentBin is the agent, built once for every test.
var agentBin string

func TestMain(m *testing.M) { agenttest.Main(m, &agentBin) }

// cascade runs the command in-process and returns its output.
func cascade(t *testing.T, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	t.Log(stdout.String())
	require.Equal(t, 0, code, "exit status; stderr: %s", stderr.String())
	return stdout.String()
}

// line asserts that out has a line matching the regular expression re.
func line(t *testing.T, out, re string) {
	t.Helper()
	assert.Regexp(t, regexp.MustCompile(`(?m)`+re), out)
}

// The seed's flow exactly: the client cancels the prompt, the agent cancels
// both of its requests by their own IDs, the client confirms each, and the
// agent ends the turn.
func TestCascadeByCancelRequest(t *testing.T) {
	out := cascade(t, "-agent", agentBin, "-delay", "20ms", "-cancel=request")
	line(t, out, `^ +[0-9.]+ms  C→A  ▶ session/prompt #c3  sess_1 "slow: analyze file X"$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  agent_message_chunk "Looking into it`)
	line(t, out, `^ +[0-9.]+ms  A→C      ▶ session/request_permission #a[12]  toolCall call_1, options allow/reject$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ▶ terminal/create #a[12]  sleep 30$`)
	line(t, out, `^ +[0-9.]+ms  C→A  ✂ \$/cancel_request  #c3 \(session/prompt\)$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ✂ \$/cancel_request  #a[12] \(session/request_permission\)$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ✂ \$/cancel_request  #a[12] \(terminal/create\)$`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] session/request_permission → \{"outcome":\{"outcome":"cancelled"\}\}$`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] terminal/create → error -32800 "Request cancelled"$`)
	line(t, out, `^ +[0-9.]+ms  A→C  ↩ #c3 session/prompt → \{"stopReason":"cancelled"\}$`)
	for i := 1; i <= 6; i++ {
		line(t, out, fmt.Sprintf(`^ +── %d\. `, i))
	}
	// The headings come in the seed's order.
	assert.Less(t, strings.Index(out, "── 4."), strings.Index(out, "── 5."))
	assert.Less(t, strings.Index(out, "── 5."), strings.Index(out, "── 6."))

	line(t, out, `^  ✓ every request was answered exactly once: 3 from the client, 2 from the agent$`)
	line(t, out, `^  ✓ the agent cascaded the cancel, each request by its own id:$`)
	line(t, out, `^  ✓ every request the agent had pending was cancelled or answered as cancelled$`)
	line(t, out, `^  ✓ 2 session/update before the answer to #c3, 0 after$`)
	line(t, out, `^stopReason: cancelled$`)
	assert.NotContains(t, out, "✗")
}

// With session/cancel the client also answers its pending requests itself,
// so whether the agent's own cancels cross those answers is a race; what
// never varies is checked.
func TestCascadeBySessionCancel(t *testing.T) {
	out := cascade(t, "-agent", agentBin, "-delay", "20ms")
	line(t, out, `^ +[0-9.]+ms  C→A  ✂ session/cancel  sess_1$`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] session/request_permission → \{"outcome":\{"outcome":"cancelled"\}\}`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] terminal/create → error -32800 "Request cancelled"`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  agent_message_chunk "Stopped \(session/cancel\)\."$`)
	line(t, out, `^ +[0-9.]+ms  A→C  ↩ #c3 session/prompt → \{"stopReason":"cancelled"\}$`)
	assert.Less(t, strings.Index(out, "✂ session/cancel"), strings.Index(out, "↩ #a"),
		"session/cancel goes out before the client's cancelled answers")
	line(t, out, `^  ✓ every request was answered exactly once: 3 from the client, 2 from the agent$`)
	line(t, out, `^  ✓ every request the agent had pending was cancelled or answered as cancelled$`)
	line(t, out, `^stopReason: cancelled$`)
	assert.NotContains(t, out, "✗")
}

func TestCascadeRaw(t *testing.T) {
	out := cascade(t, "-agent", agentBin, "-delay", "1ms", "-raw", "-cancel=request")
	line(t, out, `^ +[0-9.]+ms  C→A  \{"jsonrpc":"2.0","method":"\$/cancel_request","params":\{"requestId":3\}\}$`)
	line(t, out, `^ +[0-9.]+ms  A→C      \{"jsonrpc":"2.0","method":"\$/cancel_request","params":\{"requestId":[12]\}\}$`)
	line(t, out, `^ +[0-9.]+ms  A→C  \{"jsonrpc":"2.0","id":3,"result":\{"stopReason":"cancelled"\}\}$`)
}

// Without -agent the command builds the agent itself, as on a fresh
// machine.
func TestCascadeBuildsTheAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the agent")
	}
	out := cascade(t, "-delay", "1ms")
	assert.Contains(t, out, "building the demo agent")
	line(t, out, `^stopReason: cancelled$`)
}

func TestCascadeBadFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	assert.Equal(t, 2, run(context.Background(), []string{"-cancel=never"}, &stdout, &stderr))
	assert.Contains(t, stderr.String(), "-cancel must be")
}
