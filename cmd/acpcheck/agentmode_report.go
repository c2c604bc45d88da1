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
func agentReport(w *agentWire, a *checkAgent, ended string, cutShort bool) *Report {
	if !cutShort {
		// Every request acpcheck cancelled was given CancelWait to be
		// answered before its turn ended: one still open was never
		// answered. A conversation cut in the middle of a turn leaves them
		// cut short, as the proxy's does.
		w.m.mu.Lock()
		w.m.cancelledUnanswered()
		w.m.mu.Unlock()
	}
	lines, found := w.finish()
	turns := a.turnEnds()
	a.mu.Lock()
	client := a.client
	a.mu.Unlock()
	rep := &Report{Agent: []string{agentModeName}, Client: client, Wire: lines, Ended: ended + "; " + turnsText(turns, a.o)}
	for _, rule := range clientRules {
		res := Result{Rule: rule, Status: Pass}
		for _, v := range found {
			if v.Rule.ID == rule.ID {
				res.Status = Fail
				res.Findings = append(res.Findings, Finding{Detail: v.Detail, Lines: v.Lines, Protocol: 1, Side: v.Side})
			}
		}
		if res.Status == Pass {
			res.Status, res.Why = broughtAbout(rule, w.m, lines, turns)
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
		return NotBrought, "the client cancelled no turn with session/cancel while acpcheck's session/request_permission was pending: " + countTurns(turns)
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
	for _, how := range []string{turnBySessionCancel, turnByCancelRequest, turnNotCancelled, turnCut} {
		if n[how] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[how], turnWords[how]))
		}
	}
	return fmt.Sprintf("%d turns: %s", len(turns), strings.Join(parts, ", "))
}

var turnWords = map[string]string{
	turnBySessionCancel: "cancelled by session/cancel",
	turnByCancelRequest: "cancelled by $/cancel_request on the prompt",
	turnNotCancelled:    "not cancelled in time (end_turn)",
	turnCut:             "cut short by the connection's end",
}
