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
	return recording{lines: lines, end: runEnd}
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
