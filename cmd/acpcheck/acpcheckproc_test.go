//go:build linux

package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// acpcheckProc is acpcheck run as a process, in a group of its own, with
// the test binary as its agent.
type acpcheckProc struct {
	cmd    *exec.Cmd
	stdin  *os.File // the editor's end of each pipe
	stdout *os.File
	stderr *os.File
	pids   string
	exited chan struct{}
}

// startAcpcheck starts acpcheck with args, the test agent given faults (a
// value of agentEnv). Whatever is left of it and its agents is killed when
// the test ends.
func startAcpcheck(t *testing.T, faults string, args ...string) *acpcheckProc {
	t.Helper()
	p := &acpcheckProc{pids: t.TempDir() + "/pids", exited: make(chan struct{})}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), asAcpcheckEnv+"=1", agentEnv+"="+faults, pidsEnv+"="+p.pids)
	var inR, outW, errW *os.File
	var err error
	inR, p.stdin, err = os.Pipe()
	require.NoError(t, err)
	p.stdout, outW, err = os.Pipe()
	require.NoError(t, err)
	p.stderr, errW, err = os.Pipe()
	require.NoError(t, err)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, errW
	ownGroup(p.cmd)
	require.NoError(t, p.cmd.Start())
	for _, f := range []*os.File{inR, outW, errW} {
		f.Close()
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		signalGroup(p.cmd, true)
		for _, pid := range p.notedPIDs(t) {
			if _, ok := readProc(pid); ok {
				_ = killPID(pid)
			}
		}
		<-p.exited // killed
		p.stdin.Close()
		p.stdout.Close()
		p.stderr.Close()
	})
	return p
}

// notedPIDs are the process IDs the agents noted.
func (p *acpcheckProc) notedPIDs(t *testing.T) []int {
	b, err := os.ReadFile(p.pids)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var out []int
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			pid, err := strconv.Atoi(f[1])
			require.NoError(t, err)
			out = append(out, pid)
		}
	}
	return out
}

// awaitExit waits up to bound for acpcheck to exit, failing the test if it
// does not.
func (p *acpcheckProc) awaitExit(t *testing.T, bound time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-p.exited:
		return p.cmd.ProcessState
	case <-time.After(bound):
		t.Fatalf("acpcheck %v was still running %s later", p.cmd.Args[1:], bound)
		return nil
	}
}

// requireGone fails the test if a process the agents noted still runs.
func (p *acpcheckProc) requireGone(t *testing.T) {
	t.Helper()
	pids := p.notedPIDs(t)
	require.NotEmpty(t, pids, "the agent noted no process")
	for _, pid := range pids {
		_, ok := readProc(pid)
		b, _ := os.ReadFile(p.pids)
		require.False(t, ok, "process %d, started by the agent, outlived acpcheck: %s", pid, b)
	}
}

// initialize writes the editor's initialize request to the proxy.
func (p *acpcheckProc) initialize(t *testing.T) {
	t.Helper()
	_, err := p.stdin.WriteString(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n")
	require.NoError(t, err)
}
