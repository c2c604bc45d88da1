package bench

import "golang.org/x/sys/unix"

// MonoNow returns CLOCK_MONOTONIC in nanoseconds: the clock that Node's
// process.hrtime.bigint() reads too, so stamps taken in different
// processes on one machine can be subtracted.
func MonoNow() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(err)
	}
	return ts.Nano()
}

// ProcessCPU returns the CPU time, user and system, that every thread of
// this process has used, in nanoseconds (getrusage, microsecond
// resolution); -1 if it cannot be read. On a shared machine it measures a
// benchmark's own cost where the clock measures everyone's.
func ProcessCPU() int64 {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
