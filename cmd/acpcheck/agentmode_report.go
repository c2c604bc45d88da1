package main

import (
	"fmt"
	"strings"
)

// clientRules are the rules acpcheck agent judges: the rules only a client
// can break, and the rules of either side as the client's lines show them.
var clientRules = []Rule{ruleClientPermission, ruleClientCancelled, ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleIDEcho,
	ruleFraming, ruleEnvelope, ruleErrorMessage}

// clientChance says, for each client rule the monitor checks on either
// side's lines, whether the client's side of the conversation gave it a
// chance to be broken: a rule the client never could have broken is not
// passed.
var clientChance = map[string]struct {
	had func(l Line) bool
	why string
}{
	ruleNoteUnanswered.ID: {func(l Line) bool { return l.Dir == fromAgent && l.msg.isNotification() }, "acpcheck sent no notification: the client ran no prompt turn"},
	ruleOneAnswer.ID:      {func(l Line) bool { return l.Dir == fromAgent && l.msg.isRequest() }, "acpcheck sent the client no request: the client ran no prompt turn"},
	ruleUnknownID.ID:      {func(l Line) bool { return l.Dir == fromAgent && l.msg.isRequest() }, "acpcheck sent the client no request: the client ran no prompt turn"},
	ruleIDEcho.ID:         {func(l Line) bool { return l.Dir == toAgent && l.msg.isAnswer() }, "the client answered none of acpcheck's requests"},
	ruleFraming.ID:        {func(l Line) bool { return l.Dir == toAgent }, "the client sent no line"},
	ruleEnvelope.ID:       {func(l Line) bool { return l.Dir == toAgent && l.msg.isAnswer() }, "the client sent no answer"},
	ruleErrorMessage.ID:   {func(l Line) bool { return l.Dir == toAgent && l.msg.isAnswer() && l.msg.Error != nil }, "the client answered nothing with an error"},
}

// agentReport is the report of acpcheck agent's conversation: each client
// rule passed, failed or not brought about, and the wire.
func agentReport(w *agentWire, a *checkAgent, ended string) *Report {
	lines, found := w.finish()
	return buildAgentReport(w.m, a, lines, found, ended)
}

// agentSnapshot is the report as the nth turn ends, before its answer: the
// client's rules as far as the conversation has gone, for a client that
// kills acpcheck before the conversation's end.
func agentSnapshot(w *agentWire, a *checkAgent, n int) *Report {
	lines, found := w.sofar()
	return buildAgentReport(w.m, a, lines, found, fmt.Sprintf("the report as of the end of turn %d, written as it ended: acpcheck did not see the conversation's end (the client killed it, or it was stopped before it could write more)", n))
}

// buildAgentReport judges each client rule on the conversation's lines and
// the violations found in them.
func buildAgentReport(m *monitor, a *checkAgent, lines []Line, found []violation, ended string) *Report {
	turns := a.turnEnds()
	a.mu.Lock()
	client := a.client
	a.mu.Unlock()
	rep := &Report{Agent: []string{agentModeName}, Client: client, Ended: ended + "; " + turnsText(turns, a.o)}
	proto := rep.setWire(lines) // as a replay's is
	for _, rule := range clientRules {
		res := foundResult(rule, found, proto)
		if res.Status == Pass {
			res.Status, res.Why = broughtAbout(rule, m, lines, turns)
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

// broughtAbout says whether a rule no finding broke passed, or why it was
// not brought about.
func broughtAbout(rule Rule, m *monitor, lines []Line, turns []string) (Status, string) {
	if c, ok := clientChance[rule.ID]; ok {
		for _, l := range lines {
			if c.had(l) && m.wasChecked(rule) {
				return Pass, ""
			}
		}
		return NotBrought, c.why
	}
	if m.wasChecked(rule) {
		return Pass, ""
	}
	switch rule.ID {
	case ruleClientPermission.ID:
		return NotBrought, "the client cancelled no turn with session/cancel while acpcheck's session/request_permission was pending (in v2, nor did acpcheck cancel one the client had not answered): " + countTurns(turns)
	default:
		return NotBrought, "acpcheck cancelled no request of its own: the client answered each before its turn was cancelled or ended"
	}
}

// turnsText says how the conversation's turns ended.
func turnsText(turns []string, o agentModeOptions) string {
	if len(turns) == 0 {
		return "the client ran no prompt turn"
	}
	return countTurns(turns) + fmt.Sprintf(" (-cancel-within %s)", o.CancelWithin)
}

// countTurns counts the turns by how they ended.
func countTurns(turns []string) string {
	n := map[string]int{}
	for _, t := range turns {
		n[t]++
	}
	var parts []string
	for _, how := range []string{turnBySessionCancel, turnByCancelRequest, turnByEntityCancel, turnNotCancelled, turnCut, turnWithdrawn} {
		if n[how] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[how], turnWords[how]))
		}
	}
	return fmt.Sprintf("%d turns: %s", len(turns), strings.Join(parts, ", "))
}

var turnWords = map[string]string{
	turnBySessionCancel: "cancelled by session/cancel",
	turnByCancelRequest: "cancelled by $/cancel_request on the prompt",
	turnByEntityCancel:  "whose tool call was cancelled by tool_call/cancel (end_turn)",
	turnWithdrawn:       "prompt held behind running work and withdrawn before insertion (-32800)",
	turnNotCancelled:    "not cancelled in time (end_turn)",
	turnCut:             "cut short by the connection's end",
}
