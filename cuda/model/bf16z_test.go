package model

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/stretchr/testify/require"
)

// TestBF16ZMatchesBF16: a bf16z model gives a bf16 model's logits bit for
// bit at every position of a batch, for decode-sized steps (the kernels'
// register-decoding path, up to 8 tokens) and prefill-sized ones (decoded
// rows; from 48 tokens the many-token path), loaded from a mapped or a
// copied checkpoint, and holds no mapping once loaded (it compressed its
// own copy).
func TestBF16ZMatchesBF16(t *testing.T) {
	cpu := kernels.NewCPU(2)
	for _, arch := range []string{Qwen3, Qwen2} {
		for _, tie := range []bool{false, true} {
			cfg := mapConfig(tie)
			cfg.ModelType = arch
			dir := t.TempDir()
			require.NoError(t, WriteRandomDir(dir, cfg, 21, WriteOptions{DType: safetensors.BF16}))
			ref, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsBF16, Copy: true})
			require.NoError(t, err)
			for _, copyW := range []bool{false, true} {
				m, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsBF16Z, Copy: copyW})
				require.NoError(t, err)
				require.Equal(t, WeightsBF16Z, m.Weights())
				require.False(t, m.Mapped(), "compressed from the mapping, then unmapped")
				for _, n := range []int{1, 3, 8, 9, 30, 60} {
					want, got := stepLogits(t, ref, n), stepLogits(t, m, n)
					require.Equal(t, len(want), len(got))
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
							t.Fatalf("%s tied %v copy %v, %d tokens: logit %d is %v, bf16 gives %v", arch, tie, copyW, n, i, got[i], want[i])
						}
					}
				}
				require.NoError(t, m.Close())
			}
			require.NoError(t, ref.Close())
		}
	}
}

// stepLogits runs two sequences of n tokens each through one Forward and
// returns every position's logits.
func stepLogits(t *testing.T, m *Model, n int) []float32 {
	t.Helper()
	kv := m.NewKVCache(64, 4)
	toks := func(seed int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = int32((seed*7919 + i*104729) % 3000)
		}
		return out
	}
	out, err := m.Forward(kv, []Seq{
		{Tokens: toks(1), Blocks: seqBlocks(16, 0), AllLogits: true},
		{Tokens: toks(2), Blocks: seqBlocks(16, 16), AllLogits: true},
	})
	require.NoError(t, err)
	var all []float32
	for _, o := range out {
		all = append(all, o...)
	}
	return all
}
