package main

import (
	"io"
	"sync"
)

// logWriter is the agent's stderr for its log: lines written while a write
// to out is under way wait, and go out together in the next write, on a
// goroutine that runs only while there is something to write. A burst of a
// thousand cancelled turns then costs a few writes to stderr instead of one
// system call per line, each taken under the log handler's lock by the
// goroutine that logs, which would hold up every other turn that logs. A
// line is written as soon as the write before it returns, so the log still
// follows the agent as it works.
type logWriter struct {
	out   io.Writer
	limit int // bytes waiting above which Write waits for out

	mu      sync.Mutex
	written sync.Cond // signalled after each write to out
	pending []byte
	spare   []byte
	writing bool // the goroutine writes, and owns out
}

// maxPendingLog bounds what waits for a stderr that nobody reads: past it,
// a line is held until out takes what waits, as a plain write would be.
const maxPendingLog = 1 << 20

func newLogWriter(out io.Writer) *logWriter {
	w := &logWriter{out: out, limit: maxPendingLog}
	w.written.L = &w.mu
	return w
}

// Write queues p, a line of the log, behind the lines before it. It never
// fails: a log that cannot be written is dropped, as a failed write of the
// handler's is.
func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing && len(w.pending) >= w.limit {
		w.written.Wait()
	}
	w.pending = append(w.pending, p...)
	if !w.writing {
		w.writing = true
		go w.run()
	}
	return len(p), nil
}

// run writes what waits, batch after batch, until nothing does.
func (w *logWriter) run() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(w.pending) > 0 {
		batch := w.pending
		w.pending, w.spare = w.spare[:0], nil
		w.mu.Unlock()
		_, _ = w.out.Write(batch)
		w.mu.Lock()
		w.spare = batch[:0]
		w.written.Broadcast()
	}
	w.writing = false
	w.written.Broadcast()
}

// Flush returns once every line written before it is out.
func (w *logWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.writing {
		w.written.Wait()
	}
}
