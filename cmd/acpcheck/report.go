package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
)

// Status is what became of one rule's check.
type Status string

// The statuses of a check.
const (
	Pass         Status = "pass"
	Fail         Status = "fail"
	NotBrought   Status = "not-brought-about" // the scenario could not be made to happen: neither passed nor failed
	statusUnseen Status = ""
)

// Finding is one way the agent broke a rule, with the wire lines (their
// sequence numbers) that show it.
type Finding struct {
	Detail string `json:"detail"`
	Lines  []int  `json:"lines,omitempty"`
	// Protocol is the version of the connection the lines are on: 1 for
	// Report.Wire, 2 for Report.WireV2.
	Protocol int `json:"protocol"`
	// Side is who broke the rule: "agent" or "client".
	Side string `json:"side"`
}

// Result is the outcome of one rule.
type Result struct {
	Rule
	Status   Status    `json:"status"`
	Findings []Finding `json:"findings,omitempty"`
	Why      string    `json:"why,omitempty"` // why it was not brought about
}

// Report is a run's outcome: each rule's result, and the whole wire.
type Report struct {
	Agent []string `json:"agent"` // the command run; empty for a replay
	// Recording is the file a replayed conversation was read from, and
	// AgentName how the agent named itself in its initialize answer there.
	Recording string `json:"recording,omitempty"`
	AgentName string `json:"agent_name,omitempty"`
	// Client is, for acpcheck agent, how the client it served named itself
	// in initialize: the report is on the client.
	Client string `json:"client,omitempty"`
	// Cut is, for a recording cut in the middle of its last line, that
	// line's length: the report is on the whole lines before it. Ended is
	// how the recorded conversation ended, if the recording says.
	Cut   int    `json:"cut_bytes,omitempty"`
	Ended string `json:"ended,omitempty"`

	Results []Result `json:"results"`
	Wire    []Line   `json:"wire"`
	WireV2  []Line   `json:"wire_v2,omitempty"` // the v2 connection's, if the agent offers v2
	Stderr  string   `json:"stderr,omitempty"`  // the agent's last words on stderr
}

// results gathers the outcome of each rule as the scenarios check it: a
// rule fails with any finding, passes if it was checked at least once with
// none, and is not brought about otherwise.
type results struct {
	byID  map[string]*Result
	rules []Rule // in the report's order
	proto int    // the version of the connection the findings come from
	side  string // who the findings blame: the agent, or the client
}

func newResults() *results { return newResultsOf(allRules, sideAgent) }

// newResultsOf gathers the outcomes of rules, their findings blaming side.
func newResultsOf(rules []Rule, side string) *results {
	r := &results{byID: map[string]*Result{}, rules: rules, proto: 1, side: side}
	for _, rule := range rules {
		r.byID[rule.ID] = &Result{Rule: rule}
	}
	return r
}

func (r *results) pass(rule Rule) {
	if res := r.byID[rule.ID]; res.Status != Fail {
		res.Status, res.Why = Pass, ""
	}
}

func (r *results) fail(rule Rule, lines []int, format string, args ...any) {
	res := r.byID[rule.ID]
	res.Status, res.Why = Fail, ""
	res.Findings = append(res.Findings, Finding{Detail: fmt.Sprintf(format, args...), Lines: lines, Protocol: r.proto, Side: r.side})
}

// notBrought records why a scenario did not happen, unless the rule was
// checked elsewhere.
func (r *results) notBrought(rule Rule, format string, args ...any) {
	if res := r.byID[rule.ID]; res.Status == statusUnseen || res.Status == NotBrought {
		res.Status, res.Why = NotBrought, fmt.Sprintf(format, args...)
	}
}

func (r *results) list() []Result {
	out := make([]Result, 0, len(r.rules))
	for _, rule := range r.rules {
		res := *r.byID[rule.ID]
		if res.Status == statusUnseen {
			res.Status, res.Why = NotBrought, "not reached"
		}
		out = append(out, res)
	}
	return out
}

// ExitCode is acpcheck's exit status for the report: 1 if any MUST rule
// failed, 0 if every MUST rule that could be brought about passed. A broken
// SHOULD is reported and a MAY recorded; neither changes the status.
func (rep *Report) ExitCode() int {
	for _, r := range rep.Results {
		if r.Status == Fail && r.Tier == TierMust {
			return 1
		}
	}
	return 0
}

