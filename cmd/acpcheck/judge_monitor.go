package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
)

// monitor watches a conversation go by, line by line in each direction,
// and reports each rule broken as soon as a line shows it. It never holds
// a line back: the proxy forwards first and tells the monitor after.
type monitor struct {
	mu     sync.Mutex
	seq    int
	report func(v violation)

	// pending holds, for each direction, the requests sent that way and
	// not yet answered, by ID.
	pending map[string]map[string]*inFlight
	// answered holds the IDs answered so far, for each direction of the
	// requests.
	answered map[string]map[string]bool
	// unparsed counts the lines that were not messages (not JSON, or JSON
	// of no message's shape), for each direction of the line: each may get
	// one error answer without an ID.
	unparsed map[string]int
	// idle holds the sessions whose last prompt was answered, with the
	// line of the answer, until their next prompt.
	idle map[string]int
	// bursts holds, for each direction, the last burst of notifications
	// sent that way: the answers without an ID that follow it are laid at
	// its notifications, in order.
	bursts map[string]*noteBurst
	// v2 is set once initialize was answered with protocol version 2,
	// where a prompt is answered as soon as it is taken and its turn goes on
	// after the answer.
	v2 bool
	// checked holds the rules the conversation so far gave a chance to
	// break: a rule no line could have broken is not passed by a replay.
	checked map[string]bool
	// unjudged says, for a rule not checked, why: a request the rule
	// watches that the conversation's end cut short, or a cancelled turn
	// that may have ended for another reason.
	unjudged map[string]string
	// outcomeCancelled holds, for each v1 session, a permission request
	// pending at the client's session/cancel that the client then answered
	// with the cancelled outcome (its line), until the session's next
	// prompt: a turn that ends "cancelled" after it may have followed that
	// outcome, not the cancel.
	outcomeCancelled map[string]int
	// requestCancelled holds, by ID, the answered prompts $/cancel_request
	// cancelled, with the lines of the prompt, the cancel and the answer:
	// a second answer breaks cancel-request too.
	requestCancelled map[string][]int
	// turns are the prompts' turns so far, in order of their prompts.
	turns []turnSpan
	// underWay are the lines of the session/cancel (or the prompt's
	// $/cancel_request) the client sent to a turn it asked to be slow and
	// saw under way (see crossWindow).
	underWay []int
	// ms is when the line being taken went.
	ms float64
	// cut: the next line is cut short (see cutShort).
	cut bool
}

// noteBurst is the notifications one side sent last, together: up to a
// line of the other side's or a request of its own.
type noteBurst struct {
	seqs     []int
	open     bool // the next notification of that side joins it
	answered int  // the answers without an ID laid at it so far
}

func (b *noteBurst) add(seq int) {
	if !b.open {
		b.seqs, b.answered, b.open = nil, 0, true
	}
	b.seqs = append(b.seqs, seq)
}

// answeredBy lays one more answer without an ID at the burst: at its next
// notification not yet answered, or its last.
func (b *noteBurst) answeredBy() (int, bool) {
	if len(b.seqs) == 0 {
		return 0, false
	}
	i := min(b.answered, len(b.seqs)-1)
	b.answered++
	return b.seqs[i], true
}

// inFlight is a request awaiting its answer.
type inFlight struct {
	seq       int
	method    string
	session   string
	cancelled string  // what cancelled it: "session/cancel", "$/cancel_request" or ""
	cancelMs  float64 // when
	cancelSeq int     // the line that did
	// requestCancelSeq is the line of the first $/cancel_request of it, 0
	// if none, sent requestCancelMs into the conversation: a prompt's, which
	// cancel-request judges, is kept apart from the session/cancel that may
	// follow it.
	requestCancelSeq int
	requestCancelMs  float64
	// clientAnsweredSeq is, for a prompt, the line of the client's last
	// answer to a request of its session while it ran: a cancel before it
	// was read by the agent before the prompt's answer (see
	// turnWaitedOnClient).
	clientAnsweredSeq int
	// sessionCancelled: a permission request of the agent's pending when
	// the client sent session/cancel for its session (v1), on line
	// sessionCancelSeq, which the client owes the cancelled outcome.
	sessionCancelled bool
	sessionCancelSeq int
}

// violation is one broken rule, with the lines (by number in the
// conversation) that show it.
type violation struct {
	Rule   Rule
	Detail string
	Lines  []int
	Side   string // who broke it: "agent" or "client"
}

// The sides of a conversation, as findings name them.
const (
	sideAgent  = "agent"
	sideClient = "client"
)

// sideOf is the side that sends the lines going dir.
func sideOf(dir string) string {
	if dir == toAgent {
		return sideClient
	}
	return sideAgent
}

func newMonitor(report func(violation)) *monitor {
	m := &monitor{
		report:           report,
		pending:          map[string]map[string]*inFlight{toAgent: {}, fromAgent: {}},
		answered:         map[string]map[string]bool{toAgent: {}, fromAgent: {}},
		unparsed:         map[string]int{},
		idle:             map[string]int{},
		checked:          map[string]bool{},
		unjudged:         map[string]string{},
		outcomeCancelled: map[string]int{},
		requestCancelled: map[string][]int{},
		bursts:           map[string]*noteBurst{toAgent: {}, fromAgent: {}},
	}
	return m
}

