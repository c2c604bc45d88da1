package demo

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/acpv1"
	"github.com/acpkit/acprpc/acpv2"
)

// Legend explains the timeline's notation.
const Legend = `legend: C→A client to agent, A→C agent to client; ▶ request, • notification, ✂ cancellation, ↩ answer;
        #c3 is the client's request 3, #a1 the agent's request 1 (each side numbers its own);
        indented lines are the agent's work inside the prompt turn`

// reqKey names a request: who sent it and its ID.
type reqKey struct {
	from Direction
	id   string
}

func (k reqKey) tag() string {
	if k.from == ClientToAgent {
		return "#c" + k.id
	}
	return "#a" + k.id
}

// request is what the timeline learns about one request.
type request struct {
	key     reqKey
	method  string
	answers []int // indexes of its answer lines
	cancels []int // indexes of the $/cancel_request lines naming it
}

// Summary is what a timeline checked.
type Summary struct {
	OK         bool   // every check passed
	StopReason string // the last prompt turn's, if it was answered
}

// phase headings, after the specification's cascading flow; in v2 the
// prompt is answered when it is inserted, and the turn, the session's
// foreground work, ends with an idle state_update.
var phases = [...]string{
	1: "1. the prompt turn starts",
	2: "2. the agent makes concurrent requests to the client",
	3: "3. the client cancels the turn",
	4: "4. the agent cascades: one $/cancel_request per request, each with its own id",
	5: "5. the client answers the agent's requests",
	6: "6. the agent flushes its updates and ends the turn",
}

var phasesV2 = [...]string{
	1: "1. the prompt is inserted: answered with its messageId at once, and its work starts",
	2: phases[2],
	3: "3. the client cancels the turn: session/cancel",
	4: phases[4],
	5: phases[5],
	6: "6. the agent flushes its updates and ends the work: one idle state_update",
}

// Render writes lines as a timeline, or, with raw set, as the exact JSON
// lines, and then a summary of the checks every ACP conversation must pass,
// in the version the initialize exchange settled.
func Render(w io.Writer, lines []Line, raw bool) Summary {
	reqs := map[reqKey]*request{}
	var order []*request
	shown := map[int]bool{}
	promptOpen := map[string]bool{} // v1: prompt IDs awaiting their answer; v2: sessions whose work runs
	cancelled := false              // the client has cancelled the turn
	v2 := isV2(lines)
	headings := phases
	if v2 {
		headings = phasesV2
	}
	var t0 time.Duration
	if len(lines) > 0 {
		t0 = lines[0].At
	}
	for i, l := range lines {
		m := &l.Msg
		nested := len(promptOpen) > 0 &&
			((l.Dir == AgentToClient && !m.IsResponse()) || (l.Dir == ClientToAgent && m.IsResponse()))
		phase := 0
		switch {
		case m.IsRequest():
			k := reqKey{l.Dir, string(m.ID)}
			r := &request{key: k, method: m.Method}
			reqs[k] = r
			order = append(order, r)
			if l.Dir == ClientToAgent && m.Method == acpv1.MethodSessionPrompt {
				promptOpen[turnKey(v2, k.id, m)] = true
				phase = 1
			} else if nested {
				phase = 2
			}
		case m.Method == acprpc.MethodCancelRequest:
			if r := reqs[reqKey{l.Dir, string(member(m.Params, "requestId"))}]; r != nil {
				r.cancels = append(r.cancels, i)
			}
			if l.Dir == ClientToAgent {
				phase, cancelled = 3, true
			} else {
				phase = 4
			}
		case m.Method == "session/cancel":
			phase, cancelled = 3, true
		case m.IsResponse():
			k := reqKey{1 - l.Dir, string(m.ID)}
			if r := reqs[k]; r != nil {
				r.answers = append(r.answers, i)
				if r.method == acpv1.MethodSessionPrompt && !v2 {
					delete(promptOpen, k.id)
				}
			}
			switch r := reqs[k]; {
			case !cancelled:
			case l.Dir == AgentToClient:
				phase = 6
			case r != nil && len(r.cancels) == 0:
				phase = 3 // answered on the client's own cancel, before the agent's
			default:
				phase = 5
			}
		case cancelled && l.Dir == AgentToClient:
			phase = 6
		}
		if _, idle := idleOf(m); idle && v2 {
			nested = false // the work's end, beside its prompt
			delete(promptOpen, unquoted(member(m.Params, "sessionId")))
		}
		if phase > 0 && !shown[phase] {
			shown[phase] = true
			fmt.Fprintf(w, "                 ── %s\n", headings[phase])
		}
		indent := ""
		if nested {
			indent = "    "
		}
		if raw {
			fmt.Fprintf(w, "%9.1fms  %s  %s%s\n", ms(l.At-t0), l.Dir, indent, l.Raw)
		} else {
			fmt.Fprintf(w, "%9.1fms  %s  %s%s\n", ms(l.At-t0), l.Dir, indent, describe(l, reqs))
		}
	}
	return summarize(w, lines, order, v2)
}

