// Package demo holds the pieces of the cascading-cancellation demo that its
// commands share: a small ACP agent, a small ACP client, a tap that records
// the wire between them, and the timeline that shows it. The messages are
// the generated types of github.com/acpkit/acprpc/acpv1 and acpv2.
package demo

import (
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// The ACP versions the demo speaks. A client asks for one; the agent
// serves both.
const (
	ProtocolV1 = 1
	ProtocolV2 = 2
)

// Stop reasons of a prompt turn, as the demo's results report them.
const (
	StopEndTurn   = string(acpv1.StopReasonEndTurn)
	StopCancelled = string(acpv1.StopReasonCancelled)
	StopError     = string(acpv2.StopReasonError) // v2: the work failed
)

// The permission options the agent offers.
const (
	OptionAllow  = "allow"
	OptionReject = "reject"
)

// What the demo agent does in a turn: it asks permission for tool call
// ToolCallID and starts `sleep 30` in a terminal; a prompt containing
// SlowWord keeps it working until the turn is cancelled.
const (
	ToolCallID = "call_1"
	SlowWord   = "slow"
)

// promptText returns the text blocks of a prompt, of either version, joined.
func promptText[B acpv1.ContentBlock | acpv2.ContentBlock](blocks []B) string {
	text := ""
	for _, b := range blocks {
		var part string
		switch v := any(b).(type) {
		case acpv1.ContentBlock:
			t, _ := v.Value.(acpv1.TextContent)
			part = t.Text
		case acpv2.ContentBlock:
			t, _ := v.Value.(acpv2.TextContent)
			part = t.Text
		}
		if part != "" && text != "" {
			text += "\n"
		}
		text += part
	}
	return text
}
