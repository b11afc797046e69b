package model

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/stretchr/testify/require"
)

// int8Tol bounds max|logit error| / max|logit| of int8 models against
// PyTorch's float64 decoder on the unquantized weights: the error of
// llama.cpp's Q8_0 scheme itself (weights and activations rounded to int8
// per block of 32, about 2^-8 of a block's largest value each), not of
// the arithmetic.
const int8Tol = 0.1

// TestReferenceNumericsInt8 runs int8 models (weights quantized at
// SetTensor) against PyTorch's float64 decoder on the fp32 weights
// (../testdata/reference.py), teacher-forcing the reference's greedy
// tokens, at every instruction-set level (VNNI, AVX2 and generic int8
// kernels; those agree bit for bit, TestMatMulQ8, but the fp32 kernels
// around them need not). Where the greedy token differs
// the reference must have had a near tie. It also decodes freely and
// reports how many of the reference's 32 greedy tokens int8 reproduces.
func TestReferenceNumericsInt8(t *testing.T) {
	for _, ref := range loadReferences(t) {
		for l := kernels.Generic; l <= kernels.Detect(); l++ {
			t.Run(ref.name+"/"+l.String(), func(t *testing.T) {
				cpu, err := kernels.NewCPU(2).WithLevel(l)
				require.NoError(t, err)
				m := int8Model(t, ref.cfg, ref.seed, cpu)
				V := ref.cfg.VocabSize
				kv := m.NewKVCache(16, 4)
				blocks := seqBlocks(16, 0)
				worst, sum, flips, n := 0.0, 0.0, 0, 0
				check := func(got, want []float32, what string, step int) {
					e := relErr(got, want)
					require.LessOrEqualf(t, e, int8Tol, "%s %d", what, step)
					worst, sum, n = math.Max(worst, e), sum+e, n+1
					if g, w := argmax(got), argmax(want); g != w {
						scale := 0.0
						for _, x := range want {
							scale = math.Max(scale, math.Abs(float64(x)))
						}
						require.LessOrEqualf(t, float64(want[w]-want[g]), 2*int8Tol*scale, "%s %d: argmax %d, reference %d by a clear margin", what, step, g, w)
						flips++
					}
				}
				out, err := m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: blocks, AllLogits: true}})
				require.NoError(t, err)
				for i := range ref.prompt {
					check(out[0][i*V:(i+1)*V], ref.promptLogits[i*V:(i+1)*V], "prompt position", i)
				}
				pos := len(ref.prompt)
				for step := 0; step < 31; step++ {
					out, err := m.Forward(kv, []Seq{{Tokens: []int32{ref.tokens[step]}, Start: pos, Blocks: blocks}})
					require.NoError(t, err)
					pos++
					check(out[0], ref.decodeLogits[(step+1)*V:(step+2)*V], "decode step", step+1)
				}
				agree := freeGreedy(t, m, ref.prompt, ref.tokens)
				t.Logf("kernel %s: max relative error %.2g (mean %.2g), %d argmax flips at near ties of %d positions; free greedy: %d of %d tokens as the reference before diverging",
					cpu.Q8Kernel(), worst, sum/float64(n), flips, n, agree, len(ref.tokens))
			})
		}
	}
}

func int8Model(t testing.TB, cfg *Config, seed uint64, cpu *kernels.CPU) *Model {
	m, err := NewWith(cfg, cpu, WeightsInt8)
	require.NoError(t, err)
	shapes := cfg.TensorShapes()
	for name, w := range RandomWeights(cfg, seed) {
		require.NoError(t, m.SetTensor(name, shapes[name], w))
	}
	require.Empty(t, m.Missing())
	return m
}

// freeGreedy decodes greedily after prompt and returns how many tokens
// match want before the first difference.
func freeGreedy(t testing.TB, m *Model, prompt, want []int32) int {
	kv := m.NewKVCache(16, 4)
	blocks := seqBlocks(16, 0)
	out, err := m.Forward(kv, []Seq{{Tokens: prompt, Blocks: blocks}})
	require.NoError(t, err)
	pos := len(prompt)
	for i := range want {
		tok := argmax(out[0])
		if tok != want[i] {
			return i
		}
		if i+1 == len(want) {
			break
		}
		out, err = m.Forward(kv, []Seq{{Tokens: []int32{tok}, Start: pos, Blocks: blocks}})
		require.NoError(t, err)
		pos++
	}
	return len(want)
}

// TestInt8BatchInvariance: with int8 weights too, a sequence's logits are
// bitwise the same alone, batched with another, prefilled in chunks, or
// continued from a shared prefix (activations are quantized per token).
func TestInt8BatchInvariance(t *testing.T) {
	cfg := tinyConfig()
	m := int8Model(t, cfg, 4, nil)
	prompt := []int32{3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8, 9, 7, 9, 3}
	V := cfg.VocabSize
	kv := m.NewKVCache(64, 4)
	solo, err := m.Forward(kv, []Seq{{Tokens: prompt, Blocks: seqBlocks(4, 0), AllLogits: true}})
	require.NoError(t, err)
	soloCopy := append([]float32(nil), solo[0]...)
	other := []int32{5, 6, 7, 8, 9, 10, 11}
	out1, err := m.Forward(kv, []Seq{{Tokens: other, Blocks: seqBlocks(2, 10)}, {Tokens: prompt[:5], Blocks: seqBlocks(4, 20), AllLogits: true}})
	require.NoError(t, err)
	require.Equal(t, soloCopy[:5*V], out1[1])
	out2, err := m.Forward(kv, []Seq{{Tokens: prompt[5:], Start: 5, Blocks: seqBlocks(4, 20), AllLogits: true}, {Tokens: []int32{1}, Start: len(other), Blocks: seqBlocks(2, 10)}})
	require.NoError(t, err)
	require.Equal(t, soloCopy[5*V:], out2[0])
	shared := append(append([]int32{}, seqBlocks(4, 0)[:2]...), 40, 41)
	out3, err := m.Forward(kv, []Seq{{Tokens: prompt[8:], Start: 8, Blocks: shared, AllLogits: true}})
	require.NoError(t, err)
	require.Equal(t, soloCopy[8*V:], out3[0])
}

