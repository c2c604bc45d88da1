package main

import (
	"encoding/json"
	"fmt"
	"io"
)

// Report is a run's outcome: each rule's result, and the whole wire.
type Report struct {
	Agent []string `json:"agent"` // the command run; empty for a replay
	// Recording is the file a replayed conversation was read from, and
	// AgentName how the agent named itself in its initialize answer there.
	Recording string `json:"recording,omitempty"`
	// CancelsUnderWay are, for run, the lines of Wire whose session/cancel
	// (or a prompt's $/cancel_request) went to a slow turn seen under way:
	// a record of Wire ends with them (recordEnd), so that a replay judges
	// the cancels as run does.
	CancelsUnderWay []int  `json:"cancels_under_way,omitempty"`
	AgentName       string `json:"agent_name,omitempty"`
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
