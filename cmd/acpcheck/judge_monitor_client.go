package main

import (
	"encoding/json"
	"fmt"
	"slices"
)

// judgeLine applies the rules of a line by itself to one line, blaming the
// side that sent it.
func (m *monitor) judgeLine(dir string, seq int, raw []byte, p parsed) {
	if m.cut {
		m.cut = false
		return // what is left of it says nothing of the line that was sent
	}
	kind, found := judgeLine(raw)
	m.checked[ruleFraming.ID] = true
	if kind == "answer" {
		m.checked[ruleEnvelope.ID] = true
		if p.Error != nil {
			m.checked[ruleErrorMessage.ID] = true
		}
	}
	for _, f := range found {
		m.flagBy(dir, f.rule, []int{seq}, "%s", f.detail)
	}
}

// cutShort says whether the next line is only the first bytes of a line
// longer than acpcheck keeps, which the line rules cannot judge.
func (m *monitor) cutShort(cut bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.cut = cut
}

// echoBroken flags an answer whose ID is none the other side sent, but
// loosely one it has pending: 7 for "7", or "7" for 7.
func (m *monitor) echoBroken(dir string, seq int, p parsed) {
	want := looseID(p.ID)
	if want == "" {
		return
	}
	for id, r := range m.pending[other(dir)] {
		if looseID(json.RawMessage(id)) == want {
			m.flagBy(dir, ruleIDEcho, []int{r.seq, seq}, "the request's ID %s was answered as %s: a different ID to JSON-RPC", id, p.ID)
			return
		}
	}
}

// permissionsOwed marks the agent's permission requests of a session the
// client cancelled, which owe the cancelled outcome: in v1 the client
// answers each so itself; in v2 it may, or it waits for the agent's
// $/cancel_request (see clientPermission).
func (m *monitor) permissionsOwed(session string, seq int) {
	for _, r := range m.pending[fromAgent] {
		if r.method == "session/request_permission" && r.session == session && !r.sessionCancelled {
			r.sessionCancelled, r.sessionCancelSeq = true, seq
		}
	}
}

// clientAnswer checks the client's answer to one of the agent's requests:
// a permission request pending at the client's own session/cancel owes the
// cancelled outcome (any answer, once the agent cancelled it itself), and a
// request the agent cancelled a result or -32800.
func (m *monitor) clientAnswer(r *inFlight, seq int, p parsed) {
	byAgent := r.cancelled == "$/cancel_request"
	m.clientPermission(r, seq, p)
	if byAgent {
		m.checked[ruleClientCancelled.ID] = true
		if p.Error != nil && p.Error.Code != -32800 {
			m.flagBy(toAgent, ruleClientCancelled, []int{r.seq, seq}, "the agent cancelled its %s with $/cancel_request, and the client answered error %d %q, where it owes a result or -32800", r.method, p.Error.Code, p.Error.Message)
		}
	}
}

// clientPermission checks the client's answer to a permission request
// that owes the cancelled outcome, by the version's form of the one rule.
// v1 (prompt-turn, Cancellation): pending at the client's own
// session/cancel, it is answered "cancelled" by the client itself, and any
// answer stands once the agent cancelled it first. v2 (the schema's
// RequestPermissionOutcome): "the client answers a request the agent
// cancels with $/cancel_request with this outcome", and may send it
// early after its own session/cancel: pending at that cancel, or cancelled
// by the agent, it is answered "cancelled" (or -32800, cancellation's
// generic answer), never approved; an answer the agent's cancel crossed on
// the wire is not the client's fault, and an error answering the agent's
// cancel is client-cancel-answered's to judge.
func (m *monitor) clientPermission(r *inFlight, seq int, p parsed) {
	byAgent := r.cancelled == "$/cancel_request"
	if r.method != "session/request_permission" || !r.sessionCancelled && !(m.v2 && byAgent) {
		return
	}
	m.checked[ruleClientPermission.ID] = true
	outcome := permissionOutcome(p)
	switch {
	case outcome == "cancelled":
		if r.sessionCancelled && m.outcomeCancelled[r.session] == 0 {
			m.outcomeCancelled[r.session] = r.seq
		}
	case !m.v2 && !byAgent:
		m.flagBy(toAgent, ruleClientPermission, []int{r.seq, seq}, "the client cancelled the session and then answered its pending session/request_permission %s, where it owes the outcome \"cancelled\"", outcome)
	case !m.v2 || p.Error != nil && (p.Error.Code == -32800 || byAgent):
		// An error to the agent's cancel is client-cancel-answered's.
	case r.sessionCancelled:
		m.flagBy(toAgent, ruleClientPermission, []int{r.seq, r.sessionCancelSeq, seq}, "v2: the client cancelled the session (line %d) and then answered its pending session/request_permission %s, where it owes the outcome \"cancelled\"", r.sessionCancelSeq, outcome)
	case m.ms-r.cancelMs >= crossWindow.Seconds()*1000:
		m.flagBy(toAgent, ruleClientPermission, []int{r.seq, r.cancelSeq, seq}, "v2: the agent cancelled its session/request_permission with $/cancel_request (line %d), and the client answered it %s %.0f ms later, where it owes the outcome \"cancelled\"", r.cancelSeq, outcome, m.ms-r.cancelMs)
	}
}

