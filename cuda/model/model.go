package model

import (
	"errors"
	"fmt"
	"math"
	"runtime"
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

	w  *Weights[*cpuWeight] // nil after DropWeights
	wt WeightType           // how matrices are stored (fp32, bf16 or int8)

	// mapWeights: loads map the checkpoint (LoadOptions without Copy),
	// whose mapping is mapped while weights use it; unmapOnDrop unmaps
	// it if the model is dropped without Close (setMapped).
	mapWeights  bool
	mapped      *mappedCheckpoint
	unmapOnDrop runtime.Cleanup

	mu  sync.Mutex // one Forward at a time: scratch buffers are shared
	ops cpuOps

	dev *deviceModel // non-nil: weights and forward on the GPU (device.go)
}

// cpuWeight is a weight on the CPU: a vector (norm scale, bias, an untied
// fp32 embedding table), a matrix packed for the GEMM kernel (fp32 models:
// every matrix, and a tied embedding table, which the head shares), or a
// bf16 matrix in the checkpoint's row-major layout (bf16 models: every
// matrix and the embedding table, which a tied head then shares).
type cpuWeight struct {
	vec []float32
	mat *kernels.Packed
	bf  *kernels.BF16
	q8  *kernels.Q8    // int8 models: every matrix and the embedding table
	bz  *kernels.BF16Z // bf16z models: every matrix and the embedding table

	// mapped: mat, q8 or bz is a mapped packed checkpoint's bytes,
	// read-only (a bf16 matrix in place is a parted kernels.BF16 instead).
	mapped bool
}

// New returns a model with zero fp32 weights for cfg; set them with
// SetTensor or LoadWeights. NewWith chooses bf16 storage.
func New(cfg *Config, cpu *kernels.CPU) (*Model, error) { return NewWith(cfg, cpu, WeightsF32) }

func (m *Model) alloc() { m.allocFor(false, nil) }

// allocFor allocates the weights; loading: a load will write every row
// next, so int8 matrices skip the fill their rows get from it (see newQ8);
// half: the places whose fp32 matrices it will fill with bf16 values only
// (kindMatHalf).
func (m *Model) allocFor(loading bool, half map[Place]bool) {
	m.w, _ = NewWeights(m.cfg, func(Slot, int, int) (*cpuWeight, error) { return nil, nil })
	for _, s := range m.cfg.slots() {
		*m.w.At(s.at) = m.newWeight(m.kindAt(s.at, half), s.rows, s.cols, loading)
	}
	if m.cfg.TieWordEmbeddings {
		// The head is the table itself, in every weight type: int8 and
		// bf16 rows are multiplied as they are, and an fp32 table is
		// packed for the GEMM kernel, an embedding lookup gathering a row
		// from the panels (a row-major copy would be a fifth of a 0.6B
		// model's memory).
		m.w.LMHead = m.w.Embed
	}
}

// weightKind is how a CPU model stores one weight.
type weightKind uint8

const (
	kindVec   weightKind = iota // []float32, row-major
	kindMat                     // kernels.Packed fp32 panels
	kindBF16                    // kernels.BF16, row-major
	kindQ8                      // kernels.Q8 panels
	kindBF16Z                   // kernels.BF16Z, compressed bf16 rows
	// kernels.Packed fp32 panels held in Half: an fp32 model's matrix
	// whose values are all bf16 values, as a bf16 checkpoint's are. It
	// computes kindMat's bits from half the bytes (kernels.Packed).
	kindMatHalf
)

// kindAt is kindOf for the weight at place at, kindMatHalf where half
// says an fp32 matrix holds bf16 values only.
func (m *Model) kindAt(at Place, half map[Place]bool) weightKind {
	k := m.kindOf(at.Slot)
	if k == kindMat && half[at] {
		return kindMatHalf
	}
	return k
}

// kind is how w is stored, given k, its model's kind for it: kindMat
// held in Half is kindMatHalf.
func (w *cpuWeight) kind(k weightKind) weightKind {
	if k == kindMat && w.mat != nil && w.mat.Half != nil {
		return kindMatHalf
	}
	return k
}