// isV2 reports whether the conversation's initialize settled ACP v2.
func isV2(lines []Line) bool {
	for _, l := range lines {
		if l.Dir == AgentToClient && l.Msg.IsResponse() && l.Msg.Result != nil {
			if v := member(l.Msg.Result, "protocolVersion"); v != nil && member(l.Msg.Result, "info") != nil {
				return string(v) == "2"
			}
		}
	}
	return false
}

// turnKey names an open turn: by the prompt's ID in v1, where its answer
// ends it, and by its session in v2, where an idle state_update does.
func turnKey(v2 bool, id string, m *Message) string {
	if v2 {
		return unquoted(member(m.Params, "sessionId"))
	}
	return id
}

// idleOf reports whether m is v2's idle state_update, and its stop reason.
func idleOf(m *Message) (string, bool) {
	if m.Method != acpv2.MethodSessionUpdate {
		return "", false
	}
	var n acpv2.UpdateSessionNotification
	if json.Unmarshal(m.Params, &n) != nil {
		return "", false
	}
	state, _ := n.Update.Value.(acpv2.StateUpdate)
	idle, ok := state.Value.(acpv2.IdleStateUpdate)
	return string(idle.StopReason), ok
}

// permissionDetail describes a permission request's params, read with the
// v2 types, or with v1's where v2's refuse them (v1's has no title).
func permissionDetail(params json.RawMessage) string {
	var opts []string
	var toolCallID string
	var p2 acpv2.RequestPermissionRequest
	if json.Unmarshal(params, &p2) == nil {
		for _, o := range p2.Options {
			opts = append(opts, string(o.OptionID))
		}
		if subject, ok := p2.Subject.Value.(acpv2.ToolCallPermissionSubject); ok {
			toolCallID = string(subject.ToolCall.ToolCallID)
		}
	} else {
		var p1 acpv1.RequestPermissionRequest
		_ = json.Unmarshal(params, &p1)
		for _, o := range p1.Options {
			opts = append(opts, string(o.OptionID))
		}
		toolCallID = string(p1.ToolCall.ToolCallID)
	}
	return "toolCall " + toolCallID + ", options " + strings.Join(opts, "/")
}

