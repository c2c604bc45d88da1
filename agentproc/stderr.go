package agentproc

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

func stderrSink(w io.Writer, l *lineLogger) io.Writer {
	if w == nil {
		return l
	}
	return io.MultiWriter(w, l)
}

// stderrCopy copies the agent's stderr to where it goes, when that is not a
// file the agent could write itself.
type stderrCopy struct {
	r         *os.File
	w         io.Writer
	log       *lineLogger // flushed as the copy ends, if set
	done      chan struct{}
	afterExit exitCut
}

func (s *stderrCopy) run() {
	defer close(s.done)
	if s.log != nil {
		defer s.log.flush() // by this goroutine: a write stuck in the logger holds its lock
	}
	buf := make([]byte, 32<<10)
	for {
		gapped := s.afterExit.arm(s.r)
		n, err := s.r.Read(buf)
		if n > 0 {
			if _, werr := s.w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !gapped && s.afterExit.done() && errors.Is(err, os.ErrDeadlineExceeded) {
				continue // a read the exit's cut interrupted: copy what the pipe still holds
			}
			return
		}
	}
}

// finish, once the agent has exited, lets the copy reach the end of the
// agent's stderr, or stops it when drained ends first: a child of the agent
// may hold the pipe. A copy still going stuckWrite after the cut is stuck
// in a write to a destination that takes no more (a pipe nobody reads, a
// logger that blocks): it is left to end when that write does, so that
// nothing the caller gave can hold the agent's end forever.
func (s *stderrCopy) finish(drained <-chan struct{}) {
	if s.afterExit.after(s.done, drained, s.r) {
		stuck := time.NewTimer(stuckWrite)
		defer stuck.Stop()
		select {
		case <-s.done:
		case <-stuck.C:
		}
	}
	s.r.Close()
}

// stuckWrite is how long finish waits for the copy once it has cut it: the
// reads after the cut take at most maxExitTail, and a write of what they
// read any longer is stuck.
const stuckWrite = maxExitTail + exitDrain

// lineLogger writes each line of the agent's stderr to a logger. Lines are
// cut at maxStderrLine so that an agent writing without newlines cannot
// grow it.
type lineLogger struct {
	log *slog.Logger
	cmd *exec.Cmd // started before its stderr is copied here

	mu  sync.Mutex
	buf []byte
}

const maxStderrLine = 64 << 10

func (l *lineLogger) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			room := maxStderrLine - len(l.buf)
			if len(b) < room {
				l.buf = append(l.buf, b...)
				break
			}
			l.buf = append(l.buf, b[:room]...)
			b = b[room:]
			l.emit()
			continue
		}
		l.buf = append(l.buf, b[:i]...)
		b = b[i+1:]
		l.emit()
	}
	return n, nil
}

// flush logs a last line that had no newline.
func (l *lineLogger) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.buf) > 0 {
		l.emit()
	}
}

func (l *lineLogger) emit() {
	line := string(bytes.TrimSuffix(l.buf, []byte("\r")))
	l.buf = l.buf[:0]
	l.log.Info("agent stderr", "line", line, "pid", l.cmd.Process.Pid)
}
