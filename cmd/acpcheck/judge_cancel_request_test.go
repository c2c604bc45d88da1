package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requestCancelledTurn is a v1 conversation in which a prompt under way is
// cancelled with $/cancel_request on line 3, 500 ms in, and then the lines
// follow, each numbered in order.
func requestCancelledTurn(end recordEnd, then ...Line) recording {
	lines := []Line{
		{Dir: toAgent, Raw: `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}`},
		{Dir: fromAgent, Ms: 10, Raw: `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"…"}}}}`},
		{Dir: toAgent, Ms: 500, Raw: `{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":1}}`},
	}
	lines = append(lines, then...)
	for i := range lines {
		lines[i].Seq = i + 1
	}
	return recording{lines: lines, end: end}
}

// answerLine is the agent's answer to the prompt, ms into the conversation.
func answerLine(ms float64, answer string) Line {
	return Line{Dir: fromAgent, Ms: ms, Raw: `{"jsonrpc":"2.0","id":1,` + answer + `}`}
}

// The replay of a record judges cancel-request as run does: a prompt
// cancelled by $/cancel_request is answered once, stopReason "cancelled" or
// -32800.
func TestReplayJudgesCancelRequest(t *testing.T) {
	cancelled, ended := `"result":{"stopReason":"cancelled"}`, `"result":{"stopReason":"end_turn"}`
	for _, c := range []struct {
		name  string
		then  []Line
		want  Status
		lines []int // the failing finding's
	}{
		{name: "cancelled", then: []Line{answerLine(520, cancelled)}, want: Pass},
		{name: "-32800", then: []Line{answerLine(520, `"error":{"code":-32800,"message":"Request cancelled"}`)}, want: Pass},
		{name: "end_turn", then: []Line{answerLine(900, ended)}, want: Fail, lines: []int{1, 3, 4}},
		{name: "another error", then: []Line{answerLine(520, `"error":{"code":-32603,"message":"aborted"}`)}, want: Fail, lines: []int{1, 3, 4}},
		{name: "twice", then: []Line{answerLine(520, cancelled), answerLine(530, cancelled)}, want: Fail, lines: []int{1, 3, 4, 5}},
		{name: "answered only after session/cancel", want: NotBrought, then: []Line{
			{Dir: toAgent, Ms: 3500, Raw: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
			answerLine(3510, cancelled),
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := replay("r", requestCancelledTurn(runEnd(3), c.then...)).result(ruleCancelRequest.ID)
			require.Equal(t, c.want, res.Status, "%+v", res)
			if c.want == Fail {
				assert.Equal(t, c.lines, res.Findings[0].Lines, "%+v", res)
				assert.Equal(t, sideAgent, res.Findings[0].Side)
			}
			if c.want == NotBrought {
				assert.Contains(t, res.Why, "only after the client's session/cancel")
			}
		})
	}
}

// An end_turn 2 ms after $/cancel_request may have crossed the cancel in an
// editor's record, and proves nothing; in run's, whose cancels are of turns
// under way, it fails.
func TestEndTurnRightAfterCancelRequest(t *testing.T) {
	answer := answerLine(502, `"result":{"stopReason":"end_turn"}`)
	editor := replay("r", requestCancelledTurn(recordEnd{Why: "the editor closed the proxy's stdin", ByEditor: true}, answer)).result(ruleCancelRequest.ID)
	assert.Equal(t, NotBrought, editor.Status, "%+v", editor)
	assert.Contains(t, editor.Why, "may have crossed the cancel")
	run := replay("r", requestCancelledTurn(runEnd(3), answer)).result(ruleCancelRequest.ID)
	require.Equal(t, Fail, run.Status, "%+v", run)
	assert.Equal(t, []int{1, 3, 4}, run.Findings[0].Lines)
}

// A prompt cancelled by $/cancel_request alone and never answered, when the
// agent ended the conversation, fails: it owed one answer.
func TestCancelRequestNeverAnswered(t *testing.T) {
	res := replay("r", requestCancelledTurn(runEnd(3))).result(ruleCancelRequest.ID)
	require.Equal(t, Fail, res.Status, "%+v", res)
	assert.Equal(t, []int{1, 3}, res.Findings[0].Lines)
}

// The client's answer to a request of the turn after $/cancel_request says
// the agent read that cancel, not the session/cancel that follows: an
// end_turn 1 ms after that session/cancel may still have crossed it.
func TestAnswerAfterCancelRequestLeavesTheLaterCancelsWindow(t *testing.T) {
	rec := requestCancelledTurn(recordEnd{Why: "the editor closed the proxy's stdin", ByEditor: true},
		Line{Dir: fromAgent, Ms: 510, Raw: `{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{"sessionId":"s","path":"/a"}}`},
		Line{Dir: toAgent, Ms: 520, Raw: `{"jsonrpc":"2.0","id":0,"result":{"content":""}}`},
		Line{Dir: toAgent, Ms: 3500, Raw: `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}`},
		answerLine(3501, `"result":{"stopReason":"end_turn"}`),
	)
	rep := replay("r", rec)
	stop := rep.result(ruleCancelStop.ID)
	assert.Equal(t, NotBrought, stop.Status, "%+v", stop)
	assert.Contains(t, stop.Why, "may have crossed the cancel")
	assert.Equal(t, NotBrought, rep.result(ruleCancelRequest.ID).Status)
}
