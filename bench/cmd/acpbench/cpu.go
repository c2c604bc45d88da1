package main

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// procCPU is the CPU time, user and system, all threads, that process pid
// ("self" for this one) has used, from /proc/PID/stat; -1 where there is no
// such file. On a shared machine it measures a side's own cost where the
// clock measures everyone's.
func procCPU(pid string) time.Duration {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 {
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 12 {
			utime, err1 := strconv.ParseInt(f[11], 10, 64)
			stime, err2 := strconv.ParseInt(f[12], 10, 64)
			if err1 == nil && err2 == nil {
				return time.Duration(utime+stime) * (time.Second / 100) // USER_HZ
			}
		}
	}
	return -1
}

// cpuMeter measures the CPU time two processes use over a phase.
type cpuMeter struct {
	server           string
	client0, server0 time.Duration
}

func startCPU(serverPID int) cpuMeter {
	m := cpuMeter{server: strconv.Itoa(serverPID)}
	m.client0, m.server0 = procCPU("self"), procCPU(m.server)
	return m
}

// perCall returns each side's CPU µs per call since start, or -1 for a side
// that could not be read.
func (m cpuMeter) perCall(calls int) (client, server float64) {
	per := func(start, end time.Duration) float64 {
		if start < 0 || end < 0 {
			return -1
		}
		return float64(end-start) / float64(time.Microsecond) / float64(calls)
	}
	return per(m.client0, procCPU("self")), per(m.server0, procCPU(m.server))
}

// procSched is what the scheduler has counted for every thread of process
// pid: the time they ran, to the nanosecond (/proc/PID/task/*/schedstat),
// and their context switches, voluntary and not (each wait for input, a
// lock or a wake-up is one); -1 and -1 where there are no such files.
// Threads that have exited are not counted, which for a Go process, whose
// threads live on, loses nothing.
func procSched(pid string) (cpu time.Duration, switches int64) {
	tasks, err := os.ReadDir("/proc/" + pid + "/task")
	if err != nil || len(tasks) == 0 {
		return -1, -1
	}
	for _, t := range tasks {
		dir := "/proc/" + pid + "/task/" + t.Name() + "/"
		if f := strings.Fields(readString(dir + "schedstat")); len(f) > 0 {
			ns, _ := strconv.ParseInt(f[0], 10, 64)
			cpu += time.Duration(ns)
		}
		for _, line := range strings.Split(readString(dir+"status"), "\n") {
			if name, v, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(name, "ctxt_switches") {
				n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
				switches += n
			}
		}
	}
	return cpu, switches
}

// readString is the file's text, or "" where it cannot be read.
func readString(name string) string {
	b, _ := os.ReadFile(name)
	return string(b)
}
