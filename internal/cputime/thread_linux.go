//go:build linux

package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// Thread is the CPU time the calling OS thread has used, with nanosecond
// resolution (CLOCK_THREAD_CPUTIME_ID; getrusage counts in scheduler
// ticks), 0 if it cannot be read.
func Thread() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}
