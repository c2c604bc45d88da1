package main

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/acpkit/acprpc"
)

// The two directions of the wire.
const (
	toAgent   = "to_agent"
	fromAgent = "from_agent"
)

// Line is one message on the wire, exactly as sent, with when and which way.
type Line struct {
	Seq int     `json:"seq"`
	Ms  float64 `json:"t_ms"` // since the agent started
	Dir string  `json:"dir"`
	Raw string  `json:"raw"`
	// Base64 holds a line that is not UTF-8, which Raw could not keep byte
	// for byte (JSON would turn each bad byte into U+FFFD); Raw is empty
	// then. The proxy's record and run's -json report both write it so.
	Base64 []byte `json:"raw_base64,omitempty"`
	// Size is, for a line longer than acpcheck keeps, its length: Raw (or
	// Base64) holds only its first bytes. Zero for a line kept whole.
	Size int `json:"truncated_from,omitempty"`

	msg parsed
}

// setRaw keeps raw, the line as it was on the wire, byte for byte.
func (l *Line) setRaw(raw []byte) {
	if utf8.Valid(raw) {
		l.Raw, l.Base64 = string(raw), nil
		return
	}
	l.Raw, l.Base64 = "", bytes.Clone(raw)
}

// parsed is what a line says as JSON-RPC; every member is empty for a line
// that is not a JSON object.
type parsed struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acprpc.Error   `json:"error"`
}

func parse(raw []byte) parsed {
	var p parsed
	if json.Unmarshal(raw, &p) == nil {
		return p
	}
	// An answer whose error is not JSON-RPC's shape (a code that is a
	// string) is still an answer: answer-envelope says what is wrong with it.
	var loose struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if json.Unmarshal(raw, &loose) != nil || loose.Method != nil || loose.Error == nil {
		return parsed{}
	}
	return parsed{ID: loose.ID, Result: loose.Result, Error: &acprpc.Error{Message: string(loose.Error)}}
}

// hasID reports whether the message carries an ID other than null.
func (p parsed) hasID() bool { return len(p.ID) > 0 && string(p.ID) != "null" }

func (p parsed) isRequest() bool      { return p.Method != "" && p.hasID() }
func (p parsed) isNotification() bool { return p.Method != "" && !p.hasID() }
func (p parsed) isAnswer() bool       { return p.Method == "" && (p.Result != nil || p.Error != nil) }

// answers reports whether p is an answer to the request whose ID is id.
func (p parsed) answers(id json.RawMessage) bool { return p.isAnswer() && bytes.Equal(p.ID, id) }

// param returns one member of the params, as JSON.
func (p parsed) param(name string) json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.Params, &m)
	return m[name]
}

// sessionID is the params' sessionId, if any.
func (p parsed) sessionID() string {
	var s string
	_ = json.Unmarshal(p.param("sessionId"), &s)
	return s
}

// stopReason is a result's stopReason, if any.
func (p parsed) stopReason() string {
	var r struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(p.Result, &r)
	return r.StopReason
}

// updateKind is a session/update's kind (agent_message_chunk, ...).
func (p parsed) updateKind() string {
	var u struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	_ = json.Unmarshal(p.param("update"), &u)
	return u.SessionUpdate
}

// updateMember is a string member of a session/update's update, such as a
// state_update's state.
func (p parsed) updateMember(name string) string {
	var v string
	_ = json.Unmarshal(p.updateMembers()[name], &v)
	return v
}

// updateMembers is a session/update's update, member by member.
func (p parsed) updateMembers() map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.param("update"), &m)
	return m
}

// resultMember is a string member of a result.
func (p parsed) resultMember(name string) string {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(p.Result, &m)
	var v string
	_ = json.Unmarshal(m[name], &v)
	return v
}

// transcript is every line of a conversation, in the order each direction
// carried them. Waiters are woken on every new line.
type transcript struct {
	start time.Time

	mu      sync.Mutex
	lines   []Line
	kept    int // the bytes of the lines kept
	changed chan struct{}
}

func newTranscript() *transcript {
	return &transcript{start: time.Now(), changed: make(chan struct{})}
}

// The transcript's bound: once it holds maxTranscript bytes of lines, each
// further line keeps only its first maxLateLine bytes, marked with its size.
const (
	maxTranscript = 256 << 20
	maxLateLine   = 4 << 10
)

// add records a line and returns its sequence number.
func (w *transcript) add(dir string, raw []byte) int { return w.addSized(dir, raw, len(raw)) }

// addSized records a line of size bytes, of which raw is the first (all
// but for one over the connection's limit), and returns its number.
func (w *transcript) addSized(dir string, raw []byte, size int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.kept >= maxTranscript && len(raw) > maxLateLine {
		raw = raw[:maxLateLine]
	}
	w.kept += len(raw)
	l := Line{Seq: len(w.lines) + 1, Ms: float64(time.Since(w.start).Microseconds()) / 1000, Dir: dir, msg: parse(raw)}
	l.setRaw(raw)
	if size > len(raw) {
		l.Size = size
	}
	w.lines = append(w.lines, l)
	close(w.changed)
	w.changed = make(chan struct{})
	return l.Seq
}

// hooks record every message the client's Conn receives; what it sends is
// recorded by the tap, as it is written (see tap.Send).
func (w *transcript) hooks() acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(_ context.Context, m *acprpc.Message) { w.addSized(fromAgent, m.Raw, m.Size) },
	}
}

// all returns a copy of the lines so far.
func (w *transcript) all() []Line {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Line(nil), w.lines...)
}

// next is the sequence number the next line will get.
func (w *transcript) next() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.lines) + 1
}

// await returns the first line from seq on that match holds of, waiting for
// it until ctx ends; ok is false then.
func (w *transcript) await(ctx context.Context, from int, match func(Line) bool) (Line, bool) {
	for {
		w.mu.Lock()
		for _, l := range w.lines[min(from-1, len(w.lines)):] {
			if match(l) {
				w.mu.Unlock()
				return l, true
			}
		}
		from = len(w.lines) + 1
		changed := w.changed
		w.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return Line{}, false
		}
	}
}

// tap is the client's transport to the agent: the agent's stdio or a
// remote connection, with a way to write lines the Conn would never write
// (a malformed line, a cancel for an ID it never used), in order with the
// Conn's own.
type tap struct {
	mu sync.Mutex
	s  acprpc.Transport
	w  *transcript
}

func (t *tap) Recv() ([]byte, error) { return t.s.Recv() }

// Send records msg and writes it, under the lock inject writes under, so
// that the transcript's order of the client's lines is the wire's: a line
// recorded by a hook after the write could race an injected one.
func (t *tap) Send(msg []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w.add(toAgent, msg)
	return t.s.Send(msg)
}

func (t *tap) Flush() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.flush()
}

// flush flushes a transport that buffers, as a Stream does.
func (t *tap) flush() error {
	if f, ok := t.s.(interface{ Flush() error }); ok {
		return f.Flush()
	}
	return nil
}

func (t *tap) Close() error { return t.s.Close() }

// inject writes raw to the agent as a line of its own, and returns its
// sequence number in the transcript.
func (t *tap) inject(raw string) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	seq := t.w.add(toAgent, []byte(raw))
	if err := t.s.Send([]byte(raw)); err != nil {
		return seq, err
	}
	return seq, t.flush()
}
