//go:build cuda

package cuda

import (
	"context"
	"sync"
	"testing"

	"github.com/agentrl/agentrl/cuda/gpu"
	"github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

func TestOpenCUDANoDevice(t *testing.T) {
	if gpu.Available() {
		t.Skip("a CUDA device is present")
	}
	ref := loadReferences(t)[0]
	dir := t.TempDir()
	require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
	_, err := Open(dir, Options{Device: model.CUDA})
	require.ErrorIs(t, err, gpu.ErrNoDevice)
}

// TestEngineOnGPU runs the engine end to end on the GPU for every variant:
// concurrent greedy requests for the reference prompt give PyTorch's 32
// tokens and logprobs, whether they computed the prompt or found it in
// the prefix cache, and again after the weights were dropped and reloaded
// onto the device by Sleep/WakeUp.
func TestEngineOnGPU(t *testing.T) {
	if !gpu.Available() {
		t.Skip("no CUDA device: the GPU engine is compile-checked only")
	}
	ctx := context.Background()
	for _, ref := range loadReferences(t) {
		t.Run(ref.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
			e, err := Open(dir, Options{Device: model.CUDA, BlockSize: 4, KVBlocks: 64})
			require.NoError(t, err)
			require.Equal(t, model.CUDA, e.Model().Device())
			V := ref.cfg.VocabSize
			check := func(out server.TokenOutput) {
				t.Helper()
				require.Equal(t, ref.tokens, out.TokenIDs)
				for i, id := range out.TokenIDs {
					require.InDelta(t, golden.LogSoftmax(ref.decode[i*V:(i+1)*V], id), float64(out.Logprobs[i]), 1e-4)
				}
			}
			req := server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 32, Logprobs: true}}
			first, err := e.Generate(ctx, req) // computes the prompt: a miss
			require.NoError(t, err)
			check(first)
			outs := make([]server.TokenOutput, 3)
			errs := make([]error, 3)
			var wg sync.WaitGroup
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					outs[i], errs[i] = e.Generate(ctx, req) // full blocks of the prompt are hits
				}()
			}
			wg.Wait()
			for i := range outs {
				require.NoError(t, errs[i])
				check(outs[i])
				require.InDeltaSlice(t, first.Logprobs, outs[i].Logprobs, 1e-5, "prefix-cache hit vs miss")
			}
			st := e.Stats()
			require.Positive(t, st.CachedTokens, "prefix cache hits")
			require.NoError(t, e.CheckAccounting(ctx))

			require.NoError(t, e.Sleep(ctx, server.SleepWeights))
			require.NoError(t, e.WakeUp(ctx))
			again, err := e.Generate(ctx, req)
			require.NoError(t, err)
			check(again)

			// Weights sent as tensors are uploaded to the device too.
			var ws server.Weights
			shapes := ref.cfg.TensorShapes()
			for name, v := range model.RandomWeights(ref.cfg, ref.seed) {
				ws.Tensors = append(ws.Tensors, server.Tensor{Name: name, Shape: shapes[name], Data: v})
			}
			ws.Version = 7
			require.NoError(t, e.UpdateWeights(ctx, ws))
			updated, err := e.Generate(ctx, req)
			require.NoError(t, err)
			check(updated)
			require.Equal(t, int64(7), updated.WeightVersion)
			require.NoError(t, e.Close())
		})
	}
}
