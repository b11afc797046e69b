package cuda

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestPromptLogprobsMatchPyTorch: prompt logprobs over the reference's
// prompt followed by its greedy tokens equal the PyTorch reference's
// log-softmax at each of those tokens, with the prompt prefilled in chunks.
func TestPromptLogprobsMatchPyTorch(t *testing.T) {
	for _, ref := range loadReferences(t) {
		t.Run(ref.name, func(t *testing.T) {
			e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64, MaxBatchTokens: 5})
			n := len(ref.prompt)
			prompt := append(slices.Clone(ref.prompt), ref.tokens[:31]...)
			for _, from := range []int{0, 1, n - 1, n, n + 7} {
				out, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: prompt,
					Params: server.SamplingParams{MaxNewTokens: 1, PromptLogprobs: true, PromptLogprobsFrom: from}})
				require.NoError(t, err)
				require.Len(t, out.PromptLogprobs, len(prompt)-from)
				if from == 0 {
					require.True(t, math.IsNaN(float64(out.PromptLogprobs[0])), "position 0 has no logprob")
				}
				for i, lp := range out.PromptLogprobs {
					p := from + i
					if p == 0 {
						continue
					}
					require.False(t, math.IsNaN(float64(lp)), "position %d", p)
					require.LessOrEqual(t, lp, float32(0))
					if k := p - n; k >= 0 { // ref.tokens[k] after the reference's decode logits k
						V := ref.cfg.VocabSize
						require.InDelta(t, golden.LogSoftmax(ref.decode[k*V:(k+1)*V], ref.tokens[k]), float64(lp), 1e-4, "from %d position %d", from, p)
					}
				}
				// The sampled token is the reference's next greedy one.
				require.Equal(t, ref.tokens[31:32], out.TokenIDs)
			}
		})
	}
}

// TestPromptLogprobsTeacherForcing: the prompt logprobs of a prompt
// extended by sampled tokens equal the logprobs the engine reported when it
// sampled them one at a time (temperature 1, no truncation), whether the
// extended prompt's blocks are in the prefix cache or not, and whatever the
// prefill's chunking.
func TestPromptLogprobsTeacherForcing(t *testing.T) {
	ref := loadReferences(t)[2]
	for _, mbt := range []int{0, 3, 8} {
		e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 128, MaxBatchTokens: mbt})
		ctx := context.Background()
		sampled, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt,
			Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 20, Seed: seedp(7), Logprobs: true}})
		require.NoError(t, err)
		require.Len(t, sampled.TokenIDs, 20)
		n := len(ref.prompt)
		full := append(slices.Clone(ref.prompt), sampled.TokenIDs...)
		// The sampled sequence's blocks are now cached; the first request
		// wants every position, the second only the last 6 sampled ones.
		for _, from := range []int{0, n + 14} {
			out, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: full,
				Params: server.SamplingParams{MaxNewTokens: 1, PromptLogprobs: true, PromptLogprobsFrom: from}})
			require.NoError(t, err)
			require.LessOrEqual(t, out.CachedTokens, max(from, 1)-1, "rows whose logits are wanted are recomputed")
			if from > 4 {
				require.Positive(t, out.CachedTokens, "the prefix before the wanted rows still comes from the cache")
			}
			for k := max(0, from-n); k < 20; k++ {
				require.InDelta(t, sampled.Logprobs[k], out.PromptLogprobs[n+k-from], 2e-6, "mbt %d from %d token %d", mbt, from, k)
			}
		}
		// Without prompt logprobs the same prompt is served from the cache.
		out, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: full, Params: server.SamplingParams{MaxNewTokens: 1}})
		require.NoError(t, err)
		require.Nil(t, out.PromptLogprobs)
		require.Greater(t, out.CachedTokens, n)
	}
}

func TestPromptLogprobsFromOutsideThePrompt(t *testing.T) {
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	for _, from := range []int{-1, len(ref.prompt)} {
		_, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: ref.prompt,
			Params: server.SamplingParams{MaxNewTokens: 1, PromptLogprobs: true, PromptLogprobsFrom: from}})
		require.ErrorIs(t, err, server.ErrBadRequest)
		require.ErrorContains(t, err, "prompt logprobs from position")
	}
	// A one-token prompt has only position 0, which has no logprob.
	out, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: ref.prompt[:1],
		Params: server.SamplingParams{MaxNewTokens: 2, PromptLogprobs: true}})
	require.NoError(t, err)
	require.Len(t, out.PromptLogprobs, 1)
	require.True(t, math.IsNaN(float64(out.PromptLogprobs[0])))
}