func other(dir string) string {
	if dir == toAgent {
		return fromAgent
	}
	return toAgent
}

// line takes one whole line that went dir, ms after the conversation
// began, and returns its number.
func (m *monitor) line(dir string, raw []byte, ms float64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seq++
	seq := m.seq
	m.ms = ms
	p := parse(raw)
	m.judgeLine(dir, seq, raw, p)
	m.bursts[other(dir)].open = false // a line of the other side ends its burst
	switch {
	case p.isRequest():
		m.bursts[dir].open = false
		m.request(dir, seq, p)
	case p.isNotification():
		m.bursts[dir].add(seq)
		m.notification(dir, seq, p)
	case p.isAnswer():
		m.answer(dir, seq, p)
	case len(bytes.TrimSpace(raw)) > 0:
		// Not JSON, or JSON that is no message ({"foo":1}): JSON-RPC
		// answers it with an error and "id": null (-32700, -32600).
		m.unparsed[dir]++
	}
	return seq
}

func (m *monitor) request(dir string, seq int, p parsed) {
	m.checked[ruleOneAnswer.ID], m.checked[ruleUnknownID.ID] = true, true
	m.pending[dir][string(p.ID)] = &inFlight{seq: seq, method: p.Method, session: p.sessionID()}
	if dir == toAgent {
		delete(m.requestCancelled, string(p.ID)) // the ID is another request's now
	}
	if dir == toAgent && p.Method == "session/prompt" {
		m.turnBegan(p.sessionID(), seq)
		delete(m.idle, p.sessionID())
		delete(m.outcomeCancelled, p.sessionID())
	}
}

func (m *monitor) notification(dir string, seq int, p parsed) {
	m.checked[ruleNoteUnanswered.ID] = true
	switch {
	case p.Method == "$/cancel_request":
		r := m.pending[dir][string(p.param("requestId"))]
		if r != nil && r.cancelled == "" {
			r.cancelled, r.cancelMs, r.cancelSeq = p.Method, m.ms, seq
		}
		if r != nil && r.requestCancelSeq == 0 {
			r.requestCancelSeq, r.requestCancelMs = seq, m.ms
		}
	case dir == toAgent && p.Method == "session/cancel":
		for _, r := range m.pending[toAgent] {
			if r.method == "session/prompt" && r.session == p.sessionID() {
				r.cancelled, r.cancelMs, r.cancelSeq = p.Method, m.ms, seq
			}
		}
		m.permissionsOwed(p.sessionID(), seq)
	case dir == fromAgent && p.Method == "session/update":
		at, ok := m.idle[p.sessionID()]
		switch {
		case m.v2 && isIdleUpdate(p):
			m.turnsEnded(p.sessionID(), 0, seq)
			m.idle[p.sessionID()] = seq
			m.checked[ruleUpdateAfter.ID] = true
		case m.v2 && p.updateKind() == "state_update": // new work began
			delete(m.idle, p.sessionID())
		case ok && slices.Contains(turnUpdates, p.updateKind()):
			end := "its prompt was answered"
			if m.v2 {
				end = "its work's idle state_update"
			}
			m.flag(ruleUpdateAfter, []int{at, seq}, "a %s update of session %s came after %s", p.updateKind(), p.sessionID(), end)
		}
	}
}

func (m *monitor) answer(dir string, seq int, p parsed) {
	reqDir := other(dir)
	if !p.hasID() {
		if m.unparsed[reqDir] > 0 && p.Error != nil {
			m.unparsed[reqDir]--
			return
		}
		if note, ok := m.bursts[reqDir].answeredBy(); ok {
			m.flagBy(dir, ruleNoteUnanswered, []int{note, seq}, "an answer without an ID, after the notification on line %d: notifications are never answered", note)
			return
		}
		m.flagBy(dir, ruleNoteUnanswered, []int{seq}, "an answer without an ID, to no notification: notifications are never answered")
		return
	}
	id := string(p.ID)
	r := m.pending[reqDir][id]
	if r == nil {
		switch {
		case m.answered[reqDir][id]:
			m.flagBy(dir, ruleOneAnswer, []int{seq}, "a second answer to ID %s", id)
			if reqDir == toAgent {
				m.requestCancelledAgain(id, seq)
			}
		default:
			m.echoBroken(dir, seq, p)
			m.flagBy(dir, ruleUnknownID, []int{seq}, "an answer to ID %s, which was never sent", id)
		}
		return
	}
	m.checked[ruleIDEcho.ID] = true
	delete(m.pending[reqDir], id)
	m.answered[reqDir][id] = true
	if reqDir == fromAgent {
		m.clientAnswer(r, seq, p)
		m.turnWaitedOnClient(r.session, seq)
	}
	if reqDir == toAgent && r.method == "initialize" {
		var res struct {
			ProtocolVersion int `json:"protocolVersion"`
		}
		_ = json.Unmarshal(p.Result, &res)
		m.v2 = res.ProtocolVersion == 2
	}
	if reqDir == toAgent && r.method == "session/prompt" && (!m.v2 || p.Error != nil) {
		m.turnsEnded(r.session, r.seq, seq)
	}
	// The rules of a prompt's answer are v1's: in v2 the answer says only
	// that the prompt was taken.
	if reqDir != toAgent || r.method != "session/prompt" || m.v2 {
		return
	}
	m.idle[r.session] = seq
	m.checked[ruleUpdateAfter.ID] = true
	m.cancelledPrompt(r, seq, p)
	m.requestCancelledPrompt(id, r, seq, p)
}

