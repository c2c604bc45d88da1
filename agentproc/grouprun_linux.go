package agentproc

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// groupRuns reports whether a process of group pgid is still running. A
// zombie is not: it has exited and waits only for its parent, which for an
// orphan is an init that may take its time to reap it. So the group's
// members are read from /proc, once signalling the group says it has any.
func groupRuns(pgid int) bool {
	if syscall.Kill(-pgid, 0) != nil {
		return false // no member at all, zombies included
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true // it has members, and which of them run is unknown
	}
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && runsIn(pid, pgid) {
			return true
		}
	}
	return false
}

// runsIn reports whether process pid runs, in group pgid, from
// /proc/<pid>/stat: "pid (comm) state ppid pgrp ...", where comm may hold
// spaces and parentheses.
func runsIn(pid, pgid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // gone
	}
	end := bytes.LastIndexByte(b, ')')
	if end < 0 {
		return false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 3 {
		return false
	}
	state := f[0][0]
	pgrp, err := strconv.Atoi(string(f[2]))
	return err == nil && pgrp == pgid && state != 'Z' && state != 'X'
}
