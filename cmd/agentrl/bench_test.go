package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// seq builds a streamed sequence: sent at t0 + start ms, runs of tokens
// arriving at t0 + at[i] ms holding tokens[i] each.
func seq(t0 time.Time, start int, at []int, tokens []int) streamed {
	s := streamed{start: t0.Add(time.Duration(start) * time.Millisecond), tokens: tokens}
	for _, ms := range at {
		s.at = append(s.at, t0.Add(time.Duration(ms)*time.Millisecond))
	}
	return s
}

// TestStreamedRate checks the decode rate bench engine and bench batch1
// report against rates worked out by hand, including the cases that the
// difference of two runs' times got wrong.
func TestStreamedRate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name        string
		seqs        []streamed
		rate        float64 // tokens per second
		withPrefill bool
	}{{
		// One sequence: the first run (the prefill's token) is left out,
		// 3 tokens in the 30 ms after it.
		name: "batch-1",
		seqs: []streamed{seq(t0, 0, []int{100, 110, 120, 130}, []int{1, 1, 1, 1})},
		rate: 3 / 0.030,
	}, {
		// Runs of several tokens (a reader slower than the steps) count
		// whole.
		name: "batch-1, coalesced runs",
		seqs: []streamed{seq(t0, 0, []int{100, 120}, []int{1, 5})},
		rate: 5 / 0.020,
	}, {
		// Two sequences whose prefills end 10 ms apart: the window is from
		// the later first token (20) to the earlier last token (60); the
		// runs strictly after 20 and up to 60 hold 4 + 4 tokens.
		name: "aggregate, staggered starts and ends",
		seqs: []streamed{
			seq(t0, 0, []int{10, 20, 30, 40, 50, 60}, []int{1, 1, 1, 1, 1, 1}),
			seq(t0, 0, []int{20, 30, 40, 50, 60, 70}, []int{1, 1, 1, 1, 1, 1}),
		},
		rate: 8 / 0.040,
	}, {
		// Every token in one run: the model outpaced the reader, so the
		// rate is the whole run's, from the request to the last token.
		name:        "all tokens in the first run",
		seqs:        []streamed{seq(t0, 0, []int{4}, []int{64})},
		rate:        64 / 0.004,
		withPrefill: true,
	}, {
		// A sequence done before the other decodes (prefills in turn): no
		// window where both decode, so the whole run's rate.
		name: "no overlap",
		seqs: []streamed{
			seq(t0, 0, []int{10, 20}, []int{1, 1}),
			seq(t0, 0, []int{30, 40}, []int{1, 1}),
		},
		rate:        4 / 0.040,
		withPrefill: true,
	}}
	for _, tt := range tests {
		rate, pre, err := streamedRate(tt.seqs)
		require.NoError(t, err, tt.name)
		require.InDelta(t, tt.rate, rate, 1e-9*tt.rate, tt.name)
		require.Equal(t, tt.withPrefill, pre, tt.name)
		require.Positive(t, rate, tt.name)
	}

	_, _, err := streamedRate(nil)
	require.ErrorContains(t, err, "no sequences")
	_, _, err = streamedRate([]streamed{seq(t0, 0, nil, nil)})
	require.ErrorContains(t, err, "sequence 0 received no tokens")
	_, _, err = streamedRate([]streamed{seq(t0, 5, []int{5}, []int{3})})
	require.ErrorContains(t, err, "clock did not advance")
}
