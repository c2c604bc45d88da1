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

// Close's defaults, for a ProcessOptions field left zero. With them, an
// agent that exits when its stdin closes is gone at once, and one that waits
// for a signal, as real agents do once they hold a session, is gone about a
// second after Close is called.
const (
	// DefaultShutdownTimeout bounds Close's graceful shutdown of the
	// connection.
	DefaultShutdownTimeout = 2 * time.Second

	// DefaultExitTimeout is how long Close waits for the agent to exit once
	// its stdin is closed, before it sends SIGTERM.
	DefaultExitTimeout = time.Second

	// DefaultTermTimeout is how long Close waits for the agent to exit after
	// SIGTERM, before it sends SIGKILL.
	DefaultTermTimeout = 2 * time.Second
)

// exitDrain is how long the connection and the stderr copy go on reading
// the agent's output once the agent has exited. A child of the agent that
// outlives it may hold its stdout and stderr open: the reads end then all
// the same.
const exitDrain = 250 * time.Millisecond

// quietGap and maxExitTail bound the reads that exitDrain cuts short: what
// is already in the pipe is still read, until nothing comes for quietGap, or
// maxExitTail has passed (a child of the agent writing on and on).
const (
	quietGap    = 20 * time.Millisecond
	maxExitTail = time.Second
)

// exitCut is when the reads of an agent's output were cut after its exit.
type exitCut struct {
	mu sync.Mutex
	at time.Time // zero until the cut
}

func (c *exitCut) cut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = time.Now()
}

// done reports whether the cut has come.
func (c *exitCut) done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.at.IsZero()
}

// arm sets f's deadline for a read after the cut, and reports whether the
// cut has come: such a read takes what the pipe holds and ends once it has
// been quiet for quietGap.
func (c *exitCut) arm(f *os.File) bool {
	c.mu.Lock()
	at := c.at
	c.mu.Unlock()
	if at.IsZero() {
		return false
	}
	deadline := time.Now().Add(quietGap)
	if time.Since(at) > maxExitTail {
		deadline = time.Now()
	}
	_ = f.SetReadDeadline(deadline)
	return true
}

// ProcessOptions configure StartAgent. The zero value (or nil) gives the
// connection ACP's defaults, discards the agent's stderr, and ends the agent
// with Close's defaults.
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

	// ShutdownTimeout bounds Close's graceful shutdown of the connection
	// (Conn.Shutdown), after which the connection is closed at once. Zero
	// means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// ExitTimeout is how long Close waits for the agent to exit once its
	// stdin is closed, before it sends it SIGTERM. Zero means
	// DefaultExitTimeout.
	ExitTimeout time.Duration

	// TermTimeout is how long Close waits for the agent to exit after
	// SIGTERM, before it sends it SIGKILL. Zero means DefaultTermTimeout.
	// Where there is no SIGTERM (Windows), the agent is killed as soon as
	// ExitTimeout has passed.
	TermTimeout time.Duration
}

// timeouts returns Close's three waits, each zero one replaced by its
// default.
func (o *ProcessOptions) timeouts() (shutdown, exit, term time.Duration) {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	return or(o.ShutdownTimeout, DefaultShutdownTimeout), or(o.ExitTimeout, DefaultExitTimeout), or(o.TermTimeout, DefaultTermTimeout)
}

// AgentProcess is an agent running as a subprocess, with a Conn over its
// stdin and stdout. Its methods are the Conn's, with Close ending the
// process too.
type AgentProcess struct {
	*Conn

	cmd    *exec.Cmd
	group  bool // the agent leads a process group of its own, which is signalled whole
	stdout *agentOutput
	stderr *stderrCopy // nil when the agent's stderr is a file, or discarded
	log    *lineLogger // nil unless ProcessOptions.StderrLog is set

	shutdownTimeout, exitTimeout, termTimeout time.Duration

	dead    chan struct{} // closed once the process has been reaped and what was left of its group killed
	exited  chan struct{} // closed once, besides, its stderr has been copied
	reaped  chan struct{} // closed once the connection has read the last of the agent's stdout
	waitErr error         // the process's exit, set before dead is closed

	closeOnce sync.Once
	closeErr  error
}

