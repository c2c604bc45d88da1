//go:build linux

package agents

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// procStat is what /proc/<pid>/stat says of a process.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// readStat reads /proc/<pid>/stat; ok is false once the process is gone.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 {
		return procStat{}, false
	}
	st := procStat{pid: pid, state: f[0][0]}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	return st, true
}

// allProcs lists every process the system shows.
func allProcs() []procStat {
	entries, _ := os.ReadDir("/proc")
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			out = append(out, st)
		}
	}
	return out
}

// processTree is root and every live process descended from it or in its
// process group.
func processTree(root int) []int {
	procs := allProcs()
	in := map[int]bool{root: true}
	for grew := true; grew; {
		grew = false
		for _, p := range procs {
			if !in[p.pid] && (in[p.ppid] || p.pgrp == root) {
				in[p.pid], grew = true, true
			}
		}
	}
	var out []int
	for _, p := range procs {
		if in[p.pid] && alive(p) {
			out = append(out, p.pid)
		}
	}
	return out
}

// groupMembers lists the live processes of process group pgrp.
func groupMembers(pgrp int) []int {
	var out []int
	for _, p := range allProcs() {
		if p.pgrp == pgrp && alive(p) {
			out = append(out, p.pid)
		}
	}
	return out
}

// alive: a zombie has exited, and only waits for a parent (or an init that
// may never reap it).
func alive(p procStat) bool { return p.state != 'Z' && p.state != 'X' }

// stillAlive lists those of pids that have not exited.
func stillAlive(pids []int) []int {
	var left []int
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && alive(st) {
			left = append(left, pid)
		}
	}
	return left
}
