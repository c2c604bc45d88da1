package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

// Direction says which way a line went.
type Direction int

// The two directions of a connection.
const (
	ClientToAgent Direction = iota
	AgentToClient
)

// String names the direction as it appears in the timeline.
func (d Direction) String() string {
	if d == ClientToAgent {
		return "C→A"
	}
	return "A→C"
}

// Line is one message seen on the wire.
type Line struct {
	At  time.Duration // since the recorder started
	Dir Direction
	Raw []byte // the line, without its "\n"
	Msg Message
}

// Message is a line decoded just enough to show it.
type Message struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// IsRequest reports whether the message expects an answer.
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != nil }

// IsNotification reports whether the message is a notification.
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == nil }

// IsResponse reports whether the message answers a request.
func (m *Message) IsResponse() bool { return m.Method == "" }

// Recorder keeps every message of a client's connection with the time it
// went by, from the connection's own hooks: what the client sends as going
// to the agent, what it receives as coming from it. Pass Hooks to the
// client's Options.
type Recorder struct {
	mu    sync.Mutex // protects lines
	start time.Time
	lines []Line
}

// NewRecorder starts the clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Hooks records the client's side of the wire: every message either way,
// the ones the library builds itself included.
func (rec *Recorder) Hooks() acprpc.Hooks {
	return acprpc.Hooks{
		Received: func(_ context.Context, m *acprpc.Message) { rec.see(AgentToClient, m.Raw) },
		Sent:     func(_ context.Context, m *acprpc.Message) { rec.see(ClientToAgent, m.Raw) },
	}
}

// Lines returns the lines recorded so far, in the order they went by.
func (rec *Recorder) Lines() []Line {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Line(nil), rec.lines...)
}

// see records one message; the hook's bytes are only lent, so they are
// copied.
func (rec *Recorder) see(dir Direction, raw []byte) {
	l := Line{Dir: dir, Raw: bytes.Clone(raw)}
	_ = json.Unmarshal(l.Raw, &l.Msg) // a bad message is still shown raw
	rec.mu.Lock()
	defer rec.mu.Unlock()
	l.At = time.Since(rec.start)
	rec.lines = append(rec.lines, l)
}