// kindOf is how the model's weight type stores slot s: matrices (and the
// embedding table, which a tied head shares, and which int8 and bf16
// models also gather from in their own form) in the weight type's form,
// vectors as float32.
func (m *Model) kindOf(s Slot) weightKind {
	switch {
	case m.wt == WeightsInt8 && (s.Matrix() || s == SlotEmbed):
		return kindQ8
	case m.wt == WeightsBF16 && (s.Matrix() || s == SlotEmbed):
		return kindBF16
	case m.wt == WeightsBF16Z && (s.Matrix() || s == SlotEmbed):
		return kindBF16Z
	case m.wt == WeightsF32 && (s.Matrix() || (m.cfg.TieWordEmbeddings && s == SlotEmbed)):
		return kindMat
	}
	return kindVec
}

// newWeight allocates one weight of kind k.
func (m *Model) newWeight(k weightKind, rows, cols int, loading bool) *cpuWeight {
	switch k {
	case kindQ8:
		return &cpuWeight{q8: m.newQ8(rows, cols, loading)}
	case kindBF16:
		return &cpuWeight{bf: kernels.NewBF16(rows, cols)}
	case kindBF16Z:
		// All zero: every code 0, whose table entry is 0, so every value
		// is +0 (as NewBF16's), no escapes.
		z := &kernels.BF16Z{N: rows, K: cols, EscOff: make([]uint32, rows+1)}
		z.Data = make([]uint8, rows*z.KP()*3/2)
		return &cpuWeight{bz: z}
	case kindMat:
		return &cpuWeight{mat: kernels.NewPacked(rows, cols)}
	case kindMatHalf:
		return &cpuWeight{mat: kernels.NewPackedHalf(rows, cols)}
	}
	return &cpuWeight{vec: make([]float32, rows*cols)}
}

// newQ8 is kernels.NewQ8 (every weight q = 0: the byte 128, scale 0) with
// the bytes filled on all the CPU's threads: NewQ8 fills them on one, and
// the fill is where the new pages are first written, so mapped. For a
// load (loading) only the last panel's padding rows need the fill: the
// quantizer writes every byte of the rows it is given, k padding included,
// so the rest would be written twice (at the 1.7B shape the fill was a
// third of an int8 load's time).
func (m *Model) newQ8(rows, cols int, loading bool) *kernels.Q8 {
	w := &kernels.Q8{N: rows, K: cols}
	w.Q = make([]uint8, w.Panels()*w.Blocks()*kernels.Q8BlockSize*kernels.Panel)
	w.D = make([]uint16, w.Panels()*w.Blocks()*kernels.Panel)
	q := w.Q
	if loading {
		if rows%kernels.Panel == 0 {
			return w
		}
		q = q[(w.Panels()-1)*w.Blocks()*kernels.Q8BlockSize*kernels.Panel:] // the last panel
	}
	const chunk = 1 << 20
	m.cpu.Split((len(q)+chunk-1)/chunk, func(lo, hi int) {
		fill(q[lo*chunk:min(hi*chunk, len(q))], 128)
	})
	return w
}

// fill sets every byte of b to v by doubling copies (memmove).
func fill(b []byte, v byte) {
	if len(b) == 0 {
		return
	}
	b[0] = v
	for i := 1; i < len(b); i *= 2 {
		copy(b[i:], b[:i])
	}
}

// DropWeights frees the weights (sleep). They must all be set again
// (SetTensor or LoadWeights) before Forward works.
func (m *Model) DropWeights() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.w = nil
	if m.dev != nil {
		m.dev.dropWeights()
	}
	m.loaded = map[string]bool{}
	m.ops = cpuOps{}
	// Unmapping a read-only mapping fails only for a bad range, which
	// this one is not; there is no caller to tell.
	_ = m.setMapped(nil)
}

// ensureAlloc re-allocates weights dropped by DropWeights.
func (m *Model) ensureAlloc() {
	if m.w == nil {
		m.alloc()
	}
}

