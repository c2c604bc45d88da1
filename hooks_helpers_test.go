package acprpc_test

import (
	"io"
	"log/slog"
	"sync"
)

const slogInfo = slog.LevelInfo

func newJSONLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// lockedWriter serialises writes to w, which the read and writer goroutines
// both log to.
type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}
