package model

import (
	"math"
	"testing"

	"github.com/agentrl/agentrl/cuda/internal/golden"
	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/stretchr/testify/require"
)

// reference is one variant of ../testdata/reference.safetensors, made by
// ../testdata/regen.sh with PyTorch.
type reference struct {
	name         string
	cfg          *Config
	seed         uint64
	prompt       []int32
	promptLogits []float32 // [len(prompt)][vocab]
	decodeLogits []float32 // [32][vocab]
	tokens       []int32   // 32 greedy tokens
}

func loadReferences(t *testing.T) []reference {
	t.Helper()
	f := golden.Open(t, "../testdata/reference.safetensors")
	var refs []reference
	for _, v := range f.Variants() {
		cfg, err := ParseConfig(v.Config)
		require.NoError(t, err)
		refs = append(refs, reference{name: v.Name, cfg: cfg, seed: v.Seed, prompt: f.Int32(v.Name + ".prompt"),
			promptLogits: f.Float32(v.Name + ".prompt_logits"), decodeLogits: f.Float32(v.Name + ".decode_logits"), tokens: f.Int32(v.Name + ".tokens")})
	}
	require.Len(t, refs, 4)
	return refs
}

// relErr is max|got−want| / max|want| over one logits row.
func relErr(got, want []float32) float64 {
	var num, den float64
	for i := range want {
		num = math.Max(num, math.Abs(float64(got[i])-float64(want[i])))
		den = math.Max(den, math.Abs(float64(want[i])))
	}
	return num / den
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

func seqBlocks(n, first int) []int32 {
	b := make([]int32, n)
	for i := range b {
		b[i] = int32(first + n - 1 - i) // reversed: pages need not be contiguous
	}
	return b
}

// TestReferenceNumerics checks prompt logits and 32 greedy decode steps
// against PyTorch at every instruction-set level, to ≤ 1e-4 relative error
// and identical greedy tokens.
func TestReferenceNumerics(t *testing.T) {
	for _, ref := range loadReferences(t) {
		for l := kernels.Generic; l <= kernels.Detect(); l++ {
			t.Run(ref.name+"/"+l.String(), func(t *testing.T) {
				cpu, err := kernels.NewCPU(2).WithLevel(l)
				require.NoError(t, err)
				m, err := NewRandom(ref.cfg, ref.seed, cpu)
				require.NoError(t, err)
				V := ref.cfg.VocabSize
				const bs = 4
				kv := m.NewKVCache(16, bs)
				blocks := seqBlocks(16, 0)
				out, err := m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: blocks, AllLogits: true}})
				require.NoError(t, err)
				worst := 0.0
				for i := range ref.prompt {
					e := relErr(out[0][i*V:(i+1)*V], ref.promptLogits[i*V:(i+1)*V])
					require.LessOrEqualf(t, e, 1e-4, "prompt position %d", i)
					worst = math.Max(worst, e)
				}
				next := argmax(out[0][(len(ref.prompt)-1)*V:])
				pos := len(ref.prompt)
				for step := 0; step < 32; step++ {
					require.Equalf(t, ref.tokens[step], next, "greedy token %d", step)
					out, err := m.Forward(kv, []Seq{{Tokens: []int32{next}, Start: pos, Blocks: blocks}})
					require.NoError(t, err)
					pos++
					if step < 31 {
						e := relErr(out[0], ref.decodeLogits[(step+1)*V:(step+2)*V])
						require.LessOrEqualf(t, e, 1e-4, "decode step %d", step+1)
						worst = math.Max(worst, e)
					}
					next = argmax(out[0])
				}
				t.Logf("max relative error %.2g", worst)
			})
		}
	}
}

// cacheOf allocates a host cache of type typ.
func cacheOf(t *testing.T, m *Model, typ KVType, numBlocks, blockSize int) *KVCache {
	t.Helper()
	if typ == KVBF16 {
		kv, err := m.NewKVCacheBF16(numBlocks, blockSize)
		require.NoError(t, err)
		return kv
	}
	return m.NewKVCache(numBlocks, blockSize)
}

