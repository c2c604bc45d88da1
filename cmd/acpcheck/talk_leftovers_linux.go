package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// canFindLeftovers reports whether this system lets acpcheck list the
// processes an agent left behind.
const canFindLeftovers = true

// procInfo is what /proc/PID/stat says of a process.
type procInfo struct{ pid, ppid, pgrp int }

func readProc(pid int) (procInfo, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procInfo{}, false
	}
	s := string(b)
	end := strings.LastIndexByte(s, ')') // the command's name may hold anything
	if end < 0 {
		return procInfo{}, false
	}
	f := strings.Fields(s[end+1:])
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" { // a zombie has exited
		return procInfo{}, false
	}
	p := procInfo{pid: pid}
	p.ppid, _ = strconv.Atoi(f[1])
	p.pgrp, _ = strconv.Atoi(f[2])
	return p, true
}

// processes lists the live processes.
func processes() []procInfo {
	entries, _ := os.ReadDir("/proc")
	var procs []procInfo
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if p, ok := readProc(pid); ok {
				procs = append(procs, p)
			}
		}
	}
	return procs
}

// group lists the live processes of process group pgid.
func group(pgid int) []int {
	var out []int
	for _, p := range processes() {
		if p.pgrp == pgid {
			out = append(out, p.pid)
		}
	}
	return out
}

// family lists the live processes descended from root or in its process
// group, root excluded.
func family(root int) []int {
	procs := processes()
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
		if in[p.pid] && p.pid != root {
			out = append(out, p.pid)
		}
	}
	return out
}

// alive lists those of pids still running.
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		if _, ok := readProc(pid); ok {
			out = append(out, pid)
		}
	}
	return out
}

// marked lists the live processes whose environment holds markEnv=mark:
// what an agent started, however it left the agent's group and descendants
// (a daemon that double-forked and called setsid, reparented to init).
// A process that cleared its environment is not found this way.
func marked(mark string) []int {
	want := []byte(markEnv + "=" + mark + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.HasPrefix(env, want) && !bytes.Contains(env, append([]byte{0}, want...)) {
			continue
		}
		if _, ok := readProc(pid); ok {
			out = append(out, pid)
		}
	}
	return out
}
