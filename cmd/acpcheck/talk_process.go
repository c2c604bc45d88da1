package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// agentProc is the agent under test, a subprocess in a process group of its
// own, so that whatever it starts can be found and stopped.
type agentProc struct {
	cmd    *exec.Cmd
	stdin  *os.File // our end
	stdout *os.File // our end
	stderr *tail
	// mark is the value of markEnv in the agent's environment, which what
	// it starts inherits: a daemon that left its group and its parent is
	// still found by it.
	mark string

	exited  chan struct{}
	waitErr error
	exitAt  time.Time

	stopping sync.Mutex // one stop at a time: the second finds the agent gone
}

// markEnv is the environment variable that marks an agent's processes.
const markEnv = "ACPCHECK_AGENT_MARK"

// stopBounds are the waits of the agent's stop, each bounded: for the agent
// to exit once its stdin is closed, once sent SIGTERM, and once sent
// SIGKILL (which only a process stuck in the kernel outlives).
type stopBounds struct{ exit, term, kill time.Duration }

// defaultStop is the stop of an agent acpcheck is done with.
var defaultStop = stopBounds{exit: 3 * time.Second, term: 2 * time.Second, kill: 2 * time.Second}

// waitDelay bounds the wait for the agent's stderr to end once it has
// exited: a process it left behind may hold it open.
const waitDelay = time.Second

// startAgent starts argv with env added to this process's environment. The
// agent's stderr is kept (its end) and, if echo is not nil, copied there.
func startAgent(argv, env []string, echo io.Writer) (*agentProc, error) {
	if len(argv) == 0 {
		return nil, errors.New("no agent command given")
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &agentProc{stdin: inW, stdout: outR, stderr: &tail{echo: echo}, exited: make(chan struct{}), mark: newMark()}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(append(os.Environ(), env...), markEnv+"="+p.mark)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.WaitDelay = waitDelay
	ownGroup(p.cmd)
	err = p.cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("cannot start the agent %q: %w", argv[0], err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		p.exitAt = time.Now()
		close(p.exited)
	}()
	return p, nil
}

// newMark is a value no other agent's markEnv has.
func newMark() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%d-%s", os.Getpid(), hex.EncodeToString(b))
}

// stop ends the agent, each step bounded by b: its stdin closed, then
// SIGTERM, then SIGKILL, each sent to its process group and to the agent
// itself (which may have left the group). Then whatever is left in its
// group, and what it started that still carries its mark, is killed. It
// reports whether the agent exited; only one stuck in the kernel does not.
func (p *agentProc) stop(b stopBounds) bool {
	p.stopping.Lock()
	defer p.stopping.Unlock()
	_ = p.stdin.Close()
	exited := p.awaitExit(b.exit)
	if !exited {
		signalAgent(p.cmd, false)
		exited = p.awaitExit(b.term)
	}
	if !exited {
		signalAgent(p.cmd, true)
		exited = p.awaitExit(b.kill)
	}
	p.killLeftovers()
	return exited
}

// killLeftovers kills what the agent left in its group, and what it
// started that still carries its mark, and waits up to leftoverWait for
// them to be gone: a killed process ends a moment after the signal. (Not
// its descendants by parent: once it is reaped, its process ID may be
// another's.)
func (p *agentProc) killLeftovers() {
	deadline := time.Now().Add(leftoverWait)
	for delay := time.Millisecond; ; delay = min(2*delay, 20*time.Millisecond) {
		signalGroup(p.cmd, true)
		left := append(group(p.cmd.Process.Pid), marked(p.mark)...)
		for _, pid := range left {
			_ = killPID(pid)
		}
		if len(alive(left)) == 0 || time.Now().After(deadline) {
			return
		}
		time.Sleep(delay)
	}
}

// awaitExit waits up to d for the agent to exit.
func (p *agentProc) awaitExit(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	default:
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// tail keeps the last bytes an agent wrote to stderr, for the report.
type tail struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	echo io.Writer
}

const tailSize = 16 << 10

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.echo != nil {
		_, _ = t.echo.Write(b)
	}
	t.buf.Write(b)
	if over := t.buf.Len() - tailSize; over > 0 {
		t.buf.Next(over)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
