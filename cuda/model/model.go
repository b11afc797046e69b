package model

import (
	"errors"
	"math"
	"sync"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// ErrInput is wrapped by Forward errors about bad sequences (token ids out
// of vocabulary, positions past the cache or the context).
var ErrInput = errors.New("model: bad input")

// Model is a Llama-family decoder (Llama, Qwen2, Qwen3) with its weights in
// memory, run by CPU kernels, or on the GPU when made by NewOn/LoadOn.
type Model struct {
	cfg     *Config
	cpu     *kernels.CPU
	shapes  map[string][]int64
	loaded  map[string]bool
	invFreq []float32

	embed  []float32 // [vocab][hidden]
	layers []layer
	norm   []float32
	lmHead *kernels.Packed

	mu  sync.Mutex // one Forward at a time: scratch buffers are shared
	buf scratch

	dev *deviceModel // non-nil: weights and forward on the GPU (device.go)
}

// New returns a model with zero weights for cfg; set them with SetTensor or
// LoadWeights.
func New(cfg *Config, cpu *kernels.CPU) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cpu == nil {
		cpu = kernels.NewCPU(0)
	}
	m := &Model{cfg: cfg, cpu: cpu, shapes: cfg.TensorShapes(), loaded: map[string]bool{}, invFreq: cfg.InvFreq()}
	m.alloc()
	return m, nil
}

func (m *Model) alloc() {
	c := m.cfg
	h, hd, inter := c.HiddenSize, c.HeadDim, c.IntermediateSize
	qd, kvd := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	m.embed = make([]float32, c.VocabSize*h)
	m.norm = make([]float32, h)
	m.lmHead = kernels.NewPacked(c.VocabSize, h)
	m.layers = make([]layer, c.NumHiddenLayers)
	for i := range m.layers {
		l := &m.layers[i]
		l.attnNorm = make([]float32, h)
		l.mlpNorm = make([]float32, h)
		l.qkv = kernels.NewPacked(qd+2*kvd, h)
		l.o = kernels.NewPacked(h, qd)
		l.gateUp = kernels.NewPacked(2*inter, h)
		l.down = kernels.NewPacked(h, inter)
		if c.QKVBias() {
			l.qkvBias = make([]float32, qd+2*kvd)
		}
		if c.OBias() {
			l.oBias = make([]float32, h)
		}
		if c.QKNorm() {
			l.qNorm = make([]float32, hd)
			l.kNorm = make([]float32, hd)
		}
	}
}

// DropWeights frees the weights (sleep). They must all be set again
// (SetTensor or LoadWeights) before Forward works.
func (m *Model) DropWeights() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.embed, m.norm, m.lmHead, m.layers = nil, nil, nil, nil
	if m.dev != nil {
		m.dev.dropWeights()
	}
	m.loaded = map[string]bool{}
	m.buf = scratch{}
}

// ensureAlloc re-allocates weights dropped by DropWeights.
func (m *Model) ensureAlloc() {
	if m.layers == nil {
		m.alloc()
	}
}

// Config returns the model's configuration.
func (m *Model) Config() *Config { return m.cfg }

// CPU returns the kernels the model runs on.
func (m *Model) CPU() *kernels.CPU { return m.cpu }

// KVCache is a paged key/value cache: NumBlocks blocks of BlockSize
// positions per layer; a sequence's block table maps its position p to
// slot table[p/BlockSize]*BlockSize + p%BlockSize.
type KVCache struct {
	BlockSize, NumBlocks int
	K, V                 [][]float32 // per layer: [slots][kvHeads*headDim]

	dev *deviceKV // non-nil: the cache is in device memory (device.go)
	pop populateCursor
}

// NewKVCache allocates a cache for the model. For a model on the GPU the
// device memory is allocated by the first Forward (AllocKVCache: at once).
func (m *Model) NewKVCache(numBlocks, blockSize int) *KVCache {
	c := m.cfg
	kv := &KVCache{BlockSize: blockSize, NumBlocks: numBlocks}
	if m.dev != nil {
		kv.dev = m.dev.newKV(numBlocks, blockSize)
		return kv
	}
	n := numBlocks * blockSize * c.NumKeyValueHeads * c.HeadDim
	for i := 0; i < c.NumHiddenLayers; i++ {
		kv.K = append(kv.K, make([]float32, n))
		kv.V = append(kv.V, make([]float32, n))
	}
	return kv
}

// BytesPerBlock is the memory one KV block takes over all layers.
func (c *Config) BytesPerBlock(blockSize int) int64 {
	return int64(2*4*c.NumHiddenLayers*c.NumKeyValueHeads*c.HeadDim) * int64(blockSize)
}

// Seq is one sequence's chunk in a forward pass: Tokens sit at positions
// Start, Start+1, ...; the cache already holds positions [0, Start) and
// Blocks covers [0, Start+len(Tokens)).
type Seq struct {
	Tokens    []int32
	Start     int
	Blocks    []int32
	AllLogits bool // logits for every token of the chunk, not just the last
}