// updateDetail describes a session/update's params. It reads them with
// the v2 types, whose unions keep what they do not know, or with v1's
// where v2's refuse them (v1's chunks have no messageId).
func updateDetail(params json.RawMessage) string {
	var n acpv2.UpdateSessionNotification
	if json.Unmarshal(params, &n) != nil {
		return v1UpdateDetail(params)
	}
	var kind, detail string
	switch u := n.Update.Value.(type) {
	case acpv2.UserMessageChunk:
		kind, detail = "user_message_chunk", chunkDetail(u.MessageID, u.Content)
	case acpv2.AgentMessageChunk:
		kind, detail = "agent_message_chunk", chunkDetail(u.MessageID, u.Content)
	case acpv2.StateUpdate:
		kind = "state_update " + unquoted(member(member(params, "update"), "state"))
		if idle, ok := u.Value.(acpv2.IdleStateUpdate); ok && idle.StopReason != "" {
			kind += ", stopReason " + string(idle.StopReason)
		}
	case acpv2.ToolCallUpdate:
		kind, detail = "tool_call_update", string(u.ToolCallID)+" "+string(u.Status)
		if u.Capabilities != nil && u.Capabilities.Cancel != nil {
			detail += ", cancellable"
		}
	case acpv2.UnknownSessionUpdate:
		kind = u.SessionUpdate
	default:
		kind = unquoted(member(member(params, "update"), "sessionUpdate"))
	}
	return strings.TrimSpace(kind + " " + detail)
}

// v1UpdateDetail describes a v1 session/update's params.
func v1UpdateDetail(params json.RawMessage) string {
	var n acpv1.SessionNotification
	_ = json.Unmarshal(params, &n)
	text := func(c acpv1.ContentBlock) string {
		t, _ := c.Value.(acpv1.TextContent)
		return strconv.Quote(clip(t.Text, 64))
	}
	switch u := n.Update.Value.(type) {
	case acpv1.UserMessageChunk:
		return "user_message_chunk " + text(u.Content)
	case acpv1.AgentMessageChunk:
		return "agent_message_chunk " + text(u.Content)
	}
	return unquoted(member(member(params, "update"), "sessionUpdate"))
}

