package agentproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/acpkit/acprpc"
	"github.com/acpkit/acprpc/internal/agentpeer"
)

// Close's defaults, for an Options field left zero. With them, an
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

// Options configure Start. The zero value (or nil) gives the
// connection acprpc's defaults, discards the agent's stderr, and ends the agent
// with Close's defaults.
type Options struct {
	// Conn configures the connection over the agent's stdin and stdout.
	Conn *acprpc.Options

	// Stderr receives the agent's stderr as it is written. It may instead
	// be set on the command itself; setting both is an error.
	Stderr io.Writer

	// StderrLog receives each line of the agent's stderr as an Info record
	// with message "agent stderr", the line in attribute "line" and the
	// agent's process ID in "pid". It may be used together with Stderr.
	StderrLog *slog.Logger

	// ShutdownTimeout bounds Close's graceful shutdown of the connection
	// (acprpc.Conn.Shutdown), after which the connection is closed at once. Zero
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
func (o *Options) timeouts() (shutdown, exit, term time.Duration) {
	or := func(d, def time.Duration) time.Duration {
		if d <= 0 {
			return def
		}
		return d
	}
	return or(o.ShutdownTimeout, DefaultShutdownTimeout), or(o.ExitTimeout, DefaultExitTimeout), or(o.TermTimeout, DefaultTermTimeout)
}

// Process is an agent running as a subprocess, with an acprpc.Conn over
// its stdin and stdout. Its methods are the Conn's, with Close ending the
// process too.
type Process struct {
	*acprpc.Conn

	cmd    *exec.Cmd
	group  bool // the agent leads a process group of its own, which is signalled whole
	stdout *agentOutput
	stderr *stderrCopy // nil when the agent's stderr is a file, or discarded
	log    *lineLogger // nil unless Options.StderrLog is set

	shutdownTimeout, exitTimeout, termTimeout time.Duration

	dead    chan struct{} // closed once the process has been reaped and what was left of its group killed
	exited  chan struct{} // closed once, besides, its stderr has been copied
	reaped  chan struct{} // closed once the connection has read the last of the agent's stdout
	waitErr error         // the process's exit, set before dead is closed

	closeOnce sync.Once
	closeErr  error
}

// Start starts cmd as an ACP agent and returns the connection to it,
// served by h on this side (nil for a client that serves nothing). cmd must
// not have been started, and its Stdin and Stdout must be nil: they become
// the connection's pipes. ctx is the connection's, as for acprpc.NewConn: when it
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
// error matching acprpc.ErrConnClosed and ErrExited that carries the exit
// status (an *exec.ExitError, for errors.As), and Exited is closed. Always
// call Close, which ends the process and releases its pipes.
func Start(ctx context.Context, cmd *exec.Cmd, h acprpc.Handler, opts *Options) (*Process, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	switch {
	case cmd.Process != nil:
		return nil, errors.New("agentproc: Start: the command was already started")
	case cmd.Stdin != nil || cmd.Stdout != nil:
		return nil, errors.New("agentproc: Start: the command's Stdin and Stdout must be nil: they are the connection's")
	case cmd.Stderr != nil && o.Stderr != nil:
		return nil, errors.New("agentproc: Start: the agent's stderr is set both on the command and in the options")
	}
	p := &Process{
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
		return nil, fmt.Errorf("agentproc: Start: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes.childEnds()
	p.group = ownGroup(cmd)
	err = cmd.Start()
	pipes.closeChildEnds() // the agent holds them now
	if err != nil {
		pipes.closeOurEnds()
		cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, callersStderr
		return nil, fmt.Errorf("agentproc: starting the agent: %w", err)
	}
	p.stdout = &agentOutput{f: pipes.stdoutR, dead: p.dead, exitErr: p.exitError, ended: make(chan struct{})}
	stdin := &agentInput{f: pipes.stdinW, dead: p.dead, exitErr: p.exitError}
	if pipes.stderrR != nil {
		p.stderr = &stderrCopy{r: pipes.stderrR, w: stderr, log: p.log, done: make(chan struct{})}
		go p.stderr.run()
	}
	go p.reap()
	p.Conn = acprpc.NewConn(ctx, acprpc.NewStreamPipes(p.stdout, stdin), h, o.Conn)
	agentpeer.Mark(p.Conn) // what the Conn logs of the agent's stdout is worded for this client
	return p, nil
}

// reap waits for the process, so it never lingers as a zombie, whoever
// ended it; kills what is left of its group; lets its stderr be copied and
// the connection read its stdout to their ends, each for at most exitDrain
// (and a write of its stderr stuck in Options.Stderr or StderrLog is left
// behind after stuckWrite).
func (p *Process) reap() {
	defer close(p.reaped)
	p.waitErr = p.cmd.Wait()
	p.killGroup()
	close(p.dead)
	drain, stop := context.WithTimeout(context.Background(), exitDrain)
	defer stop()
	if p.stderr != nil {
		p.stderr.finish(drain.Done()) // and the stderr log is flushed
	}
	close(p.exited)
	p.stdout.endAfterExit(drain.Done())
}

// Exited is closed once the agent process has exited and its stderr has
// been written out, or a write of it to Options.Stderr or StderrLog has been
// stuck for over a second, which is then left to end on its own.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Wait waits for the agent to exit and returns how it did, as
// exec.Cmd.Wait does: nil for status 0, an *exec.ExitError otherwise.
func (p *Process) Wait() error {
	<-p.exited
	return p.waitErr
}

// Pid is the agent's process ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// ErrExited is what the connection's end matches, and the error of
// every call still pending then, when the agent's exit ended it. The error
// carries the exit status: an *exec.ExitError unless it was 0.
var ErrExited = errors.New("agentproc: the agent exited")

// exitError is why the connection ended once the agent has exited.
func (p *Process) exitError() error {
	if p.waitErr == nil {
		return exited{fmt.Errorf("%w with status 0", ErrExited)}
	}
	return exited{fmt.Errorf("%w: %w", ErrExited, p.waitErr)}
}

// exited is the agent's exit as the end of the connection's input: the
// agent reads nothing more either, so the connection does not wait to
// answer what it read before (acprpc.Transport, PeerGone).
type exited struct{ error }

func (e exited) Unwrap() error { return e.error }

// PeerGone says that the agent, having exited, reads nothing more.
func (exited) PeerGone() bool { return true }

// ErrTerminated is what Close returns, wrapped with the exit status,
// when the agent did not exit within ExitTimeout of its stdin closing and
// had to be sent SIGTERM, on which it exited.
var ErrTerminated = errors.New("agentproc: the agent did not exit after its stdin closed, and was sent SIGTERM")

// ErrKilled is what Close returns, wrapped with the exit status, when
// the agent did not exit after SIGTERM either (or where there is no SIGTERM)
// and was killed.
var ErrKilled = errors.New("agentproc: the agent did not exit after its stdin closed, and was killed")

// Close ends the agent. It shuts the connection down gracefully
// (acprpc.Conn.Shutdown, for at most Options.ShutdownTimeout: the agent's
// requests are answered as cancelled and this side's calls are cancelled),
// which closes the agent's stdin, the way ACP tells an agent to exit. Then
// it escalates: it waits up to ExitTimeout for the agent to exit, sends
// SIGTERM to its process group (see Start) and to the agent itself if it
// left the group, waits up to TermTimeout, then sends SIGKILL the same way.
// Once the agent has exited, what is left of its group is killed, and Close
// returns once none of it runs (waiting at most TermTimeout more for the
// killed processes to end). The agent's stdout is read and discarded until
// it exits, so that an agent writing its last lines never blocks on a full
// pipe or dies of a broken one.
//
// Close returns nil when the agent exited with status 0 before any signal,
// the *exec.ExitError of another status, or an error matching
// ErrTerminated or ErrKilled. It is safe to call more than once;
// later calls return the same.
func (p *Process) Close() error {
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
		p.awaitGroupEnd(p.termTimeout)
		p.stdout.f.Close() // ends the drain if something else still holds the pipe
		<-drained
	})
	return p.closeErr
}

// stop waits for the agent to exit, sending it SIGTERM after ExitTimeout
// and SIGKILL after TermTimeout more, and returns how it ended.
func (p *Process) stop() error {
	if p.awaitDeath(p.exitTimeout) {
		return p.waitErr
	}
	if p.terminate() && p.awaitDeath(p.termTimeout) {
		return signalled(ErrTerminated, p.waitErr)
	}
	p.kill()
	<-p.dead
	return signalled(ErrKilled, p.waitErr)
}

// awaitDeath reports whether the agent exits within d.
func (p *Process) awaitDeath(d time.Duration) bool {
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
