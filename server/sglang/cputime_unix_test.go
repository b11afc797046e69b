//go:build unix

package sglang_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) this process has used: on a
// shared machine it measures the work of a benchmark better than the wall
// clock does.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
