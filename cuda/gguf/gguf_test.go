package gguf

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
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
	require.NoError(t, Write(&buf, cfg, F32, func(name string) ([]float32, error) { return w[name], nil }))

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
	cfg := &model.Config{ModelType: "mistral", VocabSize: 10, HiddenSize: 8, IntermediateSize: 8, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 2, HeadDim: 4, RMSNormEps: 1e-6, RopeTheta: 1e4, MaxPositionEmbeddings: 8}
	err := Write(&bytes.Buffer{}, cfg, F32, nil)
	require.ErrorContains(t, err, `model_type "mistral" cannot be exported`)
	cfg.ModelType = model.Llama
	cfg.AttentionBias = true
	require.ErrorContains(t, Write(&bytes.Buffer{}, cfg, F32, nil), "attention bias")
	cfg.AttentionBias = false
	require.ErrorContains(t, Write(&bytes.Buffer{}, cfg, DType(7), nil), "unknown dtype")
}

// parse reads a whole GGUF file: metadata, and each tensor's type, dims
// and raw bytes.
type ggufTensor struct {
	typ  uint32
	dims []uint64
	data []byte
}

func parse(t *testing.T, b []byte) (map[string]any, map[string]ggufTensor) {
	r := &reader{b: b, off: 4}
	require.Equal(t, "GGUF", string(b[:4]))
	require.Equal(t, uint32(3), r.u32())
	nt, nkv := r.u64(), r.u64()
	meta := map[string]any{}
	for i := uint64(0); i < nkv; i++ {
		k := r.str()
		meta[k] = r.value(r.u32())
	}
	type hdr struct {
		typ  uint32
		dims []uint64
		off  uint64
	}
	var names []string
	hdrs := map[string]hdr{}
	for i := uint64(0); i < nt; i++ {
		name := r.str()
		dims := make([]uint64, r.u32())
		for j := range dims {
			dims[j] = r.u64()
		}
		typ := r.u32()
		hdrs[name] = hdr{typ, dims, r.u64()}
		names = append(names, name)
	}
	data := (r.off + alignment - 1) / alignment * alignment
	out := map[string]ggufTensor{}
	for _, name := range names {
		h := hdrs[name]
		n := tensorBytes(h.typ, h.dims)
		require.Zero(t, h.off%alignment)
		out[name] = ggufTensor{h.typ, h.dims, b[data+int(h.off) : data+int(h.off)+int(n)]}
	}
	return meta, out
}

// TestWriteQwenBF16: Qwen2 (q/k/v bias) and Qwen3 (QK-norm, head_dim
// apart from hidden/heads, tied head) in BF16 as llama.cpp's converter
// lays them out: matrices BF16 and unpermuted (llama.cpp rotates Qwen
// half-split), vectors F32, no output.weight when tied.
func TestWriteQwenBF16(t *testing.T) {
	for _, arch := range []string{model.Qwen2, model.Qwen3} {
		t.Run(arch, func(t *testing.T) {
			cfg := &model.Config{ModelType: arch, VocabSize: 300, HiddenSize: 32, IntermediateSize: 48, NumHiddenLayers: 2,
				NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6,
				MaxPositionEmbeddings: 64, TieWordEmbeddings: true}
			w := model.RandomWeights(cfg, 5)
			var buf bytes.Buffer
			require.NoError(t, Write(&buf, cfg, BF16, func(name string) ([]float32, error) { return w[name], nil }))
			meta, ts := parse(t, buf.Bytes())
			require.Equal(t, arch, meta["general.architecture"])
			require.Equal(t, uint32(32), meta["general.file_type"])
			require.Equal(t, uint32(16), meta[arch+".attention.key_length"])
			require.Equal(t, float32(1e6), meta[arch+".rope.freq_base"])
			require.NotContains(t, ts, "output.weight")
			_, hasNorm := ts["blk.1.attn_q_norm.weight"]
			_, hasBias := ts["blk.1.attn_q.bias"]
			require.Equal(t, arch == model.Qwen3, hasNorm)
			require.Equal(t, arch == model.Qwen2, hasBias)
			q := ts["blk.0.attn_q.weight"]
			require.Equal(t, uint32(ggmlBF16), q.typ)
			require.Equal(t, []uint64{32, 64}, q.dims)
			src := w["model.layers.0.self_attn.q_proj.weight"]
			for i, f := range src {
				got := math.Float32frombits(uint32(binary.LittleEndian.Uint16(q.data[2*i:])) << 16)
				require.InDelta(t, f, got, math.Abs(float64(f))/256, "element %d", i)
			}
			n := ts["output_norm.weight"]
			require.Equal(t, uint32(ggmlF32), n.typ)
			require.Equal(t, w["model.norm.weight"][3], math.Float32frombits(binary.LittleEndian.Uint32(n.data[12:])))
		})
	}
}

func TestBF16Rounding(t *testing.T) {
	for _, c := range []struct {
		in   uint32
		want uint16
	}{{0x3f808000, 0x3f80}, {0x3f818000, 0x3f82}, {0x3f808001, 0x3f81}, {0x7f800001, 0x7fc0}, {0xff800000, 0xff80}} {
		require.Equalf(t, c.want, bf16(math.Float32frombits(c.in)), "%08x", c.in)
	}
}

// TestWriteQ8_0: matrices with whole 32-value rows are Q8_0 records
// (fp16 scale, 32 int8) holding kernels.Q8's values, each within half a
// step of the weight plus the scale's fp16 rounding (q is computed with
// the float32 scale, as in ggml: 127·2^-11 of a step); the others (rows of 48) and vectors stay F32.
func TestWriteQ8_0(t *testing.T) {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 300, HiddenSize: 64, IntermediateSize: 48, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6, RopeTheta: 1e6,
		MaxPositionEmbeddings: 64, TieWordEmbeddings: true}
	w := model.RandomWeights(cfg, 6)
	var buf bytes.Buffer
	require.NoError(t, Write(&buf, cfg, Q8_0, func(name string) ([]float32, error) { return w[name], nil }))
	meta, ts := parse(t, buf.Bytes())
	require.Equal(t, uint32(7), meta["general.file_type"])
	for gg, hf := range map[string]string{"token_embd.weight": "model.embed_tokens.weight", "blk.1.attn_q.weight": "model.layers.1.self_attn.q_proj.weight",
		"blk.0.ffn_up.weight": "model.layers.0.mlp.up_proj.weight"} {
		q := ts[gg]
		require.Equal(t, uint32(ggmlQ8_0), q.typ, gg)
		src := w[hf]
		k := int(q.dims[0])
		require.Len(t, q.data, len(src)/32*34)
		for r := 0; r < len(src)/k; r++ {
			for b := 0; b < k/32; b++ {
				rec := q.data[(r*k/32+b)*34:]
				d := kernels.F16ToF32(binary.LittleEndian.Uint16(rec))
				for i := 0; i < 32; i++ {
					f := src[r*k+b*32+i]
					require.InDelta(t, f, float32(int8(rec[2+i]))*d, float64(d)*(0.5+127.0/2048)+1e-9, "%s row %d col %d", gg, r, b*32+i)
				}
			}
		}
	}
	require.Equal(t, uint32(ggmlF32), ts["blk.0.ffn_down.weight"].typ) // rows of 48
	require.Equal(t, uint32(ggmlF32), ts["output_norm.weight"].typ)
}
