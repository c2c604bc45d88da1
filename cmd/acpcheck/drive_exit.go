package main

import (
	"slices"
	"time"
)

// closeStdin closes the agent's stdin and checks that it exits, and that
// nothing it started outlives it.
func (r *runner) closeStdin() {
	if r.agent == nil {
		r.res.notBrought(ruleStdinExit, whyRemoteProcess)
		r.res.notBrought(ruleNoLeftover, whyRemoteProcess)
		return
	}
	pid := r.agent.cmd.Process.Pid
	before := append(family(pid), marked(r.agent.mark)...)
	closed := time.Now()
	gone := r.exitedByItself() // exited or crashed mid-run: its stdin's end was never the cause
	_ = r.agent.stdin.Close()
	select {
	case <-r.agent.exited:
		if gone {
			r.res.notBrought(ruleStdinExit, "the agent had exited before its stdin closed (%v)", r.agent.waitErr)
		} else {
			r.res.pass(ruleStdinExit)
		}
	case <-time.After(r.o.ExitWait):
		r.res.fail(ruleStdinExit, nil, "the agent was still running %s after its stdin closed", r.o.ExitWait)
		r.res.notBrought(ruleNoLeftover, "the agent did not exit by itself")
		r.agent.stop(stopBounds{term: defaultStop.term, kill: defaultStop.kill})
		r.drain()
		return
	}
	r.drain()
	if !canFindLeftovers {
		r.res.notBrought(ruleNoLeftover, "this system cannot list processes")
		return
	}
	left := r.leftovers(append(before, append(family(pid), marked(r.agent.mark)...)...))
	if len(left) > 0 {
		r.res.fail(ruleNoLeftover, nil, "processes %v were still running %s after the agent exited (%s after its stdin closed)",
			left, leftoverWait, r.agent.exitAt.Sub(closed).Round(time.Millisecond))
		return
	}
	r.res.pass(ruleNoLeftover)
}

// exitedByItself reports whether the agent exited before its stdin was
// closed. One whose output has ended (it crashed or exited mid-run) is
// reaped a moment after, a moment a loaded machine can stretch past the
// run's last scenarios: it is given ExitWait to be, so that its stdin's
// closing is not taken for the cause of its exit.
func (r *runner) exitedByItself() bool {
	select {
	case <-r.conn.Done():
		return r.agent.awaitExit(r.o.ExitWait)
	default:
		return r.agent.awaitExit(0)
	}
}

// leftoverWait is how long what the agent started may take to exit after
// it.
const leftoverWait = time.Second

// leftovers waits up to leftoverWait for pids to exit, and returns those
// still running. Nothing tells another process when a process exits: it
// looks every few milliseconds.
func (r *runner) leftovers(pids []int) []int {
	slices.Sort(pids)
	pids = slices.Compact(pids)
	deadline := time.Now().Add(leftoverWait)
	for {
		left := alive(pids)
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}
