//go:build linux

package cuda

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestOpenMapWeights: an engine computing from its mapped bf16 checkpoint
// (the default) generates the copied engine's (Options.CopyWeights) tokens and logprobs
// bit for bit, maps the checkpoint again on wake-up, and fails requests
// with an error naming the file, instead of dying of SIGBUS, once the file
// is truncated under it.
func TestOpenMapWeights(t *testing.T) {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 3000, HiddenSize: 64, IntermediateSize: 96, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPositionEmbeddings: 128,
		TieWordEmbeddings: true}
	dir := t.TempDir()
	require.NoError(t, model.WriteRandomDir(dir, cfg, 21, model.WriteOptions{DType: safetensors.BF16}))
	ctx := context.Background()
	req := server.GenerateRequest{PromptIDs: []int32{5, 17, 2999, 4, 1000}, Params: server.SamplingParams{MaxNewTokens: 12, Logprobs: true}}

	copied, err := Open(dir, Options{BlockSize: 4, KVBlocks: 64, CopyWeights: true})
	require.NoError(t, err)
	defer copied.Close()
	want, err := copied.Generate(ctx, req)
	require.NoError(t, err)
	require.False(t, copied.Model().Mapped())

	e, err := Open(dir, Options{BlockSize: 4, KVBlocks: 64})
	require.NoError(t, err)
	defer e.Close()
	require.True(t, e.Model().Mapped())
	got, err := e.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, want.TokenIDs, got.TokenIDs)
	require.Equal(t, want.Logprobs, got.Logprobs)

	require.NoError(t, e.Sleep(ctx, server.SleepWeights))
	require.False(t, e.Model().Mapped(), "sleep unmaps")
	require.NoError(t, e.WakeUp(ctx))
	require.True(t, e.Model().Mapped())
	got, err = e.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, want.TokenIDs, got.TokenIDs)

	path := filepath.Join(dir, safetensors.SingleFile)
	require.NoError(t, os.Truncate(path, 4096))
	_, err = e.Generate(ctx, req)
	require.ErrorContains(t, err, path)
	require.ErrorContains(t, err, "shrank while the model computed from its mapping")
}
