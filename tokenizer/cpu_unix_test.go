//go:build unix

package tokenizer

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) used by the whole process so
// far. Benchmarks report throughput per CPU second besides wall time: on a
// shared machine the wall clock also counts other processes' work.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
