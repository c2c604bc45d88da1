//go:build unix

package agentproc

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup puts the agent in a process group of its own, unless the caller
// has set cmd.SysProcAttr, and reports whether the agent will lead a group
// of its own: the one Start asks for, or the caller's Setsid or
// Setpgid with Pgid 0. A group joined by Pgid, or the caller's own, is
// never signalled whole.
func ownGroup(cmd *exec.Cmd) bool {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	a := cmd.SysProcAttr
	return a.Setsid || (a.Setpgid && a.Pgid == 0)
}

// terminate sends SIGTERM to the agent, and reports that it could.
func (p *Process) terminate() bool {
	p.signal(syscall.SIGTERM)
	return true
}

// kill sends SIGKILL to the agent.
func (p *Process) kill() { p.signal(syscall.SIGKILL) }

// signal signals the agent's group when it leads one of its own, and the
// agent itself when it shares the caller's group or has left its own (it
// joined another group of its session): that the group is gone, or holds
// only children, must not leave Close waiting for an agent no signal
// reached. Either may have exited already.
func (p *Process) signal(sig syscall.Signal) {
	if p.group {
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
		if inGroup(p.cmd.Process.Pid) {
			return
		}
	}
	_ = p.cmd.Process.Signal(sig) // by pidfd where there is one: never a process that took a reaped agent's ID
}

// inGroup reports whether the process pid still leads the group of its
// own ID.
func inGroup(pid int) bool {
	pgid, err := syscall.Getpgid(pid)
	return err == nil && pgid == pid
}

// killGroup kills what is left of the agent's group once the agent has been
// reaped: children that outlived it. The group's ID is the agent's process
// ID, which the system does not reuse while any member of the group lives.
func (p *Process) killGroup() {
	if p.group {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// awaitGroupEnd waits, once the agent has been reaped and its group killed,
// until no process of the group is left running, for at most d: a killed
// process ends a moment after the signal (a big one takes tens of
// milliseconds to give its memory back), and nothing tells another process
// when, so the wait looks, each time a little later, sending the group
// SIGKILL again for a process forked as the first one was sent.
func (p *Process) awaitGroupEnd(d time.Duration) {
	if !p.group {
		return
	}
	pgid := p.cmd.Process.Pid
	deadline := time.Now().Add(d)
	for delay := time.Millisecond; groupRuns(pgid) && time.Now().Before(deadline); delay = min(2*delay, maxGroupLook) {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		time.Sleep(delay)
	}
}

// maxGroupLook is the longest awaitGroupEnd waits between two looks.
const maxGroupLook = 20 * time.Millisecond

// tookSIGTERM reports whether a terminated agent's exit, in err, says it
// ended on SIGTERM: it died of the signal, or caught it and exited with
// status 0 (no exit error) or 128+SIGTERM.
func tookSIGTERM(err error) bool {
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		return true
	}
	status, ok := exit.Sys().(syscall.WaitStatus)
	if !ok {
		return false
	}
	if status.Signaled() {
		return status.Signal() == syscall.SIGTERM
	}
	return status.ExitStatus() == 128+int(syscall.SIGTERM)
}
