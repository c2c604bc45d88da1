package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cancelledTurn is a v1 conversation in which a prompt whose turn waits on
// a permission request is cancelled with session/cancel, the client
// answers the permission request cancelled, and then the agent's lines
// follow, ms after the conversation began.
func cancelledTurn(agent ...Line) recording {
	lines := []Line{
		{Dir: toAgent, Raw: `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`},
		{Dir: fromAgent, Ms: 10, Raw: `{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s","toolCall":{},"options":[]}}`},
		{Dir: toAgent, Ms: 500, Raw: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
		{Dir: toAgent, Ms: 501, Raw: `{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"cancelled"}}}`},
	}
	lines = append(lines, agent...)
	for i := range lines {
		lines[i].Seq = i + 1
	}
	return recording{lines: lines, end: runEnd()}
}

// A turn that ends end_turn as soon as the client answers its permission
// request cancelled crossed nothing: the client wrote that answer after the
// cancel, and the agent's answer followed it (a turn waiting on the client
// does not end by itself). Within the crossing window though it is, it
// fails.
func TestCancelledTurnThatWaitedOnTheClientCrossedNothing(t *testing.T) {
	rep := replay("r", cancelledTurn(Line{Dir: fromAgent, Ms: 509, Raw: `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`}))
	res := rep.result(ruleCancelStop.ID)
	require.Equal(t, Fail, res.Status, "%+v", res)
	assert.Equal(t, []int{1, 3, 5}, res.Findings[0].Lines, "the prompt, the cancel, the answer")
}

// A turn that ends "cancelled" once its permission request is answered
// cancelled may have followed that outcome, not session/cancel: it proves
// nothing, and says why.
func TestCancelledTurnThatFollowedTheOutcomeProvesNothing(t *testing.T) {
	rep := replay("r", cancelledTurn(Line{Dir: fromAgent, Ms: 509, Raw: `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"cancelled"}}`}))
	res := rep.result(ruleCancelStop.ID)
	assert.Equal(t, NotBrought, res.Status)
	assert.Equal(t, whyFollowedOutcome, res.Why)
}

// A prompt cancelled with session/cancel and never answered, when the
// agent ended the conversation, fails; cut short by the editor, it is not
// the agent's fault.
func TestCancelledPromptNeverAnswered(t *testing.T) {
	rec := cancelledTurn()
	res := replay("r", rec).result(ruleCancelStop.ID)
	require.Equal(t, Fail, res.Status, "%+v", res)
	assert.Equal(t, []int{1, 3}, res.Findings[0].Lines)
	rec.end = recordEnd{Why: "the editor closed the proxy's stdin", ByEditor: true}
	assert.Equal(t, NotBrought, replay("r", rec).result(ruleCancelStop.ID).Status)
}

// A turn answered end_turn 2 ms after session/cancel, with nothing of the
// client's in between: in an editor's record it may have crossed the
// cancel, and proves nothing; from acpcheck run, whose record says the
// cancel went to a turn it asked to be slow and saw under way, it did not
// cross, and fails (an agent that answers end_turn the moment it reads the
// cancel).
func TestEndTurnRightAfterTheCancel(t *testing.T) {
	lines := []Line{
		{Seq: 1, Dir: toAgent, Raw: `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`},
		{Seq: 2, Dir: fromAgent, Ms: 10, Raw: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"…"}}}}`},
		{Seq: 3, Dir: toAgent, Ms: 500, Raw: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
		{Seq: 4, Dir: fromAgent, Ms: 502, Raw: `{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}`},
	}
	editor := replay("r", recording{lines: lines, end: recordEnd{Why: "the editor closed the proxy's stdin", ByEditor: true}}).result(ruleCancelStop.ID)
	assert.Equal(t, NotBrought, editor.Status, "%+v", editor)
	assert.Contains(t, editor.Why, "may have crossed the cancel")
	run := replay("r", recording{lines: lines, end: runEnd(3)}).result(ruleCancelStop.ID)
	require.Equal(t, Fail, run.Status, "%+v", run)
	assert.Equal(t, []int{1, 3, 4}, run.Findings[0].Lines)
}
