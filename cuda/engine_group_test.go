package cuda

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSharedPromptGroup: sampled continuations of one prompt (a GRPO
// group) decode together over the prompt's cached blocks, which the
// attention kernel reads once per step for all of them (decode groups).
// Two groups of six, submitted interleaved, are put side by side in each
// step's batch so that their groups form; each sample gives the tokens and
// logprobs the same request gets alone on a fresh engine.
func TestSharedPromptGroup(t *testing.T) {
	ref := loadReferences(t)[2] // qwen3: GQA 4, paired query heads
	r := rand.New(rand.NewPCG(5, 5))
	var prompts [2][]int32
	for i := range prompts {
		prompts[i] = make([]int32, 150)
		for j := range prompts[i] {
			prompts[i][j] = int32(r.IntN(ref.cfg.VocabSize))
		}
	}
	req := func(i int) server.GenerateRequest {
		return server.GenerateRequest{PromptIDs: prompts[i%2], Params: server.SamplingParams{Temperature: 1,
			MaxNewTokens: 24, Seed: seedp(uint64(i + 1)), Logprobs: true}}
	}
	opts := Options{BlockSize: 16, KVBlocks: 256}
	e := newEngine(t, ref, opts)
	ctx := context.Background()
	for _, p := range prompts {
		_, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: p, Params: server.SamplingParams{MaxNewTokens: 1}})
		require.NoError(t, err) // the prompt's 9 full blocks are cached now
	}
	require.NoError(t, e.Pause(ctx, server.PauseKeep))
	const n = 12
	got := make([]server.TokenOutput, n)
	var wg sync.WaitGroup
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := e.Generate(ctx, req(i))
			assert.NoError(t, err)
			got[i] = out
		}()
		// One at a time, so that they queue interleaved: prompt 0, 1, 0, ...
		require.Eventually(t, func() bool { return e.Stats().Waiting == i+1 }, 10*time.Second, time.Millisecond)
	}
	require.NoError(t, e.Resume(ctx))
	wg.Wait()
	require.GreaterOrEqual(t, e.Stats().BatchSeqsMax, n)
	for i, out := range got {
		require.Equal(t, 144, out.CachedTokens, "sample %d shares its prompt's blocks", i)
		alone, err := newEngine(t, ref, opts).Generate(ctx, req(i))
		require.NoError(t, err)
		require.Equal(t, alone.TokenIDs, out.TokenIDs, "sample %d", i)
		require.Equal(t, alone.Logprobs, out.Logprobs, "sample %d", i)
	}
}