// Config returns the model's configuration.
func (m *Model) Config() *Config { return m.cfg }

// CPU returns the kernels the model runs on.
func (m *Model) CPU() *kernels.CPU { return m.cpu }

// KVType is how a KV cache stores keys and values.
type KVType string

const (
	// KVF32 stores them as computed: the default.
	KVF32 KVType = "fp32"
	// KVBF16 rounds them to bf16 (to nearest even) as they are written:
	// half the bytes, so twice the positions in the same memory and half
	// the bytes read per position in decode, where after a few thousand
	// positions the cache weighs as much as the weights. The CPU only.
	// Measured on the demo model's held-out tasks: the same trajectories,
	// logprobs within 0.05 (TestKVBF16HeldOut).
	KVBF16 KVType = "bf16"
)

// ParseKVType parses a KV cache type: fp32 (or empty) or bf16.
func ParseKVType(s string) (KVType, error) {
	switch KVType(s) {
	case "", KVF32:
		return KVF32, nil
	case KVBF16:
		return KVBF16, nil
	}
	return "", fmt.Errorf("%w: unknown KV cache type %q (want fp32 or bf16)", ErrInput, s)
}

// elemBytes is the bytes of one stored value.
func (t KVType) elemBytes() int64 {
	if t == KVBF16 {
		return 2
	}
	return 4
}

// KVCache is a paged key/value cache: NumBlocks blocks of BlockSize
// positions per layer; a sequence's block table maps its position p to
// slot table[p/BlockSize]*BlockSize + p%BlockSize.
type KVCache struct {
	BlockSize, NumBlocks int
	// Per layer, [slots][kvHeads*headDim]: K and V for an fp32 cache,
	// KH and VH (bf16 bits) for a bf16 one.
	K, V   [][]float32
	KH, VH [][]uint16

	dev *deviceKV // non-nil: the cache is in device memory (device.go)
	pop populateCursor
}

// Type is how the cache stores keys and values.
func (kv *KVCache) Type() KVType {
	if kv.KH != nil {
		return KVBF16
	}
	return KVF32
}

// layers is the number of layers a host cache holds.
func (kv *KVCache) layers() int { return max(len(kv.K), len(kv.KH)) }

// NewKVCache allocates an fp32 cache for the model. For a model on the GPU
// the device memory is allocated by the first Forward (AllocKVCache: at
// once).
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

// NewKVCacheBF16 allocates a bf16 cache (see KVBF16) for a model on the
// CPU; a model on a device has only fp32 caches.
func (m *Model) NewKVCacheBF16(numBlocks, blockSize int) (*KVCache, error) {
	if m.dev != nil {
		return nil, fmt.Errorf("%w: a bf16 KV cache is for models on the CPU", ErrInput)
	}
	c := m.cfg
	kv := &KVCache{BlockSize: blockSize, NumBlocks: numBlocks}
	n := numBlocks * blockSize * c.NumKeyValueHeads * c.HeadDim
	for i := 0; i < c.NumHiddenLayers; i++ {
		kv.KH = append(kv.KH, make([]uint16, n))
		kv.VH = append(kv.VH, make([]uint16, n))
	}
	return kv, nil
}

// BytesPerBlock is the memory one KV block of type t takes over all layers.
func (c *Config) BytesPerBlock(t KVType, blockSize int) int64 {
	return 2 * t.elemBytes() * int64(c.NumHiddenLayers*c.NumKeyValueHeads*c.HeadDim) * int64(blockSize)
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
	o := &m.ops
	o.begin(m, kv, seqs, T)
	h := Decode[[]float32, *cpuWeight](o, m.cfg, m.w)
	if m.mapped != nil {
		// A checkpoint file truncated under its mapping read as zeros
		// somewhere in this pass (or an earlier one): fail closed.
		if err := m.mapped.damaged(); err != nil {
			return nil, err
		}
	}
	return splitLogits(h.Logits, seqs, m.cfg.VocabSize), nil
}

