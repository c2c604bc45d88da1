package wiretest

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// Run runs f once per transport, as a subtest named after it.
func Run(t *testing.T, f func(t *testing.T, tr Transport)) {
	t.Helper()
	for _, tr := range Transports {
		t.Run(tr.Name, func(t *testing.T) { f(t, tr) })
	}
}

// ByID indexes answers by their ID's exact text.
func ByID(msgs []Msg) map[string]Msg {
	out := make(map[string]Msg, len(msgs))
	for _, m := range msgs {
		out[string(m.ID)] = m
	}
	return out
}

// Log records what a Conn logs.
type Log struct {
	mu      sync.Mutex
	records []Record
}

// Record is one logged line: its level, message and attributes as text.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// NewLog returns a logger recording into a new Log.
func NewLog() (*slog.Logger, *Log) {
	l := &Log{}
	return slog.New(logHandler{l: l}), l
}

// Records returns what was logged so far.
func (l *Log) Records() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.records...)
}

// Find returns the first record at level or above whose message contains
// substr.
func (l *Log) Find(level slog.Level, substr string) (Record, bool) {
	for _, r := range l.Records() {
		if r.Level >= level && strings.Contains(r.Message, substr) {
			return r, true
		}
	}
	return Record{}, false
}

type logHandler struct {
	l     *Log
	attrs []slog.Attr
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	rec := Record{Level: r.Level, Message: r.Message, Attrs: map[string]string{}}
	for _, a := range h.attrs {
		rec.Attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		rec.Attrs[a.Key] = a.Value.String()
		return true
	})
	h.l.mu.Lock()
	h.l.records = append(h.l.records, rec)
	h.l.mu.Unlock()
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h logHandler) WithGroup(string) slog.Handler { return h }

// Recv waits for a value from ch, or for ch to be closed, and returns it;
// if ctx ends first it fails the test with every goroutine's stack.
func Recv[T any](t testing.TB, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("wiretest: timed out waiting: %v; goroutines:\n%s", ctx.Err(), Goroutines())
		var zero T
		return zero
	}
}

// RunStreams runs f once per byte-stream transport, for a test of the line
// framing itself.
func RunStreams(t *testing.T, f func(t *testing.T, tr Transport)) {
	t.Helper()
	for _, tr := range Transports {
		if tr.Stream {
			t.Run(tr.Name, func(t *testing.T) { f(t, tr) })
		}
	}
}