// Outcome is a result in the words of its tier: "fail" for a broken MUST,
// "warn" for a broken SHOULD, "recorded" for a MAY the peer did not do, and
// otherwise its status.
func (r Result) Outcome() string {
	if r.Status != Fail {
		return string(r.Status)
	}
	switch r.Tier {
	case TierShould:
		return "warn"
	case TierMay:
		return "recorded"
	}
	return string(Fail)
}

// result returns the result of the rule with the given ID.
func (rep *Report) result(id string) Result {
	for _, r := range rep.Results {
		if r.ID == id {
			return r
		}
	}
	return Result{}
}

// line returns the wire line with sequence number seq on the connection
// of version proto.
func (rep *Report) line(proto, seq int) (Line, bool) {
	wire := rep.Wire
	if proto == 2 {
		wire = rep.WireV2
	}
	if seq < 1 || seq > len(wire) {
		return Line{}, false
	}
	return wire[seq-1], true
}

// maxShown is how much of a wire line the text report shows.
const maxShown = 400

// WriteText writes the report for people: each rule's status, and for each
// finding its wire lines.
func (rep *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "acpcheck: %s\n", rep.subject())
	if rep.Ended != "" {
		fmt.Fprintf(w, "the conversation ended: %s\n", rep.Ended)
	}
	if rep.Cut > 0 {
		fmt.Fprintf(w, "the recording was cut in the middle of its last line (%d bytes, not read): this report is on the whole lines before it\n", rep.Cut)
	}
	fmt.Fprintln(w)
	counts := map[string]int{}
	for _, r := range rep.Results {
		counts[r.Outcome()]++
		fmt.Fprintf(w, "%s %-26s %-6s %s%s\n", outcomeLabels[r.Outcome()], r.ID, r.Tier, r.Title, kitText(r.Kit))
		if r.Status == NotBrought {
			fmt.Fprintf(w, "     not brought about: %s\n", r.Why)
		}
		for _, f := range r.Findings {
			fmt.Fprintf(w, "     - the %s: %s (v%d)\n", cmp.Or(f.Side, sideAgent), f.Detail, f.Protocol)
			for _, seq := range f.Lines {
				if l, ok := rep.line(f.Protocol, seq); ok {
					fmt.Fprintf(w, "         #%-4d %s %s\n", l.Seq, arrow(l.Dir), shorten(string(l.bytes())))
				}
			}
		}
		if r.Status == Fail {
			fmt.Fprintf(w, "     spec (%s): %s\n", r.Tier, r.Spec)
		}
	}
	for _, wire := range [][]Line{rep.Wire, rep.WireV2} {
		for _, l := range wire {
			if l.Size > 0 {
				fmt.Fprintf(w, "note: line %d (%s) was %d bytes, more than acpcheck keeps: only its first %d are in the report\n", l.Seq, arrow(l.Dir), l.Size, len(l.bytes()))
			}
		}
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d not brought about", counts[string(Pass)], counts[string(Fail)], counts[string(NotBrought)])
	if counts["warn"]+counts["recorded"] > 0 {
		fmt.Fprintf(w, "; %d SHOULD broken (reported), %d MAY not done (recorded)", counts["warn"], counts["recorded"])
	}
	fmt.Fprintln(w)
}

// outcomeLabels label each outcome in the text report.
var outcomeLabels = map[string]string{string(Pass): "PASS", string(Fail): "FAIL", "warn": "WARN", "recorded": "NOTE", string(NotBrought): "----"}

// kitText names the conformance kit's requirements a rule covers.
func kitText(ids []string) string {
	if len(ids) == 0 {
		return ""
	}
	return " [" + strings.Join(ids, ", ") + "]"
}

// subject names what the report is about: the agent's command, or the
// recording and the agent's name in it.
func (rep *Report) subject() string {
	if len(rep.Agent) == 1 && rep.Agent[0] == agentModeName {
		return "the client " + cmp.Or(rep.Client, "(which gave no clientInfo)") + ", with acpcheck agent as its agent"
	}
	if rep.Recording == "" {
		return strings.Join(rep.Agent, " ")
	}
	s := "the conversation recorded in " + rep.Recording
	if rep.AgentName != "" {
		s += ", with " + rep.AgentName
	}
	return s
}

func arrow(dir string) string {
	if dir == toAgent {
		return "client→agent"
	}
	return "agent→client"
}

func shorten(s string) string {
	if len(s) <= maxShown {
		return s
	}
	return s[:maxShown] + fmt.Sprintf("… (%d bytes)", len(s))
}