// cpuOps runs Decode on the CPU kernels for one batch. Its buffers keep
// the size of the largest batch so far, so a forward pass allocates
// nothing once warm; every layer reuses the same buffers, and the
// residual stream, the norms and the QK-norm are updated in place.
type cpuOps struct {
	cpu     *kernels.CPU
	invFreq []float32
	eps     float32
	kv      *KVCache
	seqs    []Seq
	T, H, V int
	att     kernels.Attention

	acts                                            LayerActs[[]float32]
	head                                            HeadActs[[]float32]
	x, h, qkv, q, k, v, at, o, gu, act, sel, logits []float32
	pos, tableOff, tables, slots                    []int32
}

// begin sizes the buffers and lays out the batch's positions, block
// tables and cache slots.
func (o *cpuOps) begin(m *Model, kv *KVCache, seqs []Seq, T int) {
	c := m.cfg
	H, hd, nh, nkv := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd, inter := nh*hd, nkv*hd, c.IntermediateSize
	o.cpu, o.invFreq, o.eps, o.kv, o.seqs, o.T, o.H, o.V = m.cpu, m.invFreq, float32(c.RMSNormEps), kv, seqs, T, H, c.VocabSize
	o.x = grow(o.x, T*H)
	o.h = grow(o.h, T*H)
	o.qkv = grow(o.qkv, T*(qd+2*kvd))
	o.q = grow(o.q, T*qd)
	o.k = grow(o.k, T*kvd)
	o.v = grow(o.v, T*kvd)
	o.at = grow(o.at, T*qd)
	o.o = grow(o.o, T*H)
	o.gu = grow(o.gu, T*2*inter)
	o.act = grow(o.act, T*inter)
	o.acts = LayerActs[[]float32]{H1: o.h, QKV: o.qkv, Q: o.q, K: o.k, V: o.v, QN: o.q, KN: o.k, Att: o.at, Proj: o.o,
		Mid: o.x, H2: o.h, GateUp: o.gu, Act: o.act, Down: o.o, Out: o.x}
	o.pos, o.tableOff, o.slots, o.tables = o.pos[:0], o.tableOff[:0], o.slots[:0], o.tables[:0]
	for _, s := range seqs {
		off := int32(len(o.tables))
		o.tables = append(o.tables, s.Blocks...)
		for j := range s.Tokens {
			p := s.Start + j
			o.pos = append(o.pos, int32(p))
			o.tableOff = append(o.tableOff, off)
			o.slots = append(o.slots, s.Blocks[p/kv.BlockSize]*int32(kv.BlockSize)+int32(p%kv.BlockSize))
		}
	}
	o.att = kernels.Attention{Heads: nh, KVHeads: nkv, HeadDim: hd, BlockSize: kv.BlockSize,
		Scale: float32(1 / math.Sqrt(float64(hd))), Pos: o.pos, TableOff: o.tableOff, Tables: o.tables}
}

func (o *cpuOps) Stream() []float32                      { return o.x }
func (o *cpuOps) Layer(int) *LayerActs[[]float32]        { return &o.acts }
func (o *cpuOps) Split(q, k, v, qkv []float32)           { splitRows(q, k, v, qkv, o.T) }
func (o *cpuOps) RMSNorm(dst, x []float32, w *cpuWeight) { o.cpu.RMSNorm(dst, x, w.vec, o.eps) }

func (o *cpuOps) Head([]float32) *HeadActs[[]float32] {
	rows := 0
	for _, s := range o.seqs {
		if s.AllLogits {
			rows += len(s.Tokens)
		} else {
			rows++
		}
	}
	o.sel = grow(o.sel, rows*o.H)
	o.logits = grow(o.logits, rows*o.V)
	o.head = HeadActs[[]float32]{Rows: o.sel, Norm: o.sel, Logits: o.logits}
	return &o.head
}

