//go:build !linux

package bench

import "time"

// MonoNow returns a nanosecond clock shared by processes on this machine
// as far as the platform allows; only Linux's is the monotonic one.
func MonoNow() int64 { return time.Now().UnixNano() }

// ProcessCPU returns -1: this process's CPU time is read on Linux only.
func ProcessCPU() int64 { return -1 }
