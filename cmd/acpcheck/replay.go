package main

import (
	"bufio"
	"bytes"
	"cmp"
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
var watchedRules = []Rule{ruleCancelStop, ruleNoteUnanswered, ruleOneAnswer, ruleUnknownID, ruleUpdateAfter,
	ruleFraming, ruleEnvelope, ruleErrorMessage, ruleIDEcho, ruleClientPermission, ruleClientCancelled}

// whyNotWatched says, for each watched rule, what a conversation lacks
// that never gave the rule a chance to be broken.
var whyNotWatched = map[string]string{
	ruleCancelStop.ID:       "no prompt cancelled with session/cancel was answered in the recording",
	ruleNoteUnanswered.ID:   "the recording holds no notification",
	ruleOneAnswer.ID:        "the recording holds no request",
	ruleUnknownID.ID:        "the recording holds no request",
	ruleFraming.ID:          "the recording holds no line",
	ruleEnvelope.ID:         "the recording holds no answer",
	ruleErrorMessage.ID:     "the recording holds no error answer",
	ruleIDEcho.ID:           "no request was answered in the recording",
	ruleClientPermission.ID: "no session/request_permission was pending when the client sent session/cancel (v1)",
	ruleClientCancelled.ID:  "the agent cancelled none of its requests with $/cancel_request",
	ruleUpdateAfter.ID:      "no prompt was answered (v2: no work went idle) in the recording",
}

// recording is a conversation read back from the proxy's record.
type recording struct {
	lines []Line
	// cut is the length of a last line the record ends in the middle of
	// (the proxy was killed as it wrote it), which is not in lines.
	cut int
	// end is how the conversation ended, from the record's last line; Why
	// is empty when the record does not say (a proxy killed, or older).
	end recordEnd
}

// recordEnd is the record's last line: how the conversation ended.
type recordEnd struct {
	Why string `json:"end"`
	// ByEditor: the editor (or a signal to the proxy) ended it, so that
	// the requests still open were cut short, not left unanswered.
	ByEditor bool `json:"by_editor,omitempty"`
}

// cutShort reports whether requests still open at the record's end were
// cut short by the editor, or may have been: only an agent that ended the
// conversation itself left them unanswered.
func (e recordEnd) cutShort() bool { return e.Why == "" || e.ByEditor }

// readRecording reads the proxy's record: a JSON object per line, each a
// Line, and last the conversation's end. The lines come back in the order
// of their sequence numbers, which the proxy writes them in (a record cut
// or joined by hand may not be), numbered from 1 without gaps. A record
// cut in the middle of its last line (a proxy killed as it wrote) is read
// up to that line; a record with no line, or with a line that is not a
// recorded message before its last, is refused.
func readRecording(r io.Reader) (recording, error) {
	var rec recording
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		b, err := br.ReadBytes('\n')
		whole := len(b) > 0 && b[len(b)-1] == '\n'
		if b = bytes.TrimSpace(b); len(b) > 0 {
			if rec.end.Why != "" {
				return recording{}, fmt.Errorf("line %d of the recording follows the conversation's end", n)
			}
			var l Line
			var end recordEnd
			switch jerr := json.Unmarshal(b, &l); {
			case jerr != nil && !whole:
				rec.cut = len(b)
			case jerr != nil:
				return recording{}, fmt.Errorf("line %d of the recording is not a recorded message: %w", n, jerr)
			case l.Dir == "" && json.Unmarshal(b, &end) == nil && end.Why != "":
				rec.end = end
			case l.Dir != toAgent && l.Dir != fromAgent:
				return recording{}, fmt.Errorf("line %d of the recording has direction %q, neither %q nor %q", n, l.Dir, toAgent, fromAgent)
			default:
				rec.lines = append(rec.lines, l)
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return recording{}, err
		}
	}
	if len(rec.lines) == 0 {
		return recording{}, errors.New("the recording holds no message: is it the file acpcheck proxy -record wrote?")
	}
	slices.SortStableFunc(rec.lines, func(a, b Line) int { return a.Seq - b.Seq })
	for i := range rec.lines {
		rec.lines[i].Seq = i + 1
	}
	return rec, nil
}

// readRecordingFile reads the recording in the file name.
func readRecordingFile(name string) (recording, error) {
	f, err := os.Open(name)
	if err != nil {
		return recording{}, err
	}
	defer f.Close()
	return readRecording(f)
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
func replay(name string, rec recording) *Report {
	lines := make([]Line, len(rec.lines))
	for i, l := range rec.lines {
		l.msg = parse(l.bytes())
		lines[i] = l
	}
	var found []violation
	m := newMonitor(func(v violation) { found = append(found, v) })
	for _, l := range lines {
		m.cutShort(l.Size > 0)
		m.line(l.Dir, l.bytes(), l.Ms)
	}
	m.end(rec.end.cutShort())
	proto, agent := negotiated(lines)
	rep := &Report{Recording: name, AgentName: agent, Cut: rec.cut, Ended: rec.end.Why}
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
				res.Findings = append(res.Findings, Finding{Detail: v.Detail, Lines: v.Lines, Protocol: proto, Side: v.Side})
			}
		}
		if res.Status == Pass && !m.wasChecked(rule) {
			res.Status, res.Why = NotBrought, cmp.Or(m.whyUnjudged(rule), whyNotWatched[rule.ID])
			if proto == 2 && rule.ID == ruleCancelStop.ID {
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
	rec, err := readRecordingFile(name)
	if err != nil {
		fmt.Fprintf(stderr, "acpcheck report: %s: %v\n", name, err)
		return 2
	}
	if rec.cut > 0 {
		fmt.Fprintf(stderr, "acpcheck report: %s was cut in the middle of its last line (%d bytes, not read): the report is on the %d whole lines before it\n", name, rec.cut, len(rec.lines))
	}
	return printReport(replay(name, rec), *asJSON, *htmlOut, stdout, stderr)
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