// StartAgent starts cmd as an ACP agent and returns the connection to it,
// served by h on this side (nil for a client that serves nothing). cmd must
// not have been started, and its Stdin and Stdout must be nil: they become
// the connection's pipes. ctx is the connection's, as for NewConn: when it
// ends the connection closes, which closes the agent's stdin.
//
// On Unix the agent runs in a process group of its own, so that Close can
// signal it with every child it started, and no child outlives it: once the
// agent has exited, what is left of its group is killed. A caller that sets
// cmd.SysProcAttr decides instead: with Setpgid (and Pgid 0) or Setsid the
// agent still leads a group of its own, which is handled the same way;
// otherwise it shares the caller's group, only the agent itself is
// signalled, and its children are left to the caller. An agent in a group
// of its own does not get the terminal's Ctrl-C.
//
// When the agent exits, on its own or not, the connection closes once it
// has read what the agent wrote (at most a quarter of a second longer, if a
// child of the agent still holds its stdout): every pending call returns an
// error matching ErrConnClosed and ErrAgentExited that carries the exit
// status (an *exec.ExitError, for errors.As), and Exited is closed. Always
// call Close, which ends the process and releases its pipes.
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
	p := &AgentProcess{
		cmd:    cmd,
		dead:   make(chan struct{}),
		exited: make(chan struct{}),
		reaped: make(chan struct{}),
	}
	p.shutdownTimeout, p.exitTimeout, p.termTimeout = o.timeouts()
	callersStderr := cmd.Stderr
	var stderr io.Writer = o.Stderr
	if stderr == nil {
		stderr = cmd.Stderr
	}
	if o.StderrLog != nil {
		p.log = &lineLogger{log: o.StderrLog, cmd: cmd}
		stderr = stderrSink(stderr, p.log)
	}
	pipes, err := newAgentPipes(stderr)
	if err != nil {
		return nil, fmt.Errorf("acprpc: StartAgent: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.childEnds()
	p.group = ownGroup(cmd)
	err = cmd.Start()
	pipes.closeChildEnds() // the agent holds them now
	if err != nil {
		pipes.closeOurEnds()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, callersStderr
		return nil, fmt.Errorf("acprpc: starting the agent: %w", err)
	}
	p.stdout = &agentOutput{f: pipes.stdoutR, exited: p.exited, exitErr: p.exitError, ended: make(chan struct{})}
	if pipes.stderrR != nil {
		p.stderr = &stderrCopy{r: pipes.stderrR, w: stderr, done: make(chan struct{})}
		go p.stderr.run()
	}
	go p.reap()
	p.Conn = NewConn(ctx, NewStreamPipes(p.stdout, pipes.stdinW), h, o.Conn)
	return p, nil
}

// agentPipes are the agent's stdin and stdout, and its stderr when what it
// goes to is not a file the agent can be handed: then this side copies it.
type agentPipes struct {
	stdinR, stdinW   *os.File
	stdoutR, stdoutW *os.File
	stderrR, stderrW *os.File // nil unless copied
	stderrFile       *os.File // the agent's stderr when it goes to a file; nil to discard
}

func newAgentPipes(stderr io.Writer) (*agentPipes, error) {
	p := &agentPipes{}
	var err error
	if p.stdinR, p.stdinW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if p.stdoutR, p.stdoutW, err = os.Pipe(); err != nil {
		p.closeOurEnds()
		p.closeChildEnds()
		return nil, err
	}
	switch f := stderr.(type) {
	case nil:
	case *os.File:
		p.stderrFile = f
	default:
		if p.stderrR, p.stderrW, err = os.Pipe(); err != nil {
			p.closeOurEnds()
			p.closeChildEnds()
			return nil, err
		}
	}
	return p, nil
}

// childEnds are the command's Stdin, Stdout and Stderr. os/exec hands
// files to the child as they are, and so starts no copying goroutine of
// its own that a grandchild holding a pipe could keep waiting.
func (p *agentPipes) childEnds() (stdin io.Reader, stdout, stderr io.Writer) {
	stdin, stdout = p.stdinR, p.stdoutW
	switch {
	case p.stderrW != nil:
		stderr = p.stderrW
	case p.stderrFile != nil:
		stderr = p.stderrFile
	}
	return stdin, stdout, stderr
}

func (p *agentPipes) closeChildEnds() {
	for _, f := range []*os.File{p.stdinR, p.stdoutW, p.stderrW} {
		if f != nil {
			f.Close()
		}
	}
}

func (p *agentPipes) closeOurEnds() {
	for _, f := range []*os.File{p.stdinW, p.stdoutR, p.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

func stderrSink(w io.Writer, l *lineLogger) io.Writer {
	if w == nil {
		return l
	}
	return io.MultiWriter(w, l)
}

// reap waits for the process, so it never lingers as a zombie, whoever
// ended it; kills what is left of its group; lets its stderr be copied and
// the connection read its stdout to their ends, each for at most exitDrain.
func (p *AgentProcess) reap() {
	defer close(p.reaped)
	p.waitErr = p.cmd.Wait()
	p.killGroup()
	close(p.dead)
	drain, stop := context.WithTimeout(context.Background(), exitDrain)
	defer stop()
	if p.stderr != nil {
		p.stderr.finish(drain.Done())
	}
	if p.log != nil {
		p.log.flush()
	}
	close(p.exited)
	p.stdout.endAfterExit(drain.Done())
}

// Exited is closed once the agent process has exited and its stderr has
// been written out.
func (p *AgentProcess) Exited() <-chan struct{} { return p.exited }

// Wait waits for the agent to exit and returns how it did, as
// exec.Cmd.Wait does: nil for status 0, an *exec.ExitError otherwise.
func (p *AgentProcess) Wait() error {
	<-p.exited
	return p.waitErr
}

// Pid is the agent's process ID.
func (p *AgentProcess) Pid() int { return p.cmd.Process.Pid }

// ErrAgentExited is what the connection's end matches, and the error of
// every call still pending then, when the agent's exit ended it. The error
// carries the exit status: an *exec.ExitError unless it was 0.
var ErrAgentExited = errors.New("acprpc: the agent exited")

// exitError is why the connection ended once the agent has exited.
func (p *AgentProcess) exitError() error {
	if p.waitErr == nil {
		return fmt.Errorf("%w with status 0", ErrAgentExited)
	}
	return fmt.Errorf("%w: %w", ErrAgentExited, p.waitErr)
}

// ErrAgentTerminated is what Close returns, wrapped with the exit status,
// when the agent did not exit within ExitTimeout of its stdin closing and
// had to be sent SIGTERM, on which it exited.
var ErrAgentTerminated = errors.New("acprpc: the agent did not exit after its stdin closed, and was sent SIGTERM")

// ErrAgentKilled is what Close returns, wrapped with the exit status, when
// the agent did not exit after SIGTERM either (or where there is no SIGTERM)
// and was killed.
var ErrAgentKilled = errors.New("acprpc: the agent did not exit after its stdin closed, and was killed")

// Close ends the agent. It shuts the connection down gracefully
// (Conn.Shutdown, for at most ProcessOptions.ShutdownTimeout: the agent's
// requests are answered as cancelled and this side's calls are cancelled),
// which closes the agent's stdin, the way ACP tells an agent to exit. Then
// it escalates: it waits up to ExitTimeout for the agent to exit, sends
// SIGTERM to its process group (see StartAgent) and waits up to
// TermTimeout, then sends SIGKILL. Once the agent has exited, what is left
// of its group is killed. The agent's stdout is read and discarded until it
// exits, so that an agent writing its last lines never blocks on a full
// pipe or dies of a broken one.
//
// Close returns nil when the agent exited with status 0 before any signal,
// the *exec.ExitError of another status, or an error matching
// ErrAgentTerminated or ErrAgentKilled. It is safe to call more than once;
// later calls return the same.
func (p *AgentProcess) Close() error {
	p.closeOnce.Do(func() {
		shutdown, cancel := context.WithTimeout(context.Background(), p.shutdownTimeout)
		_ = p.Conn.Shutdown(shutdown)
		cancel()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			p.stdout.drain()
		}()
		p.closeErr = p.stop()
		<-p.reaped
		p.stdout.f.Close() // ends the drain if something else still holds the pipe
		<-drained
	})
	return p.closeErr
}

// stop waits for the agent to exit, sending it SIGTERM after ExitTimeout
// and SIGKILL after TermTimeout more, and returns how it ended.
func (p *AgentProcess) stop() error {
	if p.awaitDeath(p.exitTimeout) {
		return p.waitErr
	}
	if p.terminate() && p.awaitDeath(p.termTimeout) {
		return signalled(ErrAgentTerminated, p.waitErr)
	}
	p.kill()
	<-p.dead
	return signalled(ErrAgentKilled, p.waitErr)
}

// awaitDeath reports whether the agent exits within d.
func (p *AgentProcess) awaitDeath(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.dead:
		return true
	case <-t.C:
		return false
	}
}

func signalled(how, waitErr error) error {
	if waitErr == nil { // the agent caught the signal and exited cleanly
		return how
	}
	return fmt.Errorf("%w: %w", how, waitErr)
}

// agentOutput is the agent's stdout as the connection reads it. Closing it
// ends a read in progress without closing the pipe, which Close goes on
// draining until the agent exits: a pipe closed under a writing agent would
// kill it with SIGPIPE. Once the agent has exited, its reads end with the
// exit, even if a child of the agent still holds the pipe.
type agentOutput struct {
	f       *os.File
	exited  <-chan struct{}
	exitErr func() error // valid once exited is closed

	mu        sync.Mutex
	cut       bool    // the connection reads no more
	afterExit exitCut // the drain after the agent's exit is over
	reading   sync.WaitGroup

	endOnce sync.Once
	ended   chan struct{} // closed once the connection's reading is over
}

func (r *agentOutput) Read(b []byte) (int, error) {
	r.mu.Lock()
	if r.cut {
		r.mu.Unlock()
		return 0, io.EOF
	}
	r.reading.Add(1)
	r.mu.Unlock()
	defer r.reading.Done()
	for {
		gapped := r.arm()
		n, err := r.f.Read(b)
		if err == nil {
			return n, nil
		}
		if !gapped && r.afterExit.done() && errors.Is(err, os.ErrDeadlineExceeded) && !r.isCut() {
			continue // a read the exit's cut interrupted: read what the pipe still holds
		}
		r.end()
		return n, r.why(err)
	}
}

// arm prepares a read after the exit's cut, unless the connection has cut
// its reads itself.
func (r *agentOutput) arm() bool {
	if r.isCut() {
		return false
	}
	return r.afterExit.arm(r.f)
}

func (r *agentOutput) isCut() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cut
}

