package cputime

import (
	"runtime"
	"time"
)

// Round is the least CPU time one round of PerCall measures: long enough
// that a context switch or a GC assist is a small part of it.
const Round = 20 * time.Millisecond

// PerCall is the CPU time one call of f takes on the calling thread: the
// best of three rounds, each calling f until at least Round of this
// thread's CPU time has gone by, after a GC so that one round does not pay
// for another's garbage. The goroutine is locked to its thread meanwhile,
// so other goroutines and other processes do not count. It is 0 where the
// thread's CPU time cannot be read (see Thread).
//
// The linear-time tests compare PerCall at two input sizes in one run: the
// ratio is what they check, never a duration.
func PerCall(f func()) time.Duration {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if Thread() == 0 {
		return 0
	}
	best := time.Duration(1<<63 - 1)
	for range 3 {
		runtime.GC()
		start, n := Thread(), 0
		for {
			f()
			n++
			if d := Thread() - start; d >= Round {
				best = min(best, d/time.Duration(n))
				break
			}
		}
	}
	return best
}
