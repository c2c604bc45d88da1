package main

import "fmt"

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