// permissionOutcome is what an answer to session/request_permission says:
// its outcome, or the error.
func permissionOutcome(p parsed) string {
	if p.Error != nil {
		return fmt.Sprintf("with error %d %q", p.Error.Code, p.Error.Message)
	}
	var res struct {
		Outcome struct {
			Outcome string `json:"outcome"`
		} `json:"outcome"`
	}
	if json.Unmarshal(p.Result, &res) == nil && res.Outcome.Outcome == "cancelled" {
		return "cancelled"
	}
	return "with " + string(p.Result)
}

// owedCutShort notes, at the end of a conversation the client ended, the
// answers it still owed: cut short, not judged, which the report says
// rather than that nothing was owed. when says when it ended.
func (m *monitor) owedCutShort(when string) {
	ended := "the conversation ended (the client ended it, or acpcheck was stopped) " + when + ", with the agent's %s (line %d), %s, unanswered: cut short, not judged"
	for _, r := range m.pendingFromAgent() {
		if r.sessionCancelled && m.unjudged[ruleClientPermission.ID] == "" {
			m.unjudged[ruleClientPermission.ID] = fmt.Sprintf(ended, r.method, r.seq, fmt.Sprintf("pending at the client's session/cancel (line %d)", r.sessionCancelSeq))
		}
		if r.cancelled == "$/cancel_request" && m.unjudged[ruleClientCancelled.ID] == "" {
			m.unjudged[ruleClientCancelled.ID] = fmt.Sprintf(ended, r.method, r.seq, fmt.Sprintf("which it cancelled with $/cancel_request (line %d)", r.cancelSeq))
		}
	}
}

// pendingFromAgent is the agent's requests still unanswered, in the
// order they were sent.
func (m *monitor) pendingFromAgent() []*inFlight {
	var left []*inFlight
	for _, r := range m.pending[fromAgent] {
		left = append(left, r)
	}
	slices.SortFunc(left, func(a, b *inFlight) int { return a.seq - b.seq })
	return left
}

// cancelledUnanswered flags, at the end of a conversation the agent ended
// or the client ended between turns, the requests the agent cancelled (or
// the client did, by session/cancel) that the client never answered: those
// it owed before line before, or all when before is 0.
func (m *monitor) cancelledUnanswered(before int) {
	for _, r := range m.pendingFromAgent() {
		// The agent's own cancel counts only when it came before the end.
		byAgent := r.cancelled == "$/cancel_request" && (before == 0 || r.cancelSeq < before)
		if !byAgent && !r.sessionCancelled {
			continue
		}
		rule, by := ruleClientCancelled, "the agent cancelled it with $/cancel_request"
		if r.sessionCancelled && byAgent && m.unjudged[ruleClientPermission.ID] == "" {
			m.unjudged[ruleClientPermission.ID] = fmt.Sprintf("the agent's %s (line %d), pending at the client's session/cancel (line %d), was then cancelled by the agent (line %d): client-cancel-answered judges it", r.method, r.seq, r.sessionCancelSeq, r.cancelSeq)
		}
		if !byAgent {
			if m.v2 {
				// A v2 client leaves it to the agent's $/cancel_request,
				// which never came.
				continue
			}
			rule, by = ruleClientPermission, "the client cancelled its session"
		}
		m.checked[rule.ID] = true
		m.flagBy(toAgent, rule, []int{r.seq}, "the agent's %s was never answered: %s", r.method, by)
	}
}
