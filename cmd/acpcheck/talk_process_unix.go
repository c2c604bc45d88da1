//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// ownGroup starts cmd in a process group of its own.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// signalGroup sends the agent's process group SIGTERM, or SIGKILL if kill.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, sig(kill))
	}
}

// signalAgent signals the agent's group and the agent itself, which may
// have left the group (for its parent's, say), where a signal to the group
// would never reach it. The agent is signalled through its os.Process, by
// pidfd where there is one: never a process that took a reaped agent's ID.
func signalAgent(cmd *exec.Cmd, kill bool) {
	signalGroup(cmd, kill)
	if cmd.Process != nil {
		_ = cmd.Process.Signal(sig(kill))
	}
}

func sig(kill bool) syscall.Signal {
	if kill {
		return syscall.SIGKILL
	}
	return syscall.SIGTERM
}

// killPID kills a process the agent left behind.
func killPID(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
