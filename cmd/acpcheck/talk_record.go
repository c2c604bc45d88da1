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
	// InputEnded, when the editor ended it: the number of the first line
	// after the editor's input ended (or the signal came); 0 when unknown.
	InputEnded int `json:"input_ended,omitempty"`
	// CancelsUnderWay are the lines of the session/cancel (or the
	// prompt's $/cancel_request) the client sent to a turn it had asked to
	// be slow and saw under way (acpcheck run says which of its cancels
	// were): an answer right after one of them did not cross it (see
	// crossWindow).
	CancelsUnderWay []int `json:"cancels_under_way,omitempty"`
}

// ender says who ended the recorded conversation, for what its end leaves
// open: the agent, unless the record says the editor did, or has no end
// line (the proxy was killed).
func (e recordEnd) ender() conversationEnder {
	if e.Why == "" || e.ByEditor {
		return conversationEnder{byClient: true, inputEnded: e.InputEnded}
	}
	return conversationEnder{}
}

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
