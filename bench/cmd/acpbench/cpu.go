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
