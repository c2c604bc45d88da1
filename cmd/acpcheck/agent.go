package main

import (
	"bytes"
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

	exited  chan struct{}
	waitErr error
	exitAt  time.Time
}

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
	p := &agentProc{stdin: inW, stdout: outR, stderr: &tail{echo: echo}, exited: make(chan struct{})}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
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

// stop ends the agent and its process group, if they are still there:
// SIGTERM, then SIGKILL after a second.
func (p *agentProc) stop() {
	signalGroup(p.cmd, false)
	select {
	case <-p.exited:
	case <-time.After(time.Second):
		signalGroup(p.cmd, true)
		<-p.exited
	}
	signalGroup(p.cmd, true) // what it left behind in its group
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
