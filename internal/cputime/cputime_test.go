//go:build unix

package cputime

import (
	"testing"
	"time"
)

// TestProcessCountsWork: busy work on this goroutine moves the process CPU
// time forward (however loaded the machine is, it gets there eventually),
// and it never goes backwards.
func TestProcessCountsWork(t *testing.T) {
	start := Process()
	if start <= 0 {
		t.Fatalf("Process() = %v at start, want > 0 (the runtime has run)", start)
	}
	deadline := time.Now().Add(time.Minute)
	x, last := 1.0, start
	for last-start < 20*time.Millisecond {
		if time.Now().After(deadline) {
			t.Fatalf("a minute of busy work counted as %v of CPU", last-start)
		}
		for range 10000 {
			x = x*1.0000001 + 1e-9
		}
		now := Process()
		if now < last {
			t.Fatalf("CPU time went backwards: %v after %v", now, last)
		}
		last = now
	}
	_ = x
}

// TestPerCallScales: work 8 times as long measures 8 times as long per
// call, within a factor of two either way, whatever the machine's load:
// the property the linear-time tests build on.
func TestPerCallScales(t *testing.T) {
	if Thread() == 0 {
		t.Skip("no per-thread CPU clock on this platform")
	}
	work := func(n int) func() {
		return func() {
			x := 1.0
			for range n {
				x = x*1.0000001 + 1e-9
			}
			sink = x
		}
	}
	small, big := PerCall(work(200_000)), PerCall(work(1_600_000))
	r := float64(big) / float64(small)
	t.Logf("%v, %v: %.1f×", small, big, r)
	if r < 4 || r > 16 {
		t.Fatalf("8× the work measured %.1f× the CPU time per call", r)
	}
}

var sink float64
