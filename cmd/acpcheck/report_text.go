package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"
)

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
