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
