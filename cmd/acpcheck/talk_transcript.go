package main

import (
	"context"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
)

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