// int8Agreement is how an int8 model's logits compare with the fp32
// model's on the same weights.
type int8Agreement struct {
	maxRel, meanRel float64 // max|Δ|/max|fp32| per position: worst and mean
	argmax, n       int     // positions with the same argmax, of n
	greedy          int     // free-running greedy tokens equal to fp32's before the first difference
}

// compareInt8 decodes greedy tokens after prompt with the fp32 model,
// then scores the int8 (or any other) model teacher-forced on that sequence and running
// freely from the prompt.
func compareInt8(t testing.TB, f32, i8 *Model, prompt []int32, gen int) int8Agreement {
	V := f32.Config().VocabSize
	total := len(prompt) + gen
	bs := 16
	blocks := seqBlocks((total+bs-1)/bs, 0)
	greedy := func(m *Model) []int32 {
		kv := m.NewKVCache(len(blocks), bs)
		out, err := m.Forward(kv, []Seq{{Tokens: prompt, Blocks: blocks}})
		require.NoError(t, err)
		var toks []int32
		for i := 0; i < gen; i++ {
			toks = append(toks, argmax(out[0]))
			out, err = m.Forward(kv, []Seq{{Tokens: toks[i:], Start: len(prompt) + i, Blocks: blocks}})
			require.NoError(t, err)
		}
		return toks
	}
	ref := greedy(f32)
	seq := append(append([]int32{}, prompt...), ref...)
	logits := func(m *Model) []float32 {
		out, err := m.Forward(m.NewKVCache(len(blocks), bs), []Seq{{Tokens: seq, Blocks: blocks, AllLogits: true}})
		require.NoError(t, err)
		return append([]float32(nil), out[0]...)
	}
	want, got := logits(f32), logits(i8)
	var a int8Agreement
	for p := 0; p < len(seq); p++ {
		w, g := want[p*V:(p+1)*V], got[p*V:(p+1)*V]
		e := relErr(g, w)
		a.maxRel = math.Max(a.maxRel, e)
		a.meanRel += e / float64(len(seq))
		if argmax(g) == argmax(w) {
			a.argmax++
		}
		a.n++
	}
	mine := greedy(i8)
	for a.greedy < gen && mine[a.greedy] == ref[a.greedy] {
		a.greedy++
	}
	return a
}

// TestInt8AgreementWithFP32: on each reference architecture, with the
// same random weights, int8 logits stay within int8Tol of fp32's and the
// argmax agrees at most positions (random tiny models have near ties).
func TestInt8AgreementWithFP32(t *testing.T) {
	for _, ref := range loadReferences(t) {
		cpu := kernels.NewCPU(2)
		f32, err := NewRandom(ref.cfg, ref.seed, cpu)
		require.NoError(t, err)
		i8 := int8Model(t, ref.cfg, ref.seed, cpu)
		a := compareInt8(t, f32, i8, ref.prompt, 32)
		t.Logf("%s: max relative logit error %.3g (mean %.3g), argmax agrees at %d of %d positions, free greedy %d of 32 tokens",
			ref.name, a.maxRel, a.meanRel, a.argmax, a.n, a.greedy)
		require.LessOrEqual(t, a.maxRel, int8Tol)
		require.GreaterOrEqual(t, float64(a.argmax), 0.8*float64(a.n))
	}
}

// TestInt8AgreementCheckpoint measures the same on a checkpoint directory
// named by AGENTRL_INT8_CHECKPOINT (e.g. random weights at a real model's
// shape from `agentrl model init`; BENCHMARKS.md has the numbers).
func TestInt8AgreementCheckpoint(t *testing.T) {
	dir := os.Getenv("AGENTRL_INT8_CHECKPOINT")
	if dir == "" {
		t.Skip("AGENTRL_INT8_CHECKPOINT not set")
	}
	cpu := kernels.NewCPU(0)
	f32, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsF32})
	require.NoError(t, err)
	i8, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsInt8})
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(1, 2))
	prompt := make([]int32, 32)
	for i := range prompt {
		prompt[i] = int32(r.IntN(f32.Config().VocabSize))
	}
	a := compareInt8(t, f32, i8, prompt, 32)
	t.Logf("%s int8: max relative logit error %.3g (mean %.3g), argmax agrees at %d of %d positions, free greedy %d of 32 tokens",
		dir, a.maxRel, a.meanRel, a.argmax, a.n, a.greedy)
	require.LessOrEqual(t, a.maxRel, int8Tol)
	require.NoError(t, i8.Close())
	// bf16 on the same weights, for scale.
	bf, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsBF16})
	require.NoError(t, err)
	b := compareInt8(t, f32, bf, prompt, 32)
	t.Logf("%s bf16: max relative logit error %.3g (mean %.3g), argmax agrees at %d of %d positions, free greedy %d of 32 tokens",
		dir, b.maxRel, b.meanRel, b.argmax, b.n, b.greedy)
}
