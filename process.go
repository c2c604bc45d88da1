package acprpc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"
)

// DefaultExitTimeout is how long AgentProcess.Close waits for the agent to
// exit once its stdin is closed, before it kills it.
const DefaultExitTimeout = 5 * time.Second

// ProcessOptions configure StartAgent. The zero value (or nil) gives the
// connection ACP's defaults, discards the agent's stderr, and kills an
// agent that has not exited DefaultExitTimeout after its stdin closed.
type ProcessOptions struct {
	// Conn configures the connection over the agent's stdin and stdout.
	Conn *Options

	// Stderr receives the agent's stderr as it is written. It may instead
	// be set on the command itself; setting both is an error.
	Stderr io.Writer

	// StderrLog receives each line of the agent's stderr as an Info record
	// with message "agent stderr", the line in attribute "line" and the
	// agent's process ID in "pid". It may be used together with Stderr.
	StderrLog *slog.Logger

	// ExitTimeout bounds each of Close's two waits: for the connection's
	// graceful shutdown, then for the agent to exit once its stdin is
	// closed, before it kills it. Zero means DefaultExitTimeout.
	ExitTimeout time.Duration
}

// AgentProcess is an agent running as a subprocess, with a Conn over its
// stdin and stdout. Its methods are the Conn's, with Close ending the
// process too.
type AgentProcess struct {
	*Conn

	cmd     *exec.Cmd
	stdout  *cuttableReader
	stderr  *lineLogger // nil unless ProcessOptions.StderrLog is set
	timeout time.Duration

	exited  chan struct{} // closed once the process has exited and been reaped
	waitErr error         // the process's exit, set before exited is closed

	closeOnce sync.Once
	closeErr  error
}

// StartAgent starts cmd as an ACP agent and returns the connection to it,
// served by h on this side (nil for a client that serves nothing). cmd must
// not have been started, and its Stdin and Stdout must be nil: they become
// the connection's pipes. ctx is the connection's, as for NewConn: when it
// ends the connection closes, which closes the agent's stdin.
//
// When the agent exits, on its own or not, its stdout ends and the
// connection closes: every pending call returns an error matching
// ErrConnClosed, and Exited is closed. Always call Close, which waits for
// the process and releases its pipes.
func StartAgent(ctx context.Context, cmd *exec.Cmd, h Handler, opts *ProcessOptions) (*AgentProcess, error) {
	var o ProcessOptions
	if opts != nil {
		o = *opts
	}
	switch {
	case cmd.Process != nil:
		return nil, errors.New("acprpc: StartAgent: the command was already started")
	case cmd.Stdin != nil || cmd.Stdout != nil:
		return nil, errors.New("acprpc: StartAgent: the command's Stdin and Stdout must be nil: they are the connection's")
	case cmd.Stderr != nil && o.Stderr != nil:
		return nil, errors.New("acprpc: StartAgent: the agent's stderr is set both on the command and in the options")
	}
	p := &AgentProcess{cmd: cmd, timeout: o.ExitTimeout, exited: make(chan struct{})}
	if p.timeout <= 0 {
		p.timeout = DefaultExitTimeout
	}
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("acprpc: StartAgent: %w", err)
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		return nil, fmt.Errorf("acprpc: StartAgent: %w", err)
	}
	cmd.Stdin, cmd.Stdout = stdinR, stdoutW
	if o.Stderr != nil {
		cmd.Stderr = o.Stderr
	}
	if o.StderrLog != nil {
		p.stderr = &lineLogger{log: o.StderrLog, cmd: cmd}
		cmd.Stderr = stderrSink(cmd.Stderr, p.stderr)
	}
	if cmd.WaitDelay == 0 {
		// A grandchild holding the agent's stderr must not hold Wait.
		cmd.WaitDelay = time.Second
	}
	err = cmd.Start()
	stdinR.Close() // the agent's ends, which it now holds
	stdoutW.Close()
	if err != nil {
		stdinW.Close()
		stdoutR.Close()
		return nil, fmt.Errorf("acprpc: starting the agent: %w", err)
	}
	go p.reap()
	p.stdout = &cuttableReader{f: stdoutR}
	p.Conn = NewConn(ctx, NewStreamPipes(p.stdout, stdinW), h, o.Conn)
	return p, nil
}