// TestBatchAndChunkInvariance: a sequence's logits are bitwise the same
// alone, batched with others, prefilled in chunks, or continued from a
// cache filled by another sequence with the same prefix, with an fp32 and
// a bf16 cache.
func TestBatchAndChunkInvariance(t *testing.T) {
	ref := loadReferences(t)[2] // qwen3: GQA 4, QK-norm
	m, err := NewRandom(ref.cfg, ref.seed, nil)
	require.NoError(t, err)
	V := ref.cfg.VocabSize
	for _, typ := range []KVType{KVF32, KVBF16} {
		t.Run(string(typ), func(t *testing.T) {
			kv := cacheOf(t, m, typ, 64, 4)
			require.Equal(t, typ, kv.Type())
			solo, err := m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: seqBlocks(4, 0), AllLogits: true}})
			require.NoError(t, err)
			soloCopy := append([]float32(nil), solo[0]...)

			other := []int32{5, 6, 7, 8, 9, 10, 11}
			// Chunked: 5 + 11 tokens, batched with an unrelated sequence each time.
			out1, err := m.Forward(kv, []Seq{{Tokens: other, Blocks: seqBlocks(2, 10)}, {Tokens: ref.prompt[:5], Blocks: seqBlocks(4, 20), AllLogits: true}})
			require.NoError(t, err)
			require.Equal(t, soloCopy[:5*V], out1[1])
			out2, err := m.Forward(kv, []Seq{{Tokens: ref.prompt[5:], Start: 5, Blocks: seqBlocks(4, 20), AllLogits: true}, {Tokens: []int32{1}, Start: len(other), Blocks: seqBlocks(2, 10)}})
			require.NoError(t, err)
			require.Equal(t, soloCopy[5*V:], out2[0])

			// Prefix reuse: a new sequence shares the first two blocks (8
			// tokens) of the solo sequence and computes only the rest.
			shared := append(append([]int32{}, seqBlocks(4, 0)[:2]...), 40, 41)
			out3, err := m.Forward(kv, []Seq{{Tokens: ref.prompt[8:], Start: 8, Blocks: shared, AllLogits: true}})
			require.NoError(t, err)
			require.Equal(t, soloCopy[8*V:], out3[0])

			// Decode: the next token alone (its cache rows prefetched) and
			// the same token as the end of a chunk.
			next := argmax(soloCopy[(len(ref.prompt)-1)*V:])
			dec, err := m.Forward(kv, []Seq{{Tokens: []int32{next}, Start: len(ref.prompt), Blocks: append(seqBlocks(4, 0), 31)}})
			require.NoError(t, err)
			decCopy := append([]float32(nil), dec[0]...)
			chunk, err := m.Forward(kv, []Seq{{Tokens: append(append([]int32{}, ref.prompt[12:]...), next), Start: 12,
				Blocks: append(append([]int32{}, seqBlocks(4, 20)...), 30)}})
			require.NoError(t, err)
			require.Equal(t, decCopy, chunk[0])
		})
	}
}

func TestForwardBadInput(t *testing.T) {
	ref := loadReferences(t)[0]
	m, err := NewRandom(ref.cfg, ref.seed, nil)
	require.NoError(t, err)
	kv := m.NewKVCache(8, 4)
	tests := []struct {
		name string
		seq  Seq
		want string
	}{
		{"empty", Seq{Blocks: []int32{0}}, "no tokens"},
		{"vocab", Seq{Tokens: []int32{1, 256}, Blocks: []int32{0}}, "id 256 outside the vocabulary of 256"},
		{"negative id", Seq{Tokens: []int32{-1}, Blocks: []int32{0}}, "id -1"},
		{"context", Seq{Tokens: []int32{1}, Start: 256, Blocks: make([]int32, 65)}, "outside the context of 256"},
		{"blocks", Seq{Tokens: []int32{1, 2, 3, 4, 5}, Blocks: []int32{0}}, "needs 2"},
		{"block id", Seq{Tokens: []int32{1}, Blocks: []int32{8}}, "block 8 outside the cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := m.Forward(kv, []Seq{tt.seq})
			require.ErrorIs(t, err, ErrInput)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
