//go:build unix

package agentproc

import (
	"os/exec"
	"syscall"
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

// signal signals the agent's group when it leads one of its own, else the
// agent alone. Either may have exited already. An agent that left its group
// (it called setpgid or setsid itself) is still signalled: that the group is
// gone must not leave Close waiting for an agent no signal reached.
func (p *Process) signal(sig syscall.Signal) {
	if p.group && syscall.Kill(-p.cmd.Process.Pid, sig) == nil {
		return
	}
	_ = p.cmd.Process.Signal(sig)
}

// killGroup kills what is left of the agent's group once the agent has been
// reaped: children that outlived it. The group's ID is the agent's process
// ID, which the system does not reuse while any member of the group lives.
func (p *Process) killGroup() {
	if p.group {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	}
}
