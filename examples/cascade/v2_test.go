package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The cascade in ACP v2: the prompt is answered with its messageId at once,
// the session/cancel cascades as in v1, and the work ends with one idle
// state_update.
func TestCascadeV2(t *testing.T) {
	out := cascade(t, "-agent", agentBin, "-delay", "20ms", "-protocol", "2")
	line(t, out, `^ACP v2 cascading cancellation`)
	line(t, out, `^ +── 1\. the prompt is inserted: answered with its messageId at once, and its work starts$`)
	line(t, out, `^ +[0-9.]+ms  A→C  ↩ #c3 session/prompt → \{"messageId":"msg_1"\}$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  state_update running$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  user_message_chunk msg_1 "slow: analyze file X"$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  tool_call_update call_1 pending, cancellable$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ▶ session/request_permission #a[12]  toolCall call_1, options allow/reject$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ▶ terminal/create #a[12]  sleep 30$`)
	line(t, out, `^ +[0-9.]+ms  C→A  ✂ session/cancel  sess_1$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ✂ \$/cancel_request  #a[12] \(session/request_permission\)$`)
	line(t, out, `^ +[0-9.]+ms  A→C      ✂ \$/cancel_request  #a[12] \(terminal/create\)$`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] session/request_permission → \{"outcome":\{"outcome":"cancelled"\}\}$`)
	line(t, out, `^ +[0-9.]+ms  C→A      ↩ #a[12] terminal/create → error -32800 "Request cancelled"$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  tool_call_update call_1 cancelled$`)
	line(t, out, `^ +[0-9.]+ms  A→C      • session/update  agent_message_chunk msg_1_reply "Stopped \(session/cancel\)\."$`)
	line(t, out, `^ +[0-9.]+ms  A→C  • session/update  state_update idle, stopReason cancelled$`)
	// v2's client leaves every request to the agent's cascade: the cancels
	// come before the answers, and never cross them.
	assert.Less(t, strings.Index(out, "✂ $/cancel_request"), strings.Index(out, "↩ #a"))
	line(t, out, `^  ✓ every request was answered exactly once: 3 from the client, 2 from the agent$`)
	line(t, out, `^  ✓ the agent cascaded the cancel, each request by its own id:$`)
	line(t, out, `^  ✓ #c3 was answered with its messageId "msg_1"$`)
	line(t, out, `^  ✓ 6 session/update of the work, then 1 idle state_update, 0 after$`)
	line(t, out, `^stopReason: cancelled$`)
	assert.NotContains(t, out, "✗")
}

func TestCascadeV2Raw(t *testing.T) {
	out := cascade(t, "-agent", agentBin, "-delay", "1ms", "-raw", "-protocol", "2")
	line(t, out, `^ +[0-9.]+ms  A→C  \{"jsonrpc":"2.0","id":3,"result":\{"messageId":"msg_1"\}\}$`)
	line(t, out, `^ +[0-9.]+ms  A→C  \{"jsonrpc":"2.0","method":"session/update","params":\{"sessionId":"sess_1","update":\{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"\}\}\}$`)
}

func TestCascadeV2BadFlags(t *testing.T) {
	for _, args := range [][]string{{"-protocol", "3"}, {"-protocol", "2", "-cancel=request"}} {
		var stdout, stderr bytes.Buffer
		assert.Equal(t, 2, run(context.Background(), args, &stdout, &stderr), args)
		assert.Contains(t, stderr.String(), "-protocol", args)
	}
}
