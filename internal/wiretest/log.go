package wiretest

import (
	"context"
	"log/slog"
	"strings"
	"testing"
)

// Record is one logged line: its level, message and attributes as text.
type Record struct {
	Level   slog.Level
	Message string
	Attrs   map[string]string
}

// Logger returns a logger that records into r, for Options.Logger.
func (r *Recorder) Logger() *slog.Logger { return slog.New(logHandler{l: r}) }

// Logged returns what was logged so far.
func (r *Recorder) Logged() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Record(nil), r.logged...)
}

// FindLogged returns the first record at level or above whose message
// contains substr.
func (r *Recorder) FindLogged(level slog.Level, substr string) (Record, bool) {
	for _, r := range r.Logged() {
		if r.Level >= level && strings.Contains(r.Message, substr) {
			return r, true
		}
	}
	return Record{}, false
}

// AwaitLogged waits for a record at level or above whose message contains
// substr, logged before or after the call, and returns the first; it fails
// the test if ctx ends first. A line logged on a goroutine the test cannot
// wait for (after a handler's return) is waited for so.
func (r *Recorder) AwaitLogged(t testing.TB, ctx context.Context, level slog.Level, substr string) Record {
	t.Helper()
	var found Record
	err := r.await(ctx, func() bool {
		for _, rec := range r.logged {
			if rec.Level >= level && strings.Contains(rec.Message, substr) {
				found = rec
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("wiretest: waiting for a %s line with %q: %v (logged: %v)", level, substr, err, r.Logged())
	}
	return found
}

type logHandler struct {
	l     *Recorder
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
	h.l.note(func() { h.l.logged = append(h.l.logged, rec) })
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{l: h.l, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

func (h logHandler) WithGroup(string) slog.Handler { return h }
