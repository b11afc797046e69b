//go:build cuda

package model

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/cuda/gpu"
	"github.com/stretchr/testify/require"
)

// The GPU path is checked against the PyTorch references and against the
// CPU path, on the same tiny random models as reference_test.go. These
// tests run only where a CUDA device is present; elsewhere the cuda build
// must report the missing device clearly.

func needGPU(t *testing.T) {
	t.Helper()
	if !gpu.Available() {
		t.Skip("no CUDA device: the GPU forward is compile-checked only")
	}
}

func TestNoDevice(t *testing.T) {
	if gpu.Available() {
		t.Skip("a CUDA device is present")
	}
	_, err := NewOn(tinyConfig(), CUDA, nil)
	require.ErrorIs(t, err, gpu.ErrNoDevice)
}

// newRandomOnGPU is NewRandom on the GPU.
func newRandomOnGPU(t *testing.T, cfg *Config, seed uint64) *Model {
	t.Helper()
	m, err := NewOn(cfg, CUDA, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	require.Equal(t, CUDA, m.Device())
	shapes := cfg.TensorShapes()
	for name, v := range RandomWeights(cfg, seed) {
		require.NoError(t, m.SetTensor(name, shapes[name], v))
	}
	return m
}

func allocKV(t *testing.T, m *Model, blocks, bs int) *KVCache {
	t.Helper()
	kv, err := m.AllocKVCache(blocks, bs)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, kv.Close()) })
	return kv
}

// TestGPUReferenceNumerics: prompt logits and 32 greedy decode steps on the
// GPU match PyTorch and the CPU path to ≤ 1e-4 relative error, with the
// reference's greedy tokens, for every variant (Llama GQA 1, Qwen2 with
// bias and tied embeddings GQA 2, Qwen3 with QK-norm GQA 4, Llama with
// attention bias, rope scaling and tied embeddings GQA 4).
func TestGPUReferenceNumerics(t *testing.T) {
	needGPU(t)
	for _, ref := range loadReferences(t) {
		t.Run(ref.name, func(t *testing.T) {
			g := newRandomOnGPU(t, ref.cfg, ref.seed)
			c, err := NewRandom(ref.cfg, ref.seed, nil)
			require.NoError(t, err)
			V := ref.cfg.VocabSize
			const bs = 4
			gkv, ckv := allocKV(t, g, 16, bs), c.NewKVCache(16, bs)
			blocks := seqBlocks(16, 0)
			worst := 0.0
			compare := func(what string, got, cpu, want []float32) {
				t.Helper()
				for _, e := range []float64{relErr(got, want), relErr(got, cpu)} {
					require.LessOrEqualf(t, e, 1e-4, "%s", what)
					worst = math.Max(worst, e)
				}
			}
			seq := []Seq{{Tokens: ref.prompt, Blocks: blocks, AllLogits: true}}
			out, err := g.Forward(gkv, seq)
			require.NoError(t, err)
			cout, err := c.Forward(ckv, seq)
			require.NoError(t, err)
			for i := range ref.prompt {
				compare("prompt position", out[0][i*V:(i+1)*V], cout[0][i*V:(i+1)*V], ref.promptLogits[i*V:(i+1)*V])
			}
			next := argmax(out[0][(len(ref.prompt)-1)*V:])
			pos := len(ref.prompt)
			for step := 0; step < 32; step++ {
				require.Equalf(t, ref.tokens[step], next, "greedy token %d", step)
				seq := []Seq{{Tokens: []int32{next}, Start: pos, Blocks: blocks}}
				out, err := g.Forward(gkv, seq)
				require.NoError(t, err)
				cout, err := c.Forward(ckv, seq)
				require.NoError(t, err)
				pos++
				if step < 31 {
					compare("decode step", out[0], cout[0], ref.decodeLogits[(step+1)*V:(step+2)*V])
				}
				next = argmax(out[0])
			}
			t.Logf("max relative error %.2g", worst)
		})
	}
}