func stderrSink(w io.Writer, l *lineLogger) io.Writer {
	if w == nil {
		return l
	}
	return io.MultiWriter(w, l)
}

// reap waits for the process, so it never lingers as a zombie, whoever
// ended it.
func (p *AgentProcess) reap() {
	p.waitErr = p.cmd.Wait()
	if p.stderr != nil {
		p.stderr.flush()
	}
	close(p.exited)
}

// Exited is closed once the agent process has exited.
func (p *AgentProcess) Exited() <-chan struct{} { return p.exited }

// Wait waits for the agent to exit and returns how it did, as
// exec.Cmd.Wait does: nil for status 0, an *exec.ExitError otherwise.
func (p *AgentProcess) Wait() error {
	<-p.exited
	return p.waitErr
}

// Pid is the agent's process ID.
func (p *AgentProcess) Pid() int { return p.cmd.Process.Pid }

// ErrAgentKilled is what Close returns, wrapped, when the agent had to be
// killed because it did not exit in time once its stdin was closed.
var ErrAgentKilled = errors.New("acprpc: the agent did not exit after its stdin closed, and was killed")

// Close ends the agent: it shuts the connection down gracefully
// (Conn.Shutdown, for at most ProcessOptions.ExitTimeout: the agent's
// requests are answered as cancelled and this side's calls are cancelled),
// which closes the agent's stdin, then waits up to ExitTimeout for the
// agent to exit, and kills it if it has not. The
// agent's stdout is read and discarded until it exits, so that an agent
// writing its last lines never blocks on a full pipe or dies of a broken
// one.
//
// Close returns nil when the agent exited with status 0, the
// *exec.ExitError of another status, or an error matching ErrAgentKilled.
// It is safe to call more than once; later calls return the same.
func (p *AgentProcess) Close() error {
	p.closeOnce.Do(func() {
		shutdown, cancel := context.WithTimeout(context.Background(), p.timeout)
		_ = p.Conn.Shutdown(shutdown)
		cancel()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			p.stdout.drain()
		}()
		t := time.NewTimer(p.timeout)
		defer t.Stop()
		select {
		case <-p.exited:
			p.closeErr = p.waitErr
		case <-t.C:
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.closeErr = fmt.Errorf("%w (after %v): %w", ErrAgentKilled, p.timeout, p.waitErr)
		}
		p.stdout.f.Close() // ends the drain if something else still holds the pipe
		<-drained
	})
	return p.closeErr
}

// cuttableReader is the agent's stdout as the connection reads it. Closing
// it ends a read in progress without closing the pipe, which Close goes on
// draining until the agent exits: a pipe closed under a writing agent
// would kill it with SIGPIPE.
type cuttableReader struct {
	f *os.File

	mu      sync.Mutex
	cut     bool
	reading sync.WaitGroup
}

func (r *cuttableReader) Read(b []byte) (int, error) {
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		return 0, io.EOF
	}
	r.reading.Add(1)
	r.mu.Unlock()
	defer r.reading.Done()
	return r.f.Read(b)
}

// Close ends the connection's reads: a read in progress returns at once.
// On a system where a pipe takes no deadline, the pipe is closed instead.
func (r *cuttableReader) Close() error {
	r.mu.Lock()
	r.cut = true
	r.mu.Unlock()
	if err := r.f.SetReadDeadline(time.Now()); err != nil {
		return r.f.Close()
	}
	return nil
}

// drain reads and discards the rest of the output, once the connection's
// last read has returned, until the pipe ends or is closed.
func (r *cuttableReader) drain() {
	r.reading.Wait()
	if r.f.SetReadDeadline(time.Time{}) != nil {
		return // closed already
	}
	_, _ = io.Copy(io.Discard, r.f)
}

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
