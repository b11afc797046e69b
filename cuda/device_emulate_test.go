//go:build cuda && cudaemu

package cuda

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/cuda/gpu"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestEngineDeviceMemory (emulated device, which counts allocations): an
// engine on the GPU frees its device memory on Sleep and Close, and an
// Open that runs out of device memory part-way leaves nothing allocated.
func TestEngineDeviceMemory(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[2]
	dir := t.TempDir()
	require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
	base := gpu.EmulatedLiveBuffers()

	e, err := Open(dir, Options{Device: model.CUDA, BlockSize: 4, KVBlocks: 32})
	require.NoError(t, err)
	opened := gpu.EmulatedLiveBuffers() - base // RoPE table, weights, KV cache
	req := server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 8}}
	_, err = e.Generate(ctx, req)
	require.NoError(t, err)
	require.NoError(t, e.Sleep(ctx, server.SleepWeights))
	require.Equal(t, base+1, gpu.EmulatedLiveBuffers(), "asleep without weights: only the RoPE table stays")
	require.NoError(t, e.WakeUp(ctx))
	out, err := e.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, ref.tokens[:8], out.TokenIDs)
	require.NoError(t, e.Close())
	require.Equal(t, base, gpu.EmulatedLiveBuffers())

	// All but the last KV cache buffer fit.
	gpu.EmulateOutOfMemoryAfter(opened - 1)
	_, err = Open(dir, Options{Device: model.CUDA, BlockSize: 4, KVBlocks: 32})
	gpu.EmulateOutOfMemoryAfter(-1)
	require.ErrorContains(t, err, "KV cache: gpu: cudaMalloc: out of memory (emulated)")
	require.Equal(t, base, gpu.EmulatedLiveBuffers())
}

// TestKVCacheBF16OnDevice: a bf16 KV cache is refused for a model on the
// GPU, by the engine and by the model, with an error that says so.
func TestKVCacheBF16OnDevice(t *testing.T) {
	ref := loadReferences(t)[0]
	dir := t.TempDir()
	require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
	_, err := Open(dir, Options{Device: model.CUDA, KVCache: model.KVBF16})
	require.ErrorContains(t, err, "a bf16 KV cache is for models on the CPU")
	m, err := model.NewOn(ref.cfg, model.CUDA, nil)
	require.NoError(t, err)
	defer m.Close()
	_, err = m.NewKVCacheBF16(4, 4)
	require.ErrorIs(t, err, model.ErrInput)
}

// TestTopLogprobsAndPenaltiesOnDevice: with the model on the (emulated)
// GPU the logits come to the host and are sampled there, so top logprobs
// and the presence and frequency penalties work as on the CPU: the same
// tokens, logprobs and alternatives as the CPU engine over the same
// weights, within the two backends' float rounding.
func TestTopLogprobsAndPenaltiesOnDevice(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[2]
	dir := t.TempDir()
	require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
	req := server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 8, Logprobs: true, TopLogprobs: 4,
		PresencePenalty: 0.5, FrequencyPenalty: 0.25}}
	var outs [2]server.TokenOutput
	for i, dev := range []model.Device{model.CPU, model.CUDA} {
		e, err := Open(dir, Options{Device: dev, BlockSize: 4, KVBlocks: 32})
		require.NoError(t, err)
		outs[i], err = e.Generate(ctx, req)
		require.NoError(t, err)
		require.NoError(t, e.Close())
	}
	cpu, dev := outs[0], outs[1]
	require.Equal(t, cpu.TokenIDs, dev.TokenIDs)
	require.Len(t, dev.TopLogprobs, len(dev.TokenIDs))
	for i := range dev.TopLogprobs {
		require.Len(t, dev.TopLogprobs[i], 4)
		require.InDelta(t, cpu.Logprobs[i], dev.Logprobs[i], 1e-3)
		for j := range dev.TopLogprobs[i] {
			require.Equal(t, cpu.TopLogprobs[i][j].TokenID, dev.TopLogprobs[i][j].TokenID)
			require.InDelta(t, cpu.TopLogprobs[i][j].Logprob, dev.TopLogprobs[i][j].Logprob, 1e-3)
		}
	}
}
