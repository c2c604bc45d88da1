//go:build !unix

package agentproc

import (
	"os/exec"
	"time"
)

// ownGroup reports that the agent leads no process group of its own: only
// Unix has them here.
func ownGroup(*exec.Cmd) bool { return false }

// terminate reports that there is no SIGTERM to send: Close kills the agent
// as soon as ExitTimeout has passed.
func (p *Process) terminate() bool { return false }

// kill kills the agent.
func (p *Process) kill() { _ = p.cmd.Process.Kill() }

// killGroup has no group to kill.
func (p *Process) killGroup() {}

// awaitGroupEnd has no group to wait for.
func (p *Process) awaitGroupEnd(time.Duration) {}

// tookSIGTERM reports that there is no SIGTERM to take: Close never
// returns ErrTerminated here.
func tookSIGTERM(error) bool { return false }
