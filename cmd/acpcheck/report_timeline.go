package main

import (
	"encoding/json"
	"fmt"
)

// row is one line of a conversation's timeline: a request from its start
// to its answer, with the lines that belong to it (its answers, the cancels
// of it, and for a prompt its session's updates), or a single line that
// belongs to no request (a notification, an answer to no request, a line
// that is not JSON).
type row struct {
	first Line // the request, or the single line
	lines []Line
	// answer is the first answer to the request; Seq 0 if none came.
	answer Line
	// cancels are the lines that cancelled the request.
	cancels []Line
}

// isRequest says whether the row is a request's, not a single line's.
func (r *row) isRequest() bool { return r.first.msg.isRequest() }

// rowKey names a request by the direction it went and its ID.
type rowKey struct{ dir, id string }

// timeline lays a conversation's lines out in rows, in the order of their
// first lines. Every line is in exactly one row.
func timeline(lines []Line) []*row {
	var rows []*row
	requests := map[rowKey]*row{}
	lastPrompt := map[string]*row{} // session → its latest prompt
	single := func(l Line) {
		rows = append(rows, &row{first: l, lines: []Line{l}})
	}
	for _, l := range lines {
		p := l.msg
		switch {
		case p.isRequest():
			r := &row{first: l, lines: []Line{l}}
			rows = append(rows, r)
			requests[rowKey{l.Dir, string(p.ID)}] = r
			if l.Dir == toAgent && p.Method == "session/prompt" {
				lastPrompt[p.sessionID()] = r
			}
		case p.isAnswer() && p.hasID():
			r := requests[rowKey{other(l.Dir), string(p.ID)}]
			if r == nil {
				single(l)
				break
			}
			r.lines = append(r.lines, l)
			if r.answer.Seq == 0 {
				r.answer = l
			}
		case p.Method == "$/cancel_request":
			r := requests[rowKey{l.Dir, string(p.param("requestId"))}]
			if r == nil || r.answer.Seq != 0 {
				single(l)
				break
			}
			r.lines = append(r.lines, l)
			r.cancels = append(r.cancels, l)
		case l.Dir == toAgent && p.Method == "session/cancel":
			r := lastPrompt[p.sessionID()]
			if r == nil || r.answer.Seq != 0 {
				single(l)
				break
			}
			r.lines = append(r.lines, l)
			r.cancels = append(r.cancels, l)
		case l.Dir == fromAgent && p.Method == "session/update" && lastPrompt[p.sessionID()] != nil:
			r := lastPrompt[p.sessionID()]
			r.lines = append(r.lines, l)
		default:
			single(l)
		}
	}
	return rows
}

// label says what a line is, in a few words: "session/prompt (ID 3)",
// "answer to ID 3", "not JSON".
func label(l Line) string {
	p := l.msg
	switch {
	case p.isRequest():
		return fmt.Sprintf("%s (ID %s)", p.Method, p.ID)
	case p.isNotification():
		if p.Method == "session/update" && p.updateKind() != "" {
			return "session/update: " + p.updateKind()
		}
		return p.Method
	case p.isAnswer() && p.hasID():
		return "answer to ID " + string(p.ID)
	case p.isAnswer():
		return "answer without an ID"
	case !json.Valid(l.bytes()):
		return "a line that is not JSON"
	}
	return "a JSON message of no kind JSON-RPC knows"
}

// outcome says how a request ended: its stop reason, its error, or that
// it was never answered.
func (r *row) outcome() string {
	if !r.isRequest() {
		return ""
	}
	if r.answer.Seq == 0 {
		return "never answered"
	}
	a := r.answer.msg
	switch {
	case a.Error != nil:
		return fmt.Sprintf("error %d %q", a.Error.Code, a.Error.Message)
	case a.stopReason() != "":
		return fmt.Sprintf("stopReason %q", a.stopReason())
	case a.resultMember("messageId") != "":
		return "messageId " + a.resultMember("messageId")
	}
	return "result"
}
