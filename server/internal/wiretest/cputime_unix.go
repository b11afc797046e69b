//go:build unix

package wiretest

import (
	"syscall"
	"time"
)

// CPUTime is the CPU time (user + system) this process has used: on a
// shared machine it measures the work of a benchmark better than the wall
// clock does.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
