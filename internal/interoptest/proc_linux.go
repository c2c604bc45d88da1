package interoptest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcStat is what /proc/<pid>/stat says of a process.
type ProcStat struct {
	PID, PPID, Pgrp int
	State           byte
}

// Alive reports whether the process has not exited: a zombie has, and
// only waits for a parent (or an init that may never reap it).
func (p ProcStat) Alive() bool { return p.State != 'Z' && p.State != 'X' }

// ReadProcStat reads /proc/<pid>/stat; ok is false once the process is
// gone.
func ReadProcStat(pid int) (ProcStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcStat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return ProcStat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return ProcStat{}, false
	}
	st := ProcStat{PID: pid, State: f[0][0]}
	st.PPID, _ = strconv.Atoi(f[1])
	st.Pgrp, _ = strconv.Atoi(f[2])
	return st, true
}

// allProcs lists every process the system shows.
func allProcs() []ProcStat {
	entries, _ := os.ReadDir("/proc")
	var out []ProcStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := ReadProcStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// ProcessTree lists root and every live process descended from it or in
// its process group.
func ProcessTree(root int) []int {
	procs := allProcs()
	in := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !in[p.PID] && (in[p.PPID] || p.Pgrp == root) {
				in[p.PID], grew = true, true
			}
		}
	}
	var out []int
	for _, p := range procs {
		if in[p.PID] && p.Alive() {
			out = append(out, p.PID)
		}
	}
	return out
}

// GroupMembers lists the live processes of process group pgrp.
func GroupMembers(pgrp int) []int {
	var out []int
	for _, p := range allProcs() {
		if p.Pgrp == pgrp && p.Alive() {
			out = append(out, p.PID)
		}
	}
	return out
}

// StillAlive lists those of pids that have not exited.
func StillAlive(pids []int) []int {
	var left []int
	for _, pid := range pids {
		if st, ok := ReadProcStat(pid); ok && st.Alive() {
			left = append(left, pid)
		}
	}
	return left
}
