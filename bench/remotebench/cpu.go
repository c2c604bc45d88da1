package remotebench

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time, user and system, all threads, that process
// pid ("self" for this one) has used, from /proc/PID/stat; -1 where there
// is no such file. On a shared machine it measures a process's own cost
// where the clock measures everyone's.
func ProcessCPU(pid string) time.Duration {
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
