package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// watchedRules are the rules a conversation acpcheck only watches can show
// broken, in the report's order: the proxy reports them as they happen,
// and a replay of its record reports each as passed, failed or not brought
// about.
var watchedRules = []Rule{ruleCancelStop, ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleUpdateAfter}

// whyNotWatched says, for each watched rule, what a conversation lacks
// that never gave the rule a chance to be broken.
var whyNotWatched = map[string]string{
	ruleCancelStop.ID:     "no prompt cancelled with session/cancel was answered in the recording",
	ruleNoteUnanswered.ID: "the recording holds no notification",
	ruleOneAnswer.ID:      "the recording holds no request",
	ruleUnknownID.ID:      "the recording holds no request",
	ruleUpdateAfter.ID:    "no prompt was answered in the recording",
}

// readRecording reads the proxy's record: a JSON object per line, each a
// Line. The lines come back in the order of their sequence numbers, which
// the proxy writes them in (a record cut or joined by hand may not be),
// numbered from 1 without gaps.
func readRecording(r io.Reader) ([]Line, error) {
	var lines []Line
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		if b = bytes.TrimSpace(b); len(b) > 0 {
			var l Line
			if jerr := json.Unmarshal(b, &l); jerr != nil {
				return nil, fmt.Errorf("line %d of the recording is not a recorded message: %w", n, jerr)
			}
			if l.Dir != toAgent && l.Dir != fromAgent {
				return nil, fmt.Errorf("line %d of the recording has direction %q, neither %q nor %q", n, l.Dir, toAgent, fromAgent)
			}
			lines = append(lines, l)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortStableFunc(lines, func(a, b Line) int { return a.Seq - b.Seq })
	for i := range lines {
		lines[i].Seq = i + 1
	}
	return lines, nil
}

// bytes is the line as it was on the wire.
func (l Line) bytes() []byte {
	if l.Base64 != nil {
		return l.Base64
	}
	return []byte(l.Raw)
}

// replay puts a recorded conversation through the proxy's monitor and
// reports each watched rule. The conversation is on Wire, or on WireV2 if
// initialize settled on protocol version 2.
func replay(name string, recorded []Line) *Report {
	lines := make([]Line, len(recorded))
	for i, l := range recorded {
		l.msg = parse(l.bytes())
		lines[i] = l
	}
	var found []violation
	m := newMonitor(func(v violation) { found = append(found, v) })
	for _, l := range lines {
		m.line(l.Dir, l.bytes())
	}
	m.end()
	proto, agent := negotiated(lines)
	rep := &Report{Recording: name, AgentName: agent}
	if proto == 2 {
		rep.WireV2 = lines
	} else {
		rep.Wire = lines
	}
	for _, rule := range watchedRules {
		res := Result{Rule: rule, Status: Pass}
		for _, v := range found {
			if v.Rule.ID == rule.ID {
				res.Status = Fail
				res.Findings = append(res.Findings, Finding{Detail: v.Detail, Lines: v.Lines, Protocol: proto})
			}
		}
		if res.Status == Pass && !m.wasChecked(rule) {
			res.Status, res.Why = NotBrought, whyNotWatched[rule.ID]
			if proto == 2 && (rule.ID == ruleCancelStop.ID || rule.ID == ruleUpdateAfter.ID) {
				res.Why = "a v2 prompt's answer does not end its turn: the rule is v1's"
			}
		}
		rep.Results = append(rep.Results, res)
	}
	return rep
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

// reportCommand is `acpcheck report`: a recorded conversation read back
// into a report, as text, JSON or a web page.
func reportCommand(args []string, stdout, stderr io.Writer) int {
	fs := commandFlags("acpcheck report", "acpcheck report [flags] RECORDING\n\nRECORDING is a file acpcheck proxy -record wrote.", stderr)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	htmlOut := fs.String("html", "", "also write the report as a self-contained web page to `FILE`")
	if code, done := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "acpcheck report: give one recording, as in acpcheck report wire.jsonl")
		return 2
	}
	name := fs.Arg(0)
	f, err := os.Open(name)
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck report: %v\n", err)
		return 2
	}
	lines, err := readRecording(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck report: %s: %v\n", name, err)
		return 2
	}
	return printReport(replay(name, lines), *asJSON, *htmlOut, stdout, stderr)
}

// printReport writes rep to stdout, as JSON or text, and as a web page to
// htmlOut if it is not empty, and returns the exit status it calls for.
func printReport(rep *Report, asJSON bool, htmlOut string, stdout, stderr io.Writer) int {
	if htmlOut != "" {
		if err := writeHTMLFile(htmlOut, rep); err != nil {
			fmt.Fprintf(stderr, "acpcheck: cannot write the web page: %v\n", err)
			return 2
		}
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(rep)
	} else {
		rep.WriteText(stdout)
	}
	return rep.ExitCode()
}
