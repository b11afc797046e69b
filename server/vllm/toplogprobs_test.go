package vllm

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// TestParseTopsVLLMShapes: the alternatives as vLLM writes them — its
// chat-shaped list may put the sampled token first and need not be
// sorted; a completions object maps "token_id:N" to a logprob, null for a
// position without — read as the k most probable, best first; bad ones
// are ErrBadResponse naming the place.
func TestParseTopsVLLMShapes(t *testing.T) {
	content := `{"content":[
		{"token":"token_id:5","logprob":-2.5,"top_logprobs":[{"token":"token_id:5","logprob":-2.5,"bytes":[]},{"token":"token_id:9","logprob":-0.1},{"token":"token_id:3","token_id":3,"logprob":-1}]},
		{"token":"token_id:4","token_id":4,"logprob":-0.5,"top_logprobs":[]}]}`
	tops, err := parseContentTops([]byte(content), 2, 2)
	require.NoError(t, err)
	require.Equal(t, [][]server.TopLogprob{{{TokenID: 9, Logprob: -0.1}, {TokenID: 3, Logprob: -1}}, {}}, tops)

	comp := `[{"token_id:5":-2.5,"token_id:9":-0.1,"token_id:3":-1}, null, {"token_id:4":-9999.0}]`
	tops, err = parseCompletionTops([]byte(comp), 3, 5)
	require.NoError(t, err)
	require.Equal(t, [][]server.TopLogprob{{{TokenID: 9, Logprob: -0.1}, {TokenID: 3, Logprob: -1}, {TokenID: 5, Logprob: -2.5}}, {}, {{TokenID: 4, Logprob: -9999}}}, tops)

	for _, bad := range []struct{ data, want string }{
		{`[{"top_logprobs":[{"token":"hello","logprob":-1}]}]`, "return_tokens_as_token_ids"},
		{`[{"top_logprobs":[{"token_id":1,"logprob":0.5}]}]`, "not ≤ 0"},
		{`[{"top_logprobs":[{"token_id":1}]}]`, "missing"},
		{`[{"top_logprobs":[]},{"top_logprobs":[]}]`, "2 entries for 1"},
	} {
		_, err := parseContentTops([]byte(bad.data), 1, 2)
		require.ErrorIs(t, err, server.ErrBadResponse, bad.data)
		require.ErrorContains(t, err, bad.want)
	}
	tops, err = parseContentTops([]byte(`[{"top_logprobs":[{"token_id":5,"logprob":-3},{"token_id":3,"logprob":-2},{"token_id":5,"logprob":-1}]}]`), 1, 5)
	require.NoError(t, err)
	require.Equal(t, [][]server.TopLogprob{{{TokenID: 5, Logprob: -1}, {TokenID: 3, Logprob: -2}}}, tops, "a repeated id keeps its best entry")
	_, err = parseCompletionTops([]byte(`[{"hello":-1}]`), 1, 2)
	require.ErrorContains(t, err, "return_tokens_as_token_ids")
	_, err = parseCompletionTops(nil, 1, 2)
	require.ErrorContains(t, err, "missing")
}

// FuzzParseTops: whatever a server sends as top logprobs is read or
// refused with ErrBadResponse, never a panic; what is read has n lists of
// at most k alternatives, sorted, ids unique, logprobs ≤ 0.
func FuzzParseTops(f *testing.F) {
	f.Add([]byte(`{"content":[{"top_logprobs":[{"token":"token_id:5","logprob":-2.5},{"token_id":3,"logprob":-1}]}]}`), true, 2)
	f.Add([]byte(`[{"token_id:5":-2.5,"token_id:9":-0.1}]`), false, 1)
	f.Add([]byte(`[null]`), false, 3)
	f.Add([]byte(`[{"top_logprobs":[{"token_id":5,"logprob":-1},{"token_id":3,"logprob":-2},{"token_id":5,"logprob":-3}]}]`), true, 5)
	f.Add([]byte(`[{"top_logprobs":[{"token_id":-1,"logprob":-1}]}]`), true, 20)
	f.Fuzz(func(t *testing.T, data []byte, content bool, k int) {
		k = 1 + (k&0xff)%server.MaxTopLogprobs
		parse := parseCompletionTops
		if content {
			parse = parseContentTops
		}
		tops, err := parse(data, 1, k)
		if err != nil {
			require.ErrorIs(t, err, server.ErrBadResponse)
			return
		}
		require.Len(t, tops, 1)
		row := tops[0]
		require.LessOrEqual(t, len(row), k)
		seen := map[int32]bool{}
		for i, e := range row {
			require.False(t, seen[e.TokenID])
			seen[e.TokenID] = true
			require.GreaterOrEqual(t, e.TokenID, int32(0))
			require.LessOrEqual(t, e.Logprob, float32(0))
			if i > 0 {
				require.GreaterOrEqual(t, row[i-1].Logprob, e.Logprob)
			}
		}
	})
}
