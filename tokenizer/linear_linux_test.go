package tokenizer

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestEncodeLinear encodes strings without a newline (one giant word, a run
// of spaces, a mix) at two sizes 10× apart and checks the time grows about
// linearly. The bound is loose (50× for 10× the input: the merge heap of a
// giant word is O(n log n) and falls out of the CPU caches) so that a busy
// machine cannot fail it, while quadratic behavior (100×) still does.
// BenchmarkEncodeHuge runs the 10 MB sizes.
func TestEncodeLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	size := 1 << 17
	if raceEnabled {
		size = 1 << 14
	}
	tok := encoderOnly(qwen(t)) // the segment cache would answer the repeats
	for name, gen := range hugeInputs {
		t.Run(name, func(t *testing.T) {
			small, big := gen(size), gen(10*size)
			elapsed := func(s string) time.Duration {
				// CPU time of this thread, not wall time: other processes
				// on a busy machine do not count.
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				best := time.Duration(1 << 62)
				for i := 0; i < 2; i++ {
					tok.model.cache = wordCache{}
					tok.model.cache.init()
					start := threadCPU(t)
					ids := tok.Encode(s)
					best = min(best, threadCPU(t)-start)
					require.NotEmpty(t, ids)
				}
				return max(best, time.Millisecond)
			}
			ts, tb := elapsed(small), elapsed(big)
			t.Logf("%d bytes: %v, %d bytes: %v (%.1f×)", len(small), ts, len(big), tb, float64(tb)/float64(ts))
			require.Less(t, float64(tb)/float64(ts), 50.0, "encoding is not linear")
		})
	}
}

// threadCPU is the CPU time used by the calling OS thread.
func threadCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	require.NoError(t, syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru))
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
