package main

import (
	"fmt"
	"slices"
)

// cancel-request, judged over the conversation alone: a v1 prompt the
// client cancelled with $/cancel_request is answered once, stopReason
// "cancelled" or -32800 (cancellation: a receiver that supports it "MUST
// send one of these responses for the original request"). v1 lets an agent
// ignore the cancel, so a prompt answered only after the client's later
// session/cancel shows no answer to $/cancel_request: that answer is
// cancel-stop-reason's, as is every answer to a prompt session/cancel
// cancelled first. An answer other than "cancelled" within crossWindow of
// the cancel may have crossed it on the wire, as cancelledPrompt says.

// requestCancelledPrompt judges the answer (on line seq) to a v1 prompt r
// of ID id, if $/cancel_request cancelled it.
func (m *monitor) requestCancelledPrompt(id string, r *inFlight, seq int, p parsed) {
	if r.requestCancelSeq == 0 || r.cancelled == "session/cancel" && r.cancelSeq < r.requestCancelSeq {
		return
	}
	lines := []int{r.seq, r.requestCancelSeq, seq}
	after := m.ms - r.requestCancelMs
	switch {
	case r.cancelled == "session/cancel":
		m.ignoredCancelRequest(r, fmt.Sprintf("answered %.0f ms later, only", after))
		return
	case p.Error != nil && p.Error.Code != -32800:
		m.flag(ruleCancelRequest, lines, "a prompt cancelled by $/cancel_request was answered with error %d %q, where it owes stopReason \"cancelled\" or -32800", p.Error.Code, p.Error.Message)
	case p.Error == nil && p.stopReason() != "cancelled" && after < crossWindow.Seconds()*1000 && r.clientAnsweredSeq < r.requestCancelSeq && !slices.Contains(m.underWay, r.requestCancelSeq):
		m.unjudged[ruleCancelRequest.ID] = fmt.Sprintf("the prompt cancelled by $/cancel_request was answered stopReason %q %.0f ms after the cancel: it may have crossed the cancel on the wire, which is not the agent's fault", p.stopReason(), after)
		return
	case p.Error == nil && p.stopReason() != "cancelled":
		m.flag(ruleCancelRequest, lines, "a prompt cancelled by $/cancel_request was answered stopReason %q, %.0f ms after the cancel, where it owes stopReason \"cancelled\" or -32800", p.stopReason(), after)
	}
	m.checked[ruleCancelRequest.ID] = true
	m.requestCancelled[id] = lines
}

// requestCancelledAgain judges a second answer, on line seq, to the
// request of ID id: one to a prompt $/cancel_request cancelled breaks
// cancel-request ("answered once") as well as one-answer.
func (m *monitor) requestCancelledAgain(id string, seq int) {
	if lines, ok := m.requestCancelled[id]; ok {
		m.flag(ruleCancelRequest, append(lines[:len(lines):len(lines)], seq), "a prompt cancelled by $/cancel_request was answered a second time, where it owes one answer")
	}
}

// requestCancelledNeverAnswered judges a v1 prompt r still unanswered when
// the agent ended the conversation, if $/cancel_request cancelled it.
func (m *monitor) requestCancelledNeverAnswered(r *inFlight) {
	if m.v2 || r.method != "session/prompt" || r.requestCancelSeq == 0 || r.cancelled == "session/cancel" && r.cancelSeq < r.requestCancelSeq {
		return
	}
	if r.cancelled == "session/cancel" {
		m.ignoredCancelRequest(r, "never answered, not even")
		return
	}
	m.checked[ruleCancelRequest.ID] = true
	m.flag(ruleCancelRequest, []int{r.seq, r.requestCancelSeq}, "a prompt cancelled by $/cancel_request was never answered")
}

// ignoredCancelRequest says why a prompt $/cancel_request cancelled, and
// session/cancel after it, leaves cancel-request unjudged: how it was
// answered (answered) after the session/cancel.
func (m *monitor) ignoredCancelRequest(r *inFlight, answered string) {
	m.unjudged[ruleCancelRequest.ID] = fmt.Sprintf("the prompt cancelled by $/cancel_request (line %d) was %s after the client's session/cancel (line %d): v1 lets an agent ignore $/cancel_request, and cancel-stop-reason judges what the session/cancel brought", r.requestCancelSeq, answered, r.cancelSeq)
}
