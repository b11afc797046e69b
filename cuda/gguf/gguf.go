// Package gguf exports a model (Llama, Qwen2, Qwen3) to llama.cpp's GGUF
// format, F32, BF16 or Q8_0, so the engine can be measured side by side with
// llama.cpp on the very same weights.
//
// Only what llama.cpp needs to run the model is written, as its converter
// (convert_hf_to_gguf.py) writes it: the architecture's hyper-parameters,
// a tensor per weight (Llama's q and k rows permuted from Hugging Face's
// half-split RoPE layout to llama.cpp's interleaved one; Qwen2 and Qwen3
// use the half-split "neox" rotation as they are), and a SentencePiece-style
// vocabulary. In a BF16 file the matrices are BF16 and the vectors (norms,
// biases) stay F32, as the converter leaves them; in a Q8_0 file the
// matrices whose rows are whole 32-value blocks are Q8_0, quantized by
// kernels.Q8 (ggml's quantize_row_q8_0_ref rounding: the values the
// engine's int8 weights hold), the others F32. The vocabulary is
// synthetic (<unk>, <s>, </s>, the 256 byte tokens, then "▁t<id>"), enough
// to evaluate token ids.
//
//	err := gguf.WriteFile("model.gguf", dir, gguf.BF16)
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/safetensors"
)

const (
	alignment = 32
	typeU32   = 4
	typeI32   = 5
	typeF32   = 6
	typeStr   = 8
	typeArr   = 9
	ggmlF32   = 0
	ggmlBF16  = 30
	ggmlQ8_0  = 8
)

// DType is the element type a file stores its matrices in.
type DType int

// Matrix element types.
const (
	F32  DType = iota
	BF16       // rounded to nearest even from float32 (exact for bf16 checkpoints)
	Q8_0       // llama.cpp's Q8_0: int8 with an fp16 scale per 32 values
)

// fileType is general.file_type: llama.cpp's LLAMA_FTYPE_ALL_F32,
// LLAMA_FTYPE_MOSTLY_BF16 or LLAMA_FTYPE_MOSTLY_Q8_0.
func (d DType) fileType() uint32 {
	switch d {
	case BF16:
		return 32
	case Q8_0:
		return 7
	}
	return 0
}

// tensorBytes is the size of a tensor of type typ with dims (dims[0] the
// row length).
func tensorBytes(typ uint32, dims []uint64) uint64 {
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	switch typ {
	case ggmlBF16:
		return 2 * n
	case ggmlQ8_0:
		return n / kernels.Q8BlockSize * (2 + kernels.Q8BlockSize)
	}
	return 4 * n
}

type kv struct {
	key string
	typ uint32
	val any
}

type tensorInfo struct {
	name  string // GGUF name
	src   string // Hugging Face name
	dims  []uint64
	off   uint64
	perm  int // heads to permute rows for (0: none)
	typ   uint32
	bytes uint64
}

