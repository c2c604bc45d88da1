//go:build !unix

package acprpc

import "os/exec"

// ownGroup reports that the agent leads no process group of its own: only
// Unix has them here.
func ownGroup(*exec.Cmd) bool { return false }

// terminate reports that there is no SIGTERM to send: Close kills the agent
// as soon as ExitTimeout has passed.
func (p *AgentProcess) terminate() bool { return false }

// kill kills the agent.
func (p *AgentProcess) kill() { _ = p.cmd.Process.Kill() }

// killGroup has no group to kill.
func (p *AgentProcess) killGroup() {}
