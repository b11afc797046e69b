//go:build linux

package cuda

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestOpenBF16Z: an engine with bf16z weights, compressed at load from a
// bf16 checkpoint or mapped from a packed one, generates a bf16 engine's
// tokens and logprobs bit for bit, before and after sleep and wake-up.
func TestOpenBF16Z(t *testing.T) {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 3000, HiddenSize: 128, IntermediateSize: 192, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 32, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPositionEmbeddings: 128,
		TieWordEmbeddings: true}
	dir := t.TempDir()
	require.NoError(t, model.WriteRandomDir(dir, cfg, 23, model.WriteOptions{DType: safetensors.BF16}))
	m, err := model.LoadWith(dir, kernels.NewCPU(2), model.LoadOptions{Weights: model.WeightsBF16Z})
	require.NoError(t, err)
	packed := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(packed, "config.json"), b, 0o644))
	require.NoError(t, m.WritePacked(filepath.Join(packed, safetensors.SingleFile)))

	ctx := context.Background()
	req := server.GenerateRequest{PromptIDs: []int32{5, 17, 2999, 4, 1000}, Params: server.SamplingParams{MaxNewTokens: 12, Logprobs: true}}
	ref, err := Open(dir, Options{BlockSize: 4, KVBlocks: 64})
	require.NoError(t, err)
	defer ref.Close()
	require.Equal(t, model.WeightsBF16, ref.Model().Weights())
	want, err := ref.Generate(ctx, req)
	require.NoError(t, err)

	for _, tc := range []struct {
		dir    string
		opt    Options
		mapped bool
	}{
		{dir, Options{BlockSize: 4, KVBlocks: 64, Weights: model.WeightsBF16Z}, false},
		{packed, Options{BlockSize: 4, KVBlocks: 64}, true},
		{packed, Options{BlockSize: 4, KVBlocks: 64, CopyWeights: true}, false},
	} {
		e, err := Open(tc.dir, tc.opt)
		require.NoError(t, err)
		require.Equal(t, model.WeightsBF16Z, e.Model().Weights())
		require.Equal(t, tc.mapped, e.Model().Mapped())
		got, err := e.Generate(ctx, req)
		require.NoError(t, err)
		require.Equal(t, want.TokenIDs, got.TokenIDs)
		require.Equal(t, want.Logprobs, got.Logprobs)
		require.NoError(t, e.Sleep(ctx, server.SleepWeights))
		require.NoError(t, e.WakeUp(ctx))
		got, err = e.Generate(ctx, req)
		require.NoError(t, err)
		require.Equal(t, want.TokenIDs, got.TokenIDs)
		require.Equal(t, want.Logprobs, got.Logprobs)
		require.NoError(t, e.Close())
	}
}