// WriteFile converts the model directory dir to a GGUF file whose
// matrices are dt.
func WriteFile(path, dir string, dt DType) error {
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return err
	}
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return err
	}
	defer set.Close()
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if err := Write(f, cfg, dt, func(name string) ([]float32, error) {
		v, _, err := set.Float32(name)
		return v, err
	}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Write writes cfg's model in GGUF with matrices of type dt; get returns
// a weight by its Hugging Face name.
func Write(w io.Writer, cfg *model.Config, dt DType, get func(name string) ([]float32, error)) error {
	arch := cfg.ModelType
	switch {
	case arch != model.Llama && arch != model.Qwen2 && arch != model.Qwen3:
		return fmt.Errorf("gguf: model_type %q cannot be exported (llama, qwen2, qwen3)", arch)
	case cfg.RopeScaling != nil:
		return errors.New("gguf: rope scaling is not exported")
	case arch == model.Llama && cfg.AttentionBias:
		return errors.New("gguf: Llama attention bias is not exported")
	case cfg.OBias():
		return errors.New("gguf: an o_proj bias is not exported")
	case dt != F32 && dt != BF16 && dt != Q8_0:
		return fmt.Errorf("gguf: unknown dtype %d", dt)
	}
	H, I, V := uint64(cfg.HiddenSize), uint64(cfg.IntermediateSize), uint64(cfg.VocabSize)
	qd := uint64(cfg.NumAttentionHeads * cfg.HeadDim)
	kvd := uint64(cfg.NumKeyValueHeads * cfg.HeadDim)
	// llama.cpp rotates Llama's q/k pairs interleaved, Qwen's half-split.
	qPerm, kPerm := 0, 0
	if arch == model.Llama {
		qPerm, kPerm = cfg.NumAttentionHeads, cfg.NumKeyValueHeads
	}
	var ts []tensorInfo
	add := func(name, src string, perm int, dims ...uint64) {
		typ := uint32(ggmlF32)
		switch {
		case dt == BF16 && len(dims) == 2:
			typ = ggmlBF16
		case dt == Q8_0 && len(dims) == 2 && dims[0]%kernels.Q8BlockSize == 0:
			typ = ggmlQ8_0
		}
		ts = append(ts, tensorInfo{name: name, src: src, dims: dims, perm: perm, typ: typ})
	}
	add("token_embd.weight", "model.embed_tokens.weight", 0, H, V)
	add("output_norm.weight", "model.norm.weight", 0, H)
	if !cfg.TieWordEmbeddings {
		add("output.weight", "lm_head.weight", 0, H, V)
	}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		b, p := "blk."+strconv.Itoa(i)+".", "model.layers."+strconv.Itoa(i)+"."
		add(b+"attn_norm.weight", p+"input_layernorm.weight", 0, H)
		add(b+"attn_q.weight", p+"self_attn.q_proj.weight", qPerm, H, qd)
		add(b+"attn_k.weight", p+"self_attn.k_proj.weight", kPerm, H, kvd)
		add(b+"attn_v.weight", p+"self_attn.v_proj.weight", 0, H, kvd)
		if cfg.QKVBias() {
			add(b+"attn_q.bias", p+"self_attn.q_proj.bias", 0, qd)
			add(b+"attn_k.bias", p+"self_attn.k_proj.bias", 0, kvd)
			add(b+"attn_v.bias", p+"self_attn.v_proj.bias", 0, kvd)
		}
		if cfg.QKNorm() {
			add(b+"attn_q_norm.weight", p+"self_attn.q_norm.weight", 0, uint64(cfg.HeadDim))
			add(b+"attn_k_norm.weight", p+"self_attn.k_norm.weight", 0, uint64(cfg.HeadDim))
		}
		add(b+"attn_output.weight", p+"self_attn.o_proj.weight", 0, qd, H)
		add(b+"ffn_norm.weight", p+"post_attention_layernorm.weight", 0, H)
		add(b+"ffn_gate.weight", p+"mlp.gate_proj.weight", 0, H, I)
		add(b+"ffn_up.weight", p+"mlp.up_proj.weight", 0, H, I)
		add(b+"ffn_down.weight", p+"mlp.down_proj.weight", 0, I, H)
	}
	var off uint64
	for i := range ts {
		n := tensorBytes(ts[i].typ, ts[i].dims)
		ts[i].off, ts[i].bytes = off, n
		off += (n + alignment - 1) / alignment * alignment
	}

	tokens := make([]string, V)
	scores := make([]float32, V)
	types := make([]int32, V)
	for id := range tokens {
		switch {
		case id == 0:
			tokens[id], types[id] = "<unk>", 2
		case id == 1:
			tokens[id], types[id] = "<s>", 3
		case id == 2:
			tokens[id], types[id] = "</s>", 3
		case id < 259:
			tokens[id], types[id] = fmt.Sprintf("<0x%02X>", id-3), 6
		default:
			tokens[id], types[id] = "▁t"+strconv.Itoa(id), 1
		}
		scores[id] = -float32(id)
	}
	meta := []kv{
		{"general.architecture", typeStr, arch},
		{"general.name", typeStr, "agentrl-export"},
		{"general.alignment", typeU32, uint32(alignment)},
		{"general.file_type", typeU32, dt.fileType()},
		{arch + ".vocab_size", typeU32, uint32(V)},
		{arch + ".context_length", typeU32, uint32(cfg.MaxPositionEmbeddings)},
		{arch + ".embedding_length", typeU32, uint32(H)},
		{arch + ".block_count", typeU32, uint32(cfg.NumHiddenLayers)},
		{arch + ".feed_forward_length", typeU32, uint32(I)},
		{arch + ".attention.head_count", typeU32, uint32(cfg.NumAttentionHeads)},
		{arch + ".attention.head_count_kv", typeU32, uint32(cfg.NumKeyValueHeads)},
		{arch + ".attention.key_length", typeU32, uint32(cfg.HeadDim)},
		{arch + ".attention.value_length", typeU32, uint32(cfg.HeadDim)},
		{arch + ".rope.dimension_count", typeU32, uint32(cfg.HeadDim)},
		{arch + ".rope.freq_base", typeF32, float32(cfg.RopeTheta)},
		{arch + ".attention.layer_norm_rms_epsilon", typeF32, float32(cfg.RMSNormEps)},
		{"tokenizer.ggml.model", typeStr, "llama"},
		{"tokenizer.ggml.tokens", typeArr, tokens},
		{"tokenizer.ggml.scores", typeArr, scores},
		{"tokenizer.ggml.token_type", typeArr, types},
		{"tokenizer.ggml.unknown_token_id", typeU32, uint32(0)},
		{"tokenizer.ggml.bos_token_id", typeU32, uint32(1)},
		{"tokenizer.ggml.eos_token_id", typeU32, uint32(2)},
	}

	bw := &countingWriter{w: bufio.NewWriterSize(w, 1<<20)}
	bw.raw([]byte("GGUF"))
	bw.u32(3)
	bw.u64(uint64(len(ts)))
	bw.u64(uint64(len(meta)))
	for _, m := range meta {
		bw.str(m.key)
		bw.u32(m.typ)
		switch v := m.val.(type) {
		case string:
			bw.str(v)
		case uint32:
			bw.u32(v)
		case float32:
			bw.u32(math.Float32bits(v))
		case []string:
			bw.u32(typeStr)
			bw.u64(uint64(len(v)))
			for _, s := range v {
				bw.str(s)
			}
		case []float32:
			bw.u32(typeF32)
			bw.u64(uint64(len(v)))
			for _, f := range v {
				bw.u32(math.Float32bits(f))
			}
		case []int32:
			bw.u32(typeI32)
			bw.u64(uint64(len(v)))
			for _, x := range v {
				bw.u32(uint32(x))
			}
		}
	}
	for _, t := range ts {
		bw.str(t.name)
		bw.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			bw.u64(d)
		}
		bw.u32(t.typ)
		bw.u64(t.off)
	}
	bw.pad()
	for _, t := range ts {
		v, err := get(t.src)
		if err != nil {
			return fmt.Errorf("gguf: %w", err)
		}
		want := uint64(1)
		for _, d := range t.dims {
			want *= d
		}
		if uint64(len(v)) != want {
			return fmt.Errorf("gguf: %s has %d values, want %d", t.src, len(v), want)
		}
		if t.perm > 0 {
			v = permuteRoPE(v, t.perm, cfg.HeadDim, cfg.HiddenSize)
		}
		var buf []byte
		switch t.typ {
		case ggmlQ8_0:
			// One row at a time through a one-row matrix: the export
			// holds the float tensor and its quantized bytes, no more.
			k := int(t.dims[0])
			q := kernels.NewQ8(1, k)
			buf = make([]byte, 0, t.bytes)
			for r := 0; r < len(v)/k; r++ {
				q.QuantizeRows(0, v[r*k:(r+1)*k], 1)
				buf = q.RowQ8_0(buf, 0)
			}
		case ggmlBF16:
			buf = make([]byte, 2*len(v))
			for i, f := range v {
				binary.LittleEndian.PutUint16(buf[2*i:], bf16(f))
			}
		default:
			buf = make([]byte, 4*len(v))
			for i, f := range v {
				binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(f))
			}
		}
		bw.raw(buf)
		bw.pad()
	}
	if bw.err != nil {
		return fmt.Errorf("gguf: %w", bw.err)
	}
	return bw.w.(*bufio.Writer).Flush()
}

