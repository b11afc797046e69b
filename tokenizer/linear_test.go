package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/cputime"
)

// linearBound is the most CPU time per call that 10× the input may cost:
// linear encoding measures 12–17× (a giant word's merge heap is
// O(n log n) and falls out of the CPU caches), quadratic encoding 100×.
const linearBound = 50.0

// encodeGrowth is how many times the CPU time of one encode grows from n
// bytes of gen's text to 10n (thread CPU time, see cputime.PerCall: other
// processes on a busy machine do not count). The word cache is reset
// before each call: it would answer the repeats.
func encodeGrowth(t *testing.T, tok *Tokenizer, encode func(string) []int32, gen func(int) string, n int) float64 {
	t.Helper()
	per := func(s string) float64 {
		d := cputime.PerCall(func() {
			tok.model.cache = wordCache{}
			tok.model.cache.init()
			if len(encode(s)) == 0 {
				t.Fatalf("no ids for %d bytes", len(s))
			}
		})
		if d == 0 {
			t.Skip("no per-thread CPU clock on this platform")
		}
		return float64(d)
	}
	small, big := gen(n), gen(10*n)
	ts, tb := per(small), per(big)
	t.Logf("%d bytes: %.2fms, %d bytes: %.2fms (%.1f×)", len(small), ts/1e6, len(big), tb/1e6, tb/ts)
	return tb / ts
}

// TestEncodeLinear encodes strings without a newline (one giant word, a
// run of spaces, a mix) of 128 KB and 1.3 MB, and checks that the CPU
// time per encode grows less than linearBound (quadratic growth is 100×).
// The race detector's cost per memory access would make these sizes slow:
// `make test` runs this test in its pass without -race.
// BenchmarkEncodeHuge runs the 10 MB sizes.
func TestEncodeLinear(t *testing.T) {
	if raceEnabled {
		t.Skip("run without -race (make test's second pass does)")
	}
	tok := encoderOnly(qwen(t)) // the segment cache would answer the repeats
	for name, gen := range hugeInputs {
		t.Run(name, func(t *testing.T) {
			r := encodeGrowth(t, tok, tok.Encode, gen, 1<<17)
			require.Less(t, r, linearBound, "encoding is not linear")
		})
	}
}

// TestEncodeLinearCatchesQuadratic injects the fault TestEncodeLinear
// guards against: an encoder that, before each byte, rescans the rest of
// the text for a newline (a naive pre-tokenizer's lookahead). The same
// measurement must put it over linearBound. Smaller sizes than
// TestEncodeLinear's keep the quadratic runs short.
func TestEncodeLinearCatchesQuadratic(t *testing.T) {
	if raceEnabled {
		t.Skip("run without -race (make test's second pass does)")
	}
	tok := encoderOnly(qwen(t))
	quadratic := func(s string) []int32 {
		rescanned := 0
		for i := range s {
			for j := i; j < len(s) && s[j] != '\n'; j++ {
				rescanned++
			}
		}
		rescanSink = rescanned
		return tok.Encode(s)
	}
	r := encodeGrowth(t, tok, quadratic, hugeInputs["letters"], 4<<10)
	require.Greater(t, r, linearBound, "a quadratic encoder passed the linear-time check")
}

// rescanSink keeps the injected rescan from being optimized away.
var rescanSink int