func (o *cpuOps) Embed(dst []float32, table *cpuWeight) {
	H := o.H
	t := 0
	for _, s := range o.seqs {
		for _, id := range s.Tokens {
			switch {
			case table.bf != nil:
				table.bf.RowFloat32(dst[t*H:(t+1)*H], int(id))
			case table.q8 != nil:
				table.q8.RowFloat32(dst[t*H:(t+1)*H], int(id))
			case table.bz != nil:
				table.bz.RowFloat32(dst[t*H:(t+1)*H], int(id))
			case table.mat != nil:
				table.mat.RowFloat32(dst[t*H:(t+1)*H], int(id))
			default:
				copy(dst[t*H:(t+1)*H], table.vec[int(id)*H:(int(id)+1)*H])
			}
			t++
		}
	}
}

func (o *cpuOps) MatMul(dst, x []float32, w, bias *cpuWeight) {
	var b []float32
	if bias != nil {
		b = bias.vec
	}
	if w.bf != nil {
		o.cpu.MatMulBF16(dst, x, len(x)/w.bf.K, w.bf, b)
		return
	}
	if w.q8 != nil {
		o.cpu.MatMulQ8(dst, x, len(x)/w.q8.K, w.q8, b)
		return
	}
	if w.bz != nil {
		o.cpu.MatMulBF16Z(dst, x, len(x)/w.bz.K, w.bz, b)
		return
	}
	o.cpu.MatMul(dst, x, len(x)/w.mat.K, w.mat, b)
}

func (o *cpuOps) RoPE(x []float32, heads int) {
	stride := len(x) / o.T
	o.cpu.RoPE(x, stride, heads, stride/heads, o.pos, o.invFreq)
}

// Attend stores the batch's keys and values in the cache first: each token
// then attends to cache positions up to its own.
func (o *cpuOps) Attend(dst, q, k, v []float32, li int) {
	kvd := len(k) / o.T
	if o.kv.KH != nil {
		kc, vc := o.kv.KH[li], o.kv.VH[li]
		for i, slot := range o.slots {
			kernels.ToBF16(kc[int(slot)*kvd:(int(slot)+1)*kvd], k[i*kvd:(i+1)*kvd])
			kernels.ToBF16(vc[int(slot)*kvd:(int(slot)+1)*kvd], v[i*kvd:(i+1)*kvd])
		}
		o.att.KH, o.att.VH = kc, vc
	} else {
		kc, vc := o.kv.K[li], o.kv.V[li]
		for i, slot := range o.slots {
			copy(kc[int(slot)*kvd:(int(slot)+1)*kvd], k[i*kvd:(i+1)*kvd])
			copy(vc[int(slot)*kvd:(int(slot)+1)*kvd], v[i*kvd:(i+1)*kvd])
		}
		o.att.K, o.att.V = kc, vc
	}
	o.cpu.Attend(dst, q, &o.att)
}

func (o *cpuOps) Add(dst, a, b []float32) {
	if &dst[0] != &a[0] {
		copy(dst, a)
	}
	o.cpu.Add(dst, b)
}

func (o *cpuOps) SwiGLU(dst, gu []float32) { o.cpu.SwiGLU(dst, gu, o.T, len(dst)/o.T) }

func (o *cpuOps) SelectRows(dst, x []float32) {
	H := o.H
	r, t := 0, 0
	for _, s := range o.seqs {
		first := t + len(s.Tokens) - 1
		if s.AllLogits {
			first = t
		}
		for j := first; j < t+len(s.Tokens); j++ {
			copy(dst[r*H:(r+1)*H], x[j*H:(j+1)*H])
			r++
		}
		t += len(s.Tokens)
	}
}

// splitRows copies the q, k and v columns of t fused projection rows.
func splitRows(q, k, v, qkv []float32, t int) {
	qd, kvd := len(q)/t, len(k)/t
	w := qd + 2*kvd
	for i := 0; i < t; i++ {
		row := qkv[i*w : (i+1)*w]
		copy(q[i*qd:(i+1)*qd], row[:qd])
		copy(k[i*kvd:(i+1)*kvd], row[qd:qd+kvd])
		copy(v[i*kvd:(i+1)*kvd], row[qd+kvd:])
	}
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