// bf16 rounds to nearest even, as PyTorch's .to(torch.bfloat16) and
// llama.cpp's ggml_fp32_to_bf16 do; NaN stays a quiet NaN.
func bf16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

// permuteRoPE reorders the rows of a q or k projection ([heads*hd][in])
// from the half-split rotary layout (row j and j+hd/2 form a pair) to the
// interleaved one (rows 2j and 2j+1), as llama.cpp's converter does.
func permuteRoPE(w []float32, heads, hd, in int) []float32 {
	out := make([]float32, len(w))
	half := hd / 2
	for h := 0; h < heads; h++ {
		for s := 0; s < 2; s++ {
			for j := 0; j < half; j++ {
				src := (h*hd + s*half + j) * in
				dst := (h*hd + 2*j + s) * in
				copy(out[dst:dst+in], w[src:src+in])
			}
		}
	}
	return out
}

type countingWriter struct {
	w   io.Writer
	n   uint64
	err error
}

func (c *countingWriter) raw(b []byte) {
	if c.err != nil {
		return
	}
	var n int
	n, c.err = c.w.Write(b)
	c.n += uint64(n)
}

func (c *countingWriter) u32(v uint32) {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	c.raw(b[:])
}

func (c *countingWriter) u64(v uint64) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	c.raw(b[:])
}

func (c *countingWriter) str(s string) {
	c.u64(uint64(len(s)))
	c.raw([]byte(s))
}

func (c *countingWriter) pad() {
	if r := c.n % alignment; r != 0 {
		c.raw(make([]byte, alignment-r))
	}
}