type scratch struct {
	x, h, qkv, q, k, v, att, o, gu, act, sel, logits []float32
	pos, tableOff, tables, slots                     []int32
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Forward runs the model on a batch of sequence chunks, writing their K/V
// into kv, and returns logits per sequence: [len(Tokens)][vocab] rows
// flattened when AllLogits, else the last token's [vocab].
//
// The returned slices alias a buffer reused by the next Forward call.
//
// Each token's result depends only on its own sequence: rows are computed
// independently with a fixed summation order, so batching, chunking and
// prefix-cache reuse give bitwise-identical logits.
func (m *Model) Forward(kv *KVCache, seqs []Seq) ([][]float32, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dev != nil {
		return m.forwardDevice(kv, seqs)
	}
	T, err := m.checkBatch(kv, seqs)
	if err != nil || T == 0 {
		return nil, err
	}
	c := m.cfg
	H, hd, nh, nkv := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd, inter := nh*hd, nkv*hd, c.IntermediateSize
	b := &m.buf
	b.x = grow(b.x, T*H)
	b.h = grow(b.h, T*H)
	b.qkv = grow(b.qkv, T*(qd+2*kvd))
	b.q = grow(b.q, T*qd)
	b.k = grow(b.k, T*kvd)
	b.v = grow(b.v, T*kvd)
	b.att = grow(b.att, T*qd)
	b.o = grow(b.o, T*H)
	b.gu = grow(b.gu, T*2*inter)
	b.act = grow(b.act, T*inter)
	b.pos, b.tableOff, b.slots, b.tables = b.pos[:0], b.tableOff[:0], b.slots[:0], b.tables[:0]
	for _, s := range seqs {
		off := int32(len(b.tables))
		b.tables = append(b.tables, s.Blocks...)
		for j := range s.Tokens {
			p := s.Start + j
			b.pos = append(b.pos, int32(p))
			b.tableOff = append(b.tableOff, off)
			b.slots = append(b.slots, s.Blocks[p/kv.BlockSize]*int32(kv.BlockSize)+int32(p%kv.BlockSize))
		}
	}
	t := 0
	for _, s := range seqs {
		for _, id := range s.Tokens {
			copy(b.x[t*H:(t+1)*H], m.embed[int(id)*H:(int(id)+1)*H])
			t++
		}
	}
	cpu := m.cpu
	eps := float32(c.RMSNormEps)
	att := kernels.Attention{Heads: nh, KVHeads: nkv, HeadDim: hd, BlockSize: kv.BlockSize,
		Scale: float32(1 / math.Sqrt(float64(hd))), Pos: b.pos, TableOff: b.tableOff, Tables: b.tables}
	w := qd + 2*kvd
	for li := range m.layers {
		l := &m.layers[li]
		cpu.RMSNorm(b.h, b.x, l.attnNorm, eps)
		cpu.MatMul(b.qkv, b.h, T, l.qkv, l.qkvBias)
		for i := 0; i < T; i++ {
			row := b.qkv[i*w : (i+1)*w]
			copy(b.q[i*qd:(i+1)*qd], row[:qd])
			copy(b.k[i*kvd:(i+1)*kvd], row[qd:qd+kvd])
			copy(b.v[i*kvd:(i+1)*kvd], row[qd+kvd:])
		}
		if l.qNorm != nil {
			cpu.RMSNorm(b.q, b.q, l.qNorm, eps)
			cpu.RMSNorm(b.k, b.k, l.kNorm, eps)
		}
		cpu.RoPE(b.q, qd, nh, hd, b.pos, m.invFreq)
		cpu.RoPE(b.k, kvd, nkv, hd, b.pos, m.invFreq)
		kc, vc := kv.K[li], kv.V[li]
		for i, slot := range b.slots {
			copy(kc[int(slot)*kvd:(int(slot)+1)*kvd], b.k[i*kvd:(i+1)*kvd])
			copy(vc[int(slot)*kvd:(int(slot)+1)*kvd], b.v[i*kvd:(i+1)*kvd])
		}
		att.K, att.V = kc, vc
		cpu.Attend(b.att, b.q, &att)
		cpu.MatMul(b.o, b.att, T, l.o, l.oBias)
		cpu.Add(b.x, b.o)
		cpu.RMSNorm(b.h, b.x, l.mlpNorm, eps)
		cpu.MatMul(b.gu, b.h, T, l.gateUp, nil)
		cpu.SwiGLU(b.act, b.gu, T, inter)
		cpu.MatMul(b.o, b.act, T, l.down, nil)
		cpu.Add(b.x, b.o)
	}
	// Final norm and logits only for the rows asked for.
	rows := 0
	for _, s := range seqs {
		if s.AllLogits {
			rows += len(s.Tokens)
		} else {
			rows++
		}
	}
	b.sel = grow(b.sel, rows*H)
	r, t := 0, 0
	for _, s := range seqs {
		first := t + len(s.Tokens) - 1
		if s.AllLogits {
			first = t
		}
		for j := first; j < t+len(s.Tokens); j++ {
			copy(b.sel[r*H:(r+1)*H], b.x[j*H:(j+1)*H])
			r++
		}
		t += len(s.Tokens)
	}
	cpu.RMSNorm(b.sel, b.sel, m.norm, eps)
	V := c.VocabSize
	b.logits = grow(b.logits, rows*V)
	logits := b.logits
	cpu.MatMul(logits, b.sel, rows, m.lmHead, nil)
	return splitLogits(logits, seqs, V), nil
}

// splitLogits cuts the logits rows of a forward pass into each sequence's
// share: all its tokens' rows when AllLogits, else its last token's.
func splitLogits(logits []float32, seqs []Seq, V int) [][]float32 {
	out := make([][]float32, len(seqs))
	r := 0
	for i, s := range seqs {
		n := 1
		if s.AllLogits {
			n = len(s.Tokens)
		}
		out[i] = logits[r*V : (r+n)*V : (r+n)*V]
		r += n
	}
	return out
}
