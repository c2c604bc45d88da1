//go:build unix

package main

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// hostileProcess does to the test agent's process what its faults ask.
func hostileProcess(faults map[string]bool) {
	if faults[faultIgnoreTerm] {
		signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	}
	if faults[faultOwnGroup] {
		// Out of the group acpcheck made for it, into its parent's: a
		// signal to the agent's group no longer reaches it.
		if pgid, err := syscall.Getpgid(os.Getppid()); err == nil {
			_ = syscall.Setpgid(0, pgid)
		}
	}
	if faults[faultDaemon] {
		first := exec.Command(os.Args[0])
		first.Env = append(os.Environ(), childEnv+"="+daemonFirst)
		_ = first.Run() // it starts the daemon and exits at once
	}
}

// startDaemon is the daemon's first fork: it starts the daemon in a
// session of its own, shares none of the agent's stdio, and exits, so that
// the daemon is neither the agent's descendant nor in its group.
func startDaemon() {
	daemon := exec.Command(os.Args[0])
	daemon.Env = append(os.Environ(), childEnv+"=daemon")
	daemon.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	_ = daemon.Start()
}
