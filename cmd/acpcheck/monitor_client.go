package main

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The rules only a client can break, which the proxy, a replay and
// acpcheck agent check.
var (
	ruleClientPermission = Rule{ID: "client-permission-cancelled", Title: "v1 client: after session/cancel, each of the session's pending session/request_permission is answered with the cancelled outcome", Spec: pageTurnCancel, Tier: TierMust}
	ruleClientCancelled  = Rule{ID: "client-cancel-answered", Title: "client: a request the agent cancelled with $/cancel_request is answered once, with a result or -32800", Spec: pageCancellation, Tier: TierMust}
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
// client cancelled: in v1 the client answers each with the cancelled
// outcome. In v2 they are the agent's to cancel.
func (m *monitor) permissionsOwed(session string, seq int) {
	if m.v2 {
		return
	}
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
	if r.sessionCancelled {
		m.checked[ruleClientPermission.ID] = true
		if outcome := permissionOutcome(p); outcome != "cancelled" && !byAgent {
			m.flagBy(toAgent, ruleClientPermission, []int{r.seq, seq}, "the client cancelled the session and then answered its pending session/request_permission %s, where it owes the outcome \"cancelled\"", outcome)
		}
	}
	if byAgent {
		m.checked[ruleClientCancelled.ID] = true
		if p.Error != nil && p.Error.Code != -32800 {
			m.flagBy(toAgent, ruleClientCancelled, []int{r.seq, seq}, "the agent cancelled its %s with $/cancel_request, and the client answered error %d %q, where it owes a result or -32800", r.method, p.Error.Code, p.Error.Message)
		}
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
// rather than that nothing was owed.
func (m *monitor) owedCutShort() {
	const ended = "the conversation ended (the client ended it, or a signal to the proxy) with the agent's %s (line %d), %s, unanswered: cut short, not judged"
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

// cancelledUnanswered flags, at the end of a conversation the agent ended,
// the requests the agent cancelled (or the client did, by session/cancel)
// that the client never answered.
func (m *monitor) cancelledUnanswered() {
	for _, r := range m.pendingFromAgent() {
		if r.cancelled != "$/cancel_request" && !r.sessionCancelled {
			continue
		}
		rule, by := ruleClientCancelled, "the agent cancelled it with $/cancel_request"
		if r.sessionCancelled && r.cancelled == "$/cancel_request" && m.unjudged[ruleClientPermission.ID] == "" {
			m.unjudged[ruleClientPermission.ID] = fmt.Sprintf("the agent's %s (line %d), pending at the client's session/cancel (line %d), was then cancelled by the agent (line %d): client-cancel-answered judges it", r.method, r.seq, r.sessionCancelSeq, r.cancelSeq)
		}
		if r.cancelled != "$/cancel_request" {
			rule, by = ruleClientPermission, "the client cancelled its session"
		}
		m.checked[rule.ID] = true
		m.flagBy(toAgent, rule, []int{r.seq}, "the agent's %s was never answered: %s", r.method, by)
	}
}
