package cuda

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestKVCacheBF16 runs the engine on a bf16 KV cache: 32 greedy tokens equal
// PyTorch's with keys and values rounded to bf16 where the cache stores them
// (testdata/reference_kvbf16.py), logprobs match its log-softmax, and the
// same KVMemory holds twice the blocks of an fp32 cache (a block's bytes
// halved).
func TestKVCacheBF16(t *testing.T) {
	f := golden.Open(t, "testdata/reference_kvbf16.safetensors")
	for _, ref := range loadReferences(t) {
		t.Run(ref.name, func(t *testing.T) {
			tokens, decode := f.Int32(ref.name+".tokens"), f.Float32(ref.name+".decode_logits")
			e := newEngine(t, ref, Options{BlockSize: 4, KVMemory: 1 << 20, KVCache: model.KVBF16})
			out, err := e.Generate(context.Background(), server.GenerateRequest{
				PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 32, Logprobs: true}})
			require.NoError(t, err)
			require.Equal(t, tokens, out.TokenIDs)
			V := ref.cfg.VocabSize
			for i, id := range out.TokenIDs {
				require.InDelta(t, golden.LogSoftmax(decode[i*V:(i+1)*V], id), float64(out.Logprobs[i]), 5e-4)
			}
			fp32 := newEngine(t, ref, Options{BlockSize: 4, KVMemory: 1 << 20})
			require.Equal(t, int(1<<20/ref.cfg.BytesPerBlock(model.KVBF16, 4)), e.Stats().KVBlocks)
			require.GreaterOrEqual(t, e.Stats().KVBlocks, 2*fp32.Stats().KVBlocks)
		})
	}
}

func TestKVCacheBadType(t *testing.T) {
	ref := loadReferences(t)[0]
	m, err := model.NewRandom(ref.cfg, ref.seed, nil)
	require.NoError(t, err)
	_, err = New(m, Options{KVCache: "fp16"})
	require.ErrorContains(t, err, `Options.KVCache: model: bad input: unknown KV cache type "fp16" (want fp32 or bf16)`)
}