// TestGPUBatchAndChunkInvariance: on the GPU a sequence's logits alone,
// batched, prefilled in chunks or continued from a shared prefix agree to
// float tolerance (cuBLAS may pick a different GEMM for another batch
// size, so not bitwise).
func TestGPUBatchAndChunkInvariance(t *testing.T) {
	needGPU(t)
	ref := loadReferences(t)[2] // qwen3: GQA 4, QK-norm
	m := newRandomOnGPU(t, ref.cfg, ref.seed)
	V := ref.cfg.VocabSize
	kv := allocKV(t, m, 64, 4)
	solo, err := m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: seqBlocks(4, 0), AllLogits: true}})
	require.NoError(t, err)
	want := append([]float32(nil), solo[0]...)
	same := func(want, got []float32) {
		t.Helper()
		require.Len(t, got, len(want))
		for i := 0; i < len(want); i += V {
			require.LessOrEqual(t, relErr(got[i:i+V], want[i:i+V]), 1e-5, "row %d", i/V)
		}
	}
	other := []int32{5, 6, 7, 8, 9, 10, 11}
	out1, err := m.Forward(kv, []Seq{{Tokens: other, Blocks: seqBlocks(2, 10)}, {Tokens: ref.prompt[:5], Blocks: seqBlocks(4, 20), AllLogits: true}})
	require.NoError(t, err)
	same(want[:5*V], out1[1])
	out2, err := m.Forward(kv, []Seq{{Tokens: ref.prompt[5:], Start: 5, Blocks: seqBlocks(4, 20), AllLogits: true}, {Tokens: []int32{1}, Start: len(other), Blocks: seqBlocks(2, 10)}})
	require.NoError(t, err)
	same(want[5*V:], out2[0])
	shared := append(append([]int32{}, seqBlocks(4, 0)[:2]...), 40, 41)
	out3, err := m.Forward(kv, []Seq{{Tokens: ref.prompt[8:], Start: 8, Blocks: shared, AllLogits: true}})
	require.NoError(t, err)
	same(want[8*V:], out3[0])

	// Attention split into launches of 1 and 3 tokens (a small scratch
	// cap) computes each (token, head) alone either way: bitwise the same.
	for _, per := range []int{1, 3} {
		m.dev.scoresMax = per * ref.cfg.NumAttentionHeads * len(ref.prompt)
		split, err := m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: seqBlocks(4, 0), AllLogits: true}})
		require.NoError(t, err)
		require.Equal(t, want, split[0], "%d tokens per attention launch", per)
	}
}

// TestGPULifecycle: weights dropped and set again, caches closed, caches of
// the wrong device, and the same bad-input errors as the CPU path.
func TestGPULifecycle(t *testing.T) {
	needGPU(t)
	ref := loadReferences(t)[1] // qwen2: bias, tied
	m := newRandomOnGPU(t, ref.cfg, ref.seed)
	kv := m.NewKVCache(8, 4) // allocated by the first Forward
	seq := []Seq{{Tokens: ref.prompt[:6], Blocks: []int32{3, 1}}}
	a, err := m.Forward(kv, seq)
	require.NoError(t, err)
	first := append([]float32(nil), a[0]...)

	m.DropWeights()
	_, err = m.Forward(kv, seq)
	require.ErrorIs(t, err, ErrWeights)
	shapes := ref.cfg.TensorShapes()
	for name, v := range RandomWeights(ref.cfg, ref.seed) {
		require.NoError(t, m.SetTensor(name, shapes[name], v))
	}
	b, err := m.Forward(kv, seq)
	require.NoError(t, err)
	require.LessOrEqual(t, relErr(b[0], first), 1e-6)

	cpu, err := NewRandom(ref.cfg, ref.seed, nil)
	require.NoError(t, err)
	_, err = m.Forward(cpu.NewKVCache(8, 4), seq)
	require.ErrorIs(t, err, ErrInput, "a host cache on a GPU model")
	_, err = cpu.Forward(kv, seq)
	require.ErrorIs(t, err, ErrInput, "a device cache on a CPU model")

	for _, tt := range []struct {
		seq  Seq
		want string
	}{
		{Seq{Blocks: []int32{0}}, "no tokens"},
		{Seq{Tokens: []int32{1, int32(ref.cfg.VocabSize)}, Blocks: []int32{0}}, "outside the vocabulary"},
		{Seq{Tokens: []int32{1, 2, 3, 4, 5}, Blocks: []int32{0}}, "needs 2"},
		{Seq{Tokens: []int32{1}, Blocks: []int32{8}}, "block 8 outside the cache"},
	} {
		_, err := m.Forward(kv, []Seq{tt.seq})
		require.ErrorIs(t, err, ErrInput)
		require.ErrorContains(t, err, tt.want)
	}

	require.NoError(t, kv.Close())
	_, err = m.Forward(kv, seq)
	require.ErrorContains(t, err, "KV cache closed")
}

// TestGPULoadOn loads a checkpoint directory straight to the device.
func TestGPULoadOn(t *testing.T) {
	needGPU(t)
	cfg := tinyConfig()
	dir := t.TempDir()
	require.NoError(t, WriteDir(dir, cfg, RandomWeights(cfg, 9)))
	g, err := LoadOn(dir, CUDA, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, g.Close()) }()
	c, err := Load(dir, nil)
	require.NoError(t, err)
	kv := allocKV(t, g, 4, 4)
	seq := []Seq{{Tokens: []int32{1, 2, 3}, Blocks: []int32{0}, AllLogits: true}}
	got, err := g.Forward(kv, seq)
	require.NoError(t, err)
	want, err := c.Forward(c.NewKVCache(4, 4), seq)
	require.NoError(t, err)
	V := cfg.VocabSize
	for i := 0; i < 3; i++ {
		require.LessOrEqual(t, relErr(got[0][i*V:(i+1)*V], want[0][i*V:(i+1)*V]), 1e-4)
	}
}
