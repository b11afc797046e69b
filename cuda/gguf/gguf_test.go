package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/stretchr/testify/require"
)

// reader is a minimal GGUF v3 reader for checking the writer's output.
type reader struct {
	b   []byte
	off int
}

func (r *reader) u32() uint32 { v := binary.LittleEndian.Uint32(r.b[r.off:]); r.off += 4; return v }
func (r *reader) u64() uint64 { v := binary.LittleEndian.Uint64(r.b[r.off:]); r.off += 8; return v }
func (r *reader) str() string {
	n := int(r.u64())
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

func (r *reader) value(typ uint32) any {
	switch typ {
	case typeU32, typeI32:
		return r.u32()
	case typeF32:
		return math.Float32frombits(r.u32())
	case typeStr:
		return r.str()
	case typeArr:
		et, n := r.u32(), r.u64()
		out := make([]any, n)
		for i := range out {
			out[i] = r.value(et)
		}
		return out
	}
	panic("unexpected type")
}

func TestWrite(t *testing.T) {
	cfg := &model.Config{ModelType: model.Llama, VocabSize: 300, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RMSNormEps: 1e-5, RopeTheta: 10000, MaxPositionEmbeddings: 64}
	w := model.RandomWeights(cfg, 3)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, cfg, func(name string) ([]float32, error) { return w[name], nil }))

	r := &reader{b: buf.Bytes()}
	require.Equal(t, "GGUF", string(r.b[:4]))
	r.off = 4
	require.Equal(t, uint32(3), r.u32())
	nt, nkv := r.u64(), r.u64()
	require.Equal(t, uint64(3+9*2), nt)
	meta := map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := r.str()
		meta[k] = r.value(r.u32())
	}
	require.Equal(t, "llama", meta["general.architecture"])
	require.Equal(t, uint32(2), meta["llama.attention.head_count_kv"])
	require.Equal(t, float32(10000), meta["llama.rope.freq_base"])
	require.Len(t, meta["tokenizer.ggml.tokens"], 300)
	type info struct {
		dims []uint64
		off  uint64
	}
	infos := map[string]info{}
	for i := uint64(0); i < nt; i++ {
		name := r.str()
		nd := r.u32()
		dims := make([]uint64, nd)
		for j := range dims {
			dims[j] = r.u64()
		}
		require.Equal(t, uint32(ggmlF32), r.u32())
		infos[name] = info{dims, r.u64()}
	}
	data := (r.off + alignment - 1) / alignment * alignment
	tensor := func(name string) []float32 {
		in := infos[name]
		n := uint64(1)
		for _, d := range in.dims {
			n *= d
		}
		require.Zero(t, in.off%alignment)
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(r.b[data+int(in.off)+4*i:]))
		}
		return out
	}
	require.Equal(t, []uint64{32, 300}, infos["token_embd.weight"].dims)
	require.Equal(t, w["model.embed_tokens.weight"], tensor("token_embd.weight"))
	require.Equal(t, w["model.layers.1.mlp.down_proj.weight"], tensor("blk.1.ffn_down.weight"))
	require.Equal(t, []uint64{32, 16}, infos["blk.0.attn_k.weight"].dims)

	// The permuted q projection under llama.cpp's interleaved RoPE equals
	// the original under Hugging Face's half-split RoPE.
	q := w["model.layers.0.self_attn.q_proj.weight"]
	pq := tensor("blk.0.attn_q.weight")
	x := make([]float64, 32)
	rr := rand.New(rand.NewPCG(1, 1))
	for i := range x {
		x[i] = rr.NormFloat64()
	}
	proj := func(m []float32) []float64 {
		out := make([]float64, 32)
		for o := range out {
			for i, v := range x {
				out[o] += float64(m[o*32+i]) * v
			}
		}
		return out
	}
	hf, gg := proj(q), proj(pq)
	const hd, pos = 8, 7.0
	for h := 0; h < 4; h++ {
		for j := 0; j < hd/2; j++ {
			ang := pos / math.Pow(10000, float64(2*j)/hd)
			c, s := math.Cos(ang), math.Sin(ang)
			a, b := hf[h*hd+j], hf[h*hd+j+hd/2]
			u, v := gg[h*hd+2*j], gg[h*hd+2*j+1]
			require.InDelta(t, a*c-b*s, u*c-v*s, 1e-9)
			require.InDelta(t, b*c+a*s, v*c+u*s, 1e-9)
		}
	}
}

func TestWriteRejects(t *testing.T) {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 10, HiddenSize: 8, IntermediateSize: 8, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 2, HeadDim: 4, RMSNormEps: 1e-6, RopeTheta: 1e4, MaxPositionEmbeddings: 8}
	err := Write(&bytes.Buffer{}, cfg, nil)
	require.ErrorContains(t, err, "only plain Llama")
}