// conversationEnder is who ended a conversation, for what its end leaves
// open.
type conversationEnder struct {
	// byClient: the client (an editor), or a signal to acpcheck, ended it;
	// otherwise the agent did.
	byClient bool
	// inputEnded is the number of the first line after the client's input
	// ended (or the signal came), 0 when unknown: the lines before it are
	// what the client had sent and could have read.
	inputEnded int
}

// end reports the requests the conversation's end left unanswered: the
// agent's, when it ended the conversation itself. When the client ended it
// in the middle of a turn, or at a moment unknown, a request still open was
// cut short, not left unanswered, and the agent's requests are the client's
// to answer: neither is a finding. A client that ended it between turns,
// having read every turn's end, left unanswered the requests cancelled
// before that end, which it owed their answers.
func (m *monitor) end(e conversationEnder) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e.byClient {
		switch {
		case e.inputEnded == 0:
			m.owedCutShort("at a moment the record does not place")
		case m.turnRunningAt(e.inputEnded):
			m.owedCutShort("in the middle of a turn")
		default:
			m.cancelledUnanswered(e.inputEnded)
			m.owedCutShort("between turns") // what it owed only from its last lines on
		}
		return
	}
	var left []*inFlight
	for _, r := range m.pending[toAgent] {
		left = append(left, r)
	}
	slices.SortFunc(left, func(a, b *inFlight) int { return a.seq - b.seq })
	for _, r := range left {
		m.flag(ruleOneAnswer, []int{r.seq}, "%s was never answered", r.method)
		m.cancelledNeverAnswered(r)
		m.requestCancelledNeverAnswered(r)
	}
	m.cancelledUnanswered(0)
}

// turnSpan is a prompt's turn, from the prompt's line to the line that
// ended it (v1: the prompt's answer; v2: its work's idle state_update, or
// an error answer), 0 while it runs.
type turnSpan struct {
	session  string
	from, to int
}

// turnBegan notes a prompt's turn, on the prompt's line.
func (m *monitor) turnBegan(session string, seq int) {
	m.turns = append(m.turns, turnSpan{session: session, from: seq})
}

// turnsEnded ends, on line seq, the session's turns still running that
// began with the prompt on line from, or with any prompt when from is 0.
func (m *monitor) turnsEnded(session string, from, seq int) {
	for i := range m.turns {
		t := &m.turns[i]
		if t.session == session && t.to == 0 && (from == 0 || t.from == from) {
			t.to = seq
		}
	}
}

// turnRunningAt reports whether a turn was running when line seq went: one
// begun before it and not ended before it.
func (m *monitor) turnRunningAt(seq int) bool {
	for _, t := range m.turns {
		if t.from < seq && (t.to == 0 || t.to >= seq) {
			return true
		}
	}
	return false
}

// tooLong reports a line longer than acpcheck keeps: it was forwarded
// whole, and the record keeps its first bytes, marked.
func (m *monitor) tooLong(seq int, dir string, size int) {
	m.report(violation{Rule: ruleLineSize, Detail: fmt.Sprintf("line %d (%s) is %d bytes, more than the %d acpcheck keeps: it was forwarded whole, and the record keeps its first %d bytes, marked truncated_from", seq, dir, size, maxKeptLine, maxKeptLine), Lines: []int{seq}, Side: sideOf(dir)})
}

// wasChecked reports whether the conversation so far gave rule a chance to
// be broken.
func (m *monitor) wasChecked(rule Rule) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.checked[rule.ID]
}

// whyUnjudged says why a request rule watches was not judged, or "".
func (m *monitor) whyUnjudged(rule Rule) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.unjudged[rule.ID]
}

// flag reports a rule the agent broke.
func (m *monitor) flag(rule Rule, lines []int, format string, args ...any) {
	m.flagBy(fromAgent, rule, lines, format, args...)
}

// flagBy reports a rule broken by the side that sends the lines going dir.
func (m *monitor) flagBy(dir string, rule Rule, lines []int, format string, args ...any) {
	m.report(violation{Rule: rule, Detail: fmt.Sprintf(format, args...), Lines: lines, Side: sideOf(dir)})
}

// turnUpdates are the session/update kinds that belong to a turn.
var turnUpdates = []string{"agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
