package main

import (
	"fmt"
	"slices"
	"time"
)

// cancel-stop-reason, judged over the conversation alone: a v1 prompt
// cancelled by session/cancel is answered stopReason "cancelled". A
// "cancelled" answer proves the agent honoured the cancel only when the
// turn could not have ended for another reason: a permission request of
// its session, pending at the cancel, that the client then answered with
// the cancelled outcome (as a v1 client must) may have ended it instead.
// An answer other than "cancelled" that crossed the cancel on the wire is
// no proof either way; one that came after the client answered a request
// of the turn, which the client wrote after the cancel, came after the
// agent read the cancel, and crossed nothing.

// crossWindow is how soon after session/cancel (or $/cancel_request) a
// prompt's answer other than "cancelled" is taken for one that crossed the cancel on the wire:
// written before the agent read the cancel. An editor may cancel at any
// moment, also as a short turn ends; acpcheck run cancels only a turn it
// asked to be slow and saw under way (monitor.underWay), whose
// answer right after the cancel is the agent's answer to it.
const crossWindow = 100 * time.Millisecond

// cancelledPrompt judges the answer (on line seq) to a v1 prompt r, if
// session/cancel cancelled it.
func (m *monitor) cancelledPrompt(r *inFlight, seq int, p parsed) {
	if r.cancelled != "session/cancel" {
		return
	}
	lines := []int{r.seq, r.cancelSeq, seq}
	after := m.ms - r.cancelMs
	switch {
	case p.Error != nil:
		m.checked[ruleCancelStop.ID] = true
		m.flag(ruleCancelStop, lines, "a prompt cancelled by session/cancel was answered with error %d %q, where it owes stopReason \"cancelled\"", p.Error.Code, p.Error.Message)
	case p.stopReason() != "cancelled" && after < crossWindow.Seconds()*1000 && r.clientAnsweredSeq < r.cancelSeq && !slices.Contains(m.underWay, r.cancelSeq):
		m.unjudged[ruleCancelStop.ID] = fmt.Sprintf("the prompt cancelled by session/cancel was answered stopReason %q %.0f ms after the cancel: it may have crossed the cancel on the wire, which is not the agent's fault", p.stopReason(), after)
	case p.stopReason() != "cancelled":
		m.checked[ruleCancelStop.ID] = true
		m.flag(ruleCancelStop, lines, "a prompt cancelled by session/cancel was answered stopReason %q, %.0f ms after the cancel", p.stopReason(), after)
	case m.outcomeCancelled[r.session] != 0:
		m.unjudged[ruleCancelStop.ID] = whyFollowedOutcome
	default:
		m.checked[ruleCancelStop.ID] = true
	}
}

// whyFollowedOutcome says why a turn that ended "cancelled" proves nothing.
const whyFollowedOutcome = "each prompt cancelled by session/cancel ended \"cancelled\" after the client answered its pending session/request_permission with the cancelled outcome: the turn may have followed that outcome, not session/cancel (no turn was cancelled with no such request open)"

// cancelledNeverAnswered judges a v1 prompt r still unanswered when the
// agent ended the conversation, if session/cancel cancelled it.
func (m *monitor) cancelledNeverAnswered(r *inFlight) {
	if m.v2 || r.method != "session/prompt" || r.cancelled != "session/cancel" {
		return
	}
	m.checked[ruleCancelStop.ID] = true
	m.flag(ruleCancelStop, []int{r.seq, r.cancelSeq}, "a prompt cancelled by session/cancel was never answered")
}

// turnWaitedOnClient notes, on the prompts of session still running,
// that the client answered one of the session's requests on line seq: an
// answer to a prompt after it came after the agent read every cancel the
// client sent before it.
func (m *monitor) turnWaitedOnClient(session string, seq int) {
	for _, r := range m.pending[toAgent] {
		if r.method == "session/prompt" && r.session == session {
			r.clientAnsweredSeq = seq
		}
	}
}