func chunkDetail(messageID acpv2.MessageID, content acpv2.ContentBlock) string {
	text, _ := content.Value.(acpv2.TextContent)
	return strings.TrimSpace(string(messageID) + " " + strconv.Quote(clip(text.Text, 64)))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// describe is one line of the timeline, without time and direction.
func describe(l Line, reqs map[reqKey]*request) string {
	m := &l.Msg
	switch {
	case m.Method == "" && m.Result == nil && m.Error == nil:
		return "? " + string(l.Raw)
	case m.Method == acprpc.MethodCancelRequest:
		k := reqKey{l.Dir, string(member(m.Params, "requestId"))}
		what := "(no such request)"
		if r := reqs[k]; r != nil {
			what = "(" + r.method + ")"
			if len(r.answers) > 0 {
				what += ", already answered: the cancel crossed the answer"
			}
		}
		return "✂ " + m.Method + "  " + k.tag() + " " + what
	case m.Method == "session/cancel":
		return "✂ " + m.Method + "  " + unquoted(member(m.Params, "sessionId"))
	case m.IsRequest():
		return "▶ " + m.Method + " " + reqKey{l.Dir, string(m.ID)}.tag() + "  " + paramsDetail(m)
	case m.IsNotification():
		return "• " + m.Method + "  " + paramsDetail(m)
	}
	k := reqKey{1 - l.Dir, string(m.ID)}
	method, why := "(no such request)", ""
	if r := reqs[k]; r != nil {
		method = r.method
		if l.Dir == ClientToAgent && len(r.cancels) == 0 && isCancelledAnswer(*m) {
			why = "  (the client's own cancel)"
		}
	}
	if m.Error != nil {
		return fmt.Sprintf("↩ %s %s → error %d %q%s", k.tag(), method, m.Error.Code, m.Error.Message, why)
	}
	return "↩ " + k.tag() + " " + method + " → " + clip(compact(m.Result), 72) + why
}

// paramsDetail picks out what matters in a request's or notification's
// params.
func paramsDetail(m *Message) string {
	switch m.Method {
	case acpv1.MethodInitialize:
		return "protocolVersion " + string(member(m.Params, "protocolVersion"))
	case acpv1.MethodSessionNew:
		return "cwd " + unquoted(member(m.Params, "cwd"))
	case acpv1.MethodSessionPrompt:
		var p acpv1.PromptRequest // the same in v2
		_ = json.Unmarshal(m.Params, &p)
		return string(p.SessionID) + " " + strconv.Quote(clip(promptText(p.Prompt), 60))
	case acpv1.MethodSessionUpdate:
		return updateDetail(m.Params)
	case acpv1.MethodSessionRequestPermission:
		return permissionDetail(m.Params)
	case acpv1.MethodTerminalCreate:
		var p acpv1.CreateTerminalRequest
		_ = json.Unmarshal(m.Params, &p)
		return strings.Join(append([]string{p.Command}, p.Args...), " ")
	}
	return clip(compact(m.Params), 60)
}

// summarize checks the conversation and writes what it found.
func summarize(w io.Writer, lines []Line, order []*request, v2 bool) Summary {
	s := Summary{OK: true}
	check := func(ok bool, format string, args ...any) {
		mark := "✓"
		if !ok {
			mark, s.OK = "✗", false
		}
		fmt.Fprintf(w, "  %s "+format+"\n", append([]any{mark}, args...)...)
	}
	note := func(format string, args ...any) { fmt.Fprintf(w, "    "+format+"\n", args...) }
	fmt.Fprintln(w, "\nsummary")

	// Every request answered exactly once.
	var bad []string
	count := [2]int{}
	for _, r := range order {
		count[r.key.from]++
		if len(r.answers) != 1 {
			bad = append(bad, fmt.Sprintf("%s %s answered %d times", r.key.tag(), r.method, len(r.answers)))
		}
	}
	check(len(bad) == 0, "every request was answered exactly once: %d from the client, %d from the agent",
		count[ClientToAgent], count[AgentToClient])
	for _, b := range bad {
		note("%s", b)
	}

	// The cascade: when the client cancels the turn, each of the agent's
	// requests still pending gets its own $/cancel_request, unless the
	// client has already answered it as cancelled.
	if at := slices.IndexFunc(lines, func(l Line) bool {
		return l.Dir == ClientToAgent && (l.Msg.Method == "session/cancel" || l.Msg.Method == acprpc.MethodCancelRequest)
	}); at >= 0 {
		var cascaded, crossed, preempted, missed []string
		for _, r := range order {
			sent := findRequest(lines, r.key)
			if r.key.from != AgentToClient || sent > at || (len(r.answers) > 0 && r.answers[0] < at) {
				continue // not the agent's, or not pending when the client cancelled
			}
			name := r.key.tag() + " (" + r.method + ")"
			switch {
			case len(r.cancels) > 0:
				cascaded = append(cascaded, name)
				if len(r.answers) > 0 && r.answers[0] < r.cancels[0] {
					crossed = append(crossed, r.key.tag())
				}
			case len(r.answers) > 0 && isCancelledAnswer(lines[r.answers[0]].Msg):
				preempted = append(preempted, name)
			default:
				missed = append(missed, name)
			}
		}
		if len(cascaded) > 0 {
			check(true, "the agent cascaded the cancel, each request by its own id:")
			for _, c := range cascaded {
				note("$/cancel_request %s", c)
			}
		}
		if len(crossed) > 0 {
			note("%s: the agent's cancel crossed the client's own cancelled answer on the wire;", strings.Join(crossed, ", "))
			note("the client ignores a cancel for a request it has already answered")
		}
		if len(preempted) > 0 {
			note("%s: answered as cancelled by the client before the agent needed to cancel", strings.Join(preempted, " and "))
		}
		check(len(missed) == 0, "every request the agent had pending was cancelled or answered as cancelled%s",
			map[bool]string{true: "", false: "; not: " + strings.Join(missed, ", ")}[len(missed) == 0])
	}

	if v2 {
		summarizeWork(check, lines, order, &s)
	}
	// v1: updates of each turn before its answer, none after.
	for _, r := range order {
		if v2 {
			break
		}
		if r.method != acpv1.MethodSessionPrompt || len(r.answers) == 0 {
			continue
		}
		sid := string(member(lines[findRequest(lines, r.key)].Msg.Params, "sessionId"))
		before, after := 0, 0
		for i, l := range lines {
			if l.Dir != AgentToClient || l.Msg.Method != acpv1.MethodSessionUpdate ||
				string(member(l.Msg.Params, "sessionId")) != sid || i < findRequest(lines, r.key) {
				continue
			}
			if i < r.answers[0] {
				before++
			} else {
				after++
			}
		}
		check(after == 0, "%d session/update before the answer to %s, %d after", before, r.key.tag(), after)
		var res acpv1.PromptResponse
		if m := lines[r.answers[0]].Msg; m.Result != nil && json.Unmarshal(m.Result, &res) == nil {
			s.StopReason = string(res.StopReason)
		} else {
			check(false, "%s was answered with an error: a prompt turn ends with a stop reason", r.key.tag())
		}
	}

	// Nothing answers a notification, and every line was a message.
	malformed := 0
	for _, l := range lines {
		if m := l.Msg; m.Method == "" && m.Result == nil && m.Error == nil {
			malformed++
		}
	}
	check(malformed == 0, "every line was a JSON-RPC message (%d lines)", len(lines))
	if s.StopReason != "" {
		fmt.Fprintf(w, "\nstopReason: %s\n", s.StopReason)
	}
	return s
}

func findRequest(lines []Line, k reqKey) int {
	return slices.IndexFunc(lines, func(l Line) bool {
		return l.Dir == k.from && l.Msg.IsRequest() && string(l.Msg.ID) == k.id
	})
}

// isCancelledAnswer reports whether an answer says "cancelled": -32800 or
// a cancellation marker.
func isCancelledAnswer(m Message) bool {
	if m.Error != nil {
		return m.Error.Code == acprpc.CodeRequestCancelled
	}
	for _, marker := range acprpc.ACPCancelMarkers(acprpc.ProtocolV1) {
		if bytes.Equal(compactBytes(m.Result), compactBytes(marker)) {
			return true
		}
	}
	return false
}

// member returns the raw value of obj's member name, or nil.
func member(obj json.RawMessage, name string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(obj, &m) != nil {
		return nil
	}
	return m[name]
}

func unquoted(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

func compactBytes(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

func compact(raw json.RawMessage) string { return string(compactBytes(raw)) }

// clip shortens s to n runes, marking the cut.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// summarizeWork checks v2's turns: each inserted prompt answered with a
// messageId, and its session's work ended by exactly one idle state_update,
// after every update of that session and followed by none.
func summarizeWork(check func(bool, string, ...any), lines []Line, order []*request, s *Summary) {
	for _, r := range order {
		if r.method != acpv1.MethodSessionPrompt || len(r.answers) == 0 {
			continue
		}
		at := findRequest(lines, r.key)
		answer := lines[r.answers[0]].Msg
		if answer.Error != nil {
			check(answer.Error.Code == acprpc.CodeRequestCancelled, "%s was not inserted: error %d", r.key.tag(), answer.Error.Code)
			continue
		}
		check(member(answer.Result, "messageId") != nil, "%s was answered with its messageId %s", r.key.tag(), compact(member(answer.Result, "messageId")))
		sid := string(member(lines[at].Msg.Params, "sessionId"))
		updates, idles, after := 0, 0, 0
		for _, l := range lines[at:] {
			if l.Dir != AgentToClient || l.Msg.Method != acpv1.MethodSessionUpdate || string(member(l.Msg.Params, "sessionId")) != sid {
				continue
			}
			switch reason, idle := idleOf(&l.Msg); {
			case idle:
				idles++
				s.StopReason = reason
			case idles > 0:
				after++
			default:
				updates++
			}
		}
		check(idles == 1 && after == 0, "%d session/update of the work, then %d idle state_update, %d after", updates, idles, after)
	}
}
