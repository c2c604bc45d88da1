//go:build !unix

package main

import (
	"os"
	"os/exec"
)

func ownGroup(*exec.Cmd) {}

func signalGroup(cmd *exec.Cmd, _ bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

func signalAgent(cmd *exec.Cmd, kill bool) { signalGroup(cmd, kill) }

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
