package demo

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
	"time"
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

// Recorder taps both directions of a connection and keeps every line with
// the time it went by. Wrap the peer's pipes with Reader and Writer before
// handing them to acprpc.NewStreamPipes.
type Recorder struct {
	mu      sync.Mutex
	start   time.Time
	lines   []Line
	partial [2][]byte
}

// NewRecorder starts the clock.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Reader records what is read from r as going dir; closing it closes r.
func (rec *Recorder) Reader(dir Direction, r io.ReadCloser) io.ReadCloser {
	return &tapReader{rc: r, rec: rec, dir: dir}
}

// Writer records what is written to w as going dir; closing it closes w.
func (rec *Recorder) Writer(dir Direction, w io.WriteCloser) io.WriteCloser {
	return &tapWriter{wc: w, rec: rec, dir: dir}
}

// Lines returns the lines recorded so far, in the order they went by.
func (rec *Recorder) Lines() []Line {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]Line(nil), rec.lines...)
}

// see splits b into lines; an unfinished line waits for the rest.
func (rec *Recorder) see(dir Direction, b []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	at := time.Since(rec.start)
	buf := append(rec.partial[dir], b...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		raw := bytes.TrimRight(buf[:i], "\r")
		buf = buf[i+1:]
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		l := Line{At: at, Dir: dir, Raw: append([]byte(nil), raw...)}
		_ = json.Unmarshal(l.Raw, &l.Msg) // a bad line is still shown raw
		rec.lines = append(rec.lines, l)
	}
	rec.partial[dir] = append([]byte(nil), buf...)
}

type tapReader struct {
	rc  io.ReadCloser
	rec *Recorder
	dir Direction
}

func (t *tapReader) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	if n > 0 {
		t.rec.see(t.dir, p[:n])
	}
	return n, err
}

func (t *tapReader) Close() error { return t.rc.Close() }

type tapWriter struct {
	wc  io.WriteCloser
	rec *Recorder
	dir Direction
}

func (t *tapWriter) Write(p []byte) (int, error) {
	t.rec.see(t.dir, p) // before the write: the peer may answer before it returns
	return t.wc.Write(p)
}

func (t *tapWriter) Close() error { return t.wc.Close() }