// why turns the end of the pipe into the agent's exit, when that is what
// ended it.
func (r *agentOutput) why(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		// The agent's exit usually comes with the end of its stdout, and
		// is reaped a moment later. An agent that closed its stdout and
		// runs on leaves the connection ended by EOF.
		t := time.NewTimer(exitDrain)
		defer t.Stop()
		select {
		case <-r.exited:
			return r.exitErr()
		case <-t.C:
		}
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, os.ErrClosed):
		if r.afterExit.done() {
			return r.exitErr()
		}
	}
	return err
}

func (r *agentOutput) end() { r.endOnce.Do(func() { close(r.ended) }) }

// Close ends the connection's reads: a read in progress returns at once.
// On a system where a pipe takes no deadline, the pipe is closed instead.
func (r *agentOutput) Close() error {
	r.mu.Lock()
	r.cut = true
	r.mu.Unlock()
	r.end()
	if err := r.f.SetReadDeadline(time.Now()); err != nil {
		return r.f.Close()
	}
	return nil
}

// endAfterExit ends the connection's reading, once the agent has exited,
// when drained ends before the pipe does.
func (r *agentOutput) endAfterExit(drained <-chan struct{}) {
	select {
	case <-r.ended:
	case <-drained:
		r.afterExit.cut()
		if r.f.SetReadDeadline(time.Now()) != nil {
			r.f.Close()
		}
	}
}

// drain reads and discards the rest of the output, once the connection's
// last read has returned, until the pipe ends or is closed.
func (r *agentOutput) drain() {
	r.reading.Wait()
	if r.f.SetReadDeadline(time.Time{}) != nil {
		return // closed already
	}
	_, _ = io.Copy(io.Discard, r.f)
}

// stderrCopy copies the agent's stderr to where it goes, when that is not a
// file the agent could write itself.
type stderrCopy struct {
	r         *os.File
	w         io.Writer
	done      chan struct{}
	afterExit exitCut
}

func (s *stderrCopy) run() {
	defer close(s.done)
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
// may hold the pipe.
func (s *stderrCopy) finish(drained <-chan struct{}) {
	select {
	case <-s.done:
	case <-drained:
		s.afterExit.cut()
		if s.r.SetReadDeadline(time.Now()) != nil {
			s.r.Close()
		}
		<-s.done
	}
	s.r.Close()
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
