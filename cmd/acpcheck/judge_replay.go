package main

import (
	"cmp"
	"encoding/json"
)

// replay puts a recorded conversation through the proxy's monitor and
// reports each watched rule. The conversation is on Wire, or on WireV2 if
// initialize settled on protocol version 2.
func replay(name string, rec recording) *Report {
	lines := make([]Line, len(rec.lines))
	for i, l := range rec.lines {
		l.msg = parse(l.bytes())
		lines[i] = l
	}
	var found []violation
	m := newMonitor(func(v violation) { found = append(found, v) })
	m.underWay = rec.end.CancelsUnderWay
	for _, l := range lines {
		m.cutShort(l.Size > 0)
		m.line(l.Dir, l.bytes(), l.Ms)
	}
	m.end(rec.end.ender())
	_, agent := negotiated(lines)
	rep := &Report{Recording: name, AgentName: agent, Cut: rec.cut, Ended: rec.end.Why}
	proto := rep.setWire(lines)
	for _, rule := range watchedRules {
		res := foundResult(rule, found, proto)
		if res.Status == Pass && !m.wasChecked(rule) {
			res.Status, res.Why = NotBrought, cmp.Or(m.whyUnjudged(rule), whyNotWatched[rule.ID])
			if proto == 2 && (rule.ID == ruleCancelStop.ID || rule.ID == ruleCancelRequest.ID) {
				res.Why = "a v2 prompt's answer does not end its turn: the rule is v1's"
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
}

// setWire puts the conversation on the report: on Wire, or on WireV2 once
// initialize settled on v2. It returns the version.
func (rep *Report) setWire(lines []Line) (proto int) {
	proto, _ = negotiated(lines)
	if proto == 2 {
		rep.WireV2 = lines
	} else {
		rep.Wire = lines
	}
	return proto
}

// foundResult is rule's result from the violations found on the wire:
// failed with their findings, else passed (for the caller to say whether
// the conversation brought it about).
func foundResult(rule Rule, found []violation, proto int) Result {
	res := Result{Rule: rule, Status: Pass}
	for _, v := range found {
		if v.Rule.ID == rule.ID {
			res.Status = Fail
			res.Findings = append(res.Findings, Finding{Detail: v.Detail, Lines: v.Lines, Protocol: proto, Side: v.Side})
		}
	}
	return res
}

// negotiated reads the conversation's initialize: the protocol version of
// its answer (1 if there is none), and the name and version the agent gave
// itself there.
func negotiated(lines []Line) (proto int, agent string) {
	proto = 1
	var initID json.RawMessage
	for _, l := range lines {
		switch {
		case l.Dir == toAgent && l.msg.Method == "initialize" && l.msg.hasID():
			initID = l.msg.ID
		case initID != nil && l.Dir == fromAgent && l.msg.answers(initID) && l.msg.Result != nil:
			var res struct {
				ProtocolVersion int             `json:"protocolVersion"`
				AgentInfo       *implementation `json:"agentInfo"` // v1
				Info            *implementation `json:"info"`      // v2
			}
			_ = json.Unmarshal(l.msg.Result, &res)
			if res.ProtocolVersion == 2 {
				proto = 2
			}
			if res.AgentInfo == nil {
				res.AgentInfo = res.Info
			}
			return proto, res.AgentInfo.String()
		}
	}
	return proto, ""
}

// implementation is how a peer names itself in initialize.
type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (i *implementation) String() string {
	if i == nil || i.Version == "" {
		return i.name()
	}
	return i.Name + " " + i.Version
}

func (i *implementation) name() string {
	if i == nil {
		return ""
	}
	return i.Name
}

// wireRules judges the whole transcript by the monitor's rules, the
// conversation's end the agent's (run waited its bounds for every answer).
// Only the agent is judged: acpcheck is the client, and breaks the client's
// rules on purpose (a line that is not JSON).
func (r *runner) wireRules() {
	var found []violation
	m := newMonitor(func(v violation) {
		if v.Side == sideAgent {
			found = append(found, v)
		}
	})
	m.underWay = r.underWay
	for _, l := range r.w.all() {
		m.cutShort(l.Size > 0)
		m.line(l.Dir, l.bytes(), l.Ms)
	}
	m.end(conversationEnder{})
	for _, rule := range conversationRules {
		for _, v := range found {
			if v.Rule.ID == rule.ID {
				r.res.fail(rule, v.Lines, "%s", v.Detail)
			}
		}
		if m.wasChecked(rule) {
			r.res.pass(rule)
		}
		if why := m.whyUnjudged(rule); why != "" {
			r.res.notBrought(rule, "%s", why)
		}
	}
}
