package main

import (
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/acpkit/acprpc/bench/remotebench"
)

// procCPU is remotebench.ProcessCPU: a process's CPU time, user and
// system, all threads, or -1.
func procCPU(pid string) time.Duration { return remotebench.ProcessCPU(pid) }

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
