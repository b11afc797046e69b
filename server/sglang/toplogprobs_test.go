package sglang

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// TestParseTopLogprobs: SGLang's output_top_logprobs (a list of
// [logprob, token_id, text] per position, null where a position has
// none) is read in its order, cut to k; malformed ones name the place.
func TestParseTopLogprobs(t *testing.T) {
	tops, err := parseTopLogprobs([]byte(`[[[-0.1,5,null],[-1.5,9,"x"],[-2,3,null]],null,[[null,4,null]]]`), 2)
	require.NoError(t, err)
	require.Equal(t, [][]server.TopLogprob{{{TokenID: 5, Logprob: -0.1}, {TokenID: 9, Logprob: -1.5}}, {}, {{TokenID: 4, Logprob: float32(math.Inf(-1))}}}, tops)
	for _, bad := range []string{`{}`, `[[[0.5,1,null]]]`, `[[["x",1,null]]]`, `[[1,2]]`} {
		_, err := parseTopLogprobs([]byte(bad), 2)
		require.Error(t, err, bad)
	}
}

// FuzzParseTopLogprobs: any output_top_logprobs is read or refused, never
// a panic; what is read has at most k alternatives per position, each
// with a logprob ≤ 0.
func FuzzParseTopLogprobs(f *testing.F) {
	f.Add([]byte(`[[[-0.1,5,null],[-1.5,9,"x"]],null]`), 2)
	f.Add([]byte(`[[[null,4,null]]]`), 1)
	f.Add([]byte(`[[],[[-1e40,1,null]]]`), 20)
	f.Fuzz(func(t *testing.T, data []byte, k int) {
		k = 1 + (k&0xff)%server.MaxTopLogprobs
		tops, err := parseTopLogprobs(data, k)
		if err != nil {
			return
		}
		for _, row := range tops {
			require.NotNil(t, row)
			require.LessOrEqual(t, len(row), k)
			for _, e := range row {
				require.LessOrEqual(t, e.Logprob, float32(0))
				require.GreaterOrEqual(t, e.TokenID, int32(0))
			}
		}
	})
}
