//go:build cuda

package model

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/agentrl/agentrl/cuda/gpu"
)

var errClosed = errors.New("model: closed")

// devLayer is one decoder layer's weights in device memory, row-major
// W[out][in] (cuBLAS reads them as they come from the checkpoint; no
// packing). q|k|v and gate|up are fused like on the CPU.
type devLayer struct {
	attnNorm, mlpNorm *gpu.Buffer
	qkv, qkvBias      *gpu.Buffer // qkvBias nil without q/k/v bias
	o, oBias          *gpu.Buffer // oBias nil without o bias
	qNorm, kNorm      *gpu.Buffer // nil without QK-norm
	gateUp, down      *gpu.Buffer
}

// deviceModel holds a model's weights and forward scratch on the GPU.
// Model.mu serializes every call.
type deviceModel struct {
	d       *gpu.Device
	cfg     *Config
	invFreq *gpu.Buffer
	closed  bool

	// Weights; layers == nil after dropWeights. lmHead is nil when the
	// embedding is tied: the logits GEMM then reads the embedding.
	embed, norm, lmHead *gpu.Buffer
	layers              []devLayer

	// Scratch kept at the size of the largest batch so far, used through
	// views of the current batch's size.
	x, h, qkv, q, k, v, att, o, gu, act, sel, logits, scores *gpu.Buffer
	meta                                                     *gpu.Buffer // int32: the step's metadata, one upload
	// scoresMax caps the attention scratch (floats): the kernel keeps a
	// row of context-length scores per (token, head), so a long prefill
	// chunk at a long context runs in several launches instead of taking
	// gigabytes.
	scoresMax int

	// Host staging of the per-step metadata and the logits.
	hIDs, hPos, hOff, hTables, hSlots, hRows, hMeta []int32
	hLogits                                         []float32
}

// deviceKV is a paged KV cache in device memory: per layer
// [NumBlocks*BlockSize slots][kvHeads*headDim].
type deviceKV struct {
	g         *deviceModel
	slots     int
	blockSize int
	k, v      []*gpu.Buffer // nil until allocated
	closed    bool
}

func newDeviceModel(cfg *Config) (*deviceModel, error) {
	d, err := gpu.Open()
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	inv, err := d.Upload(cfg.InvFreq())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("model: %w", err), d.Close())
	}
	return &deviceModel{d: d, cfg: cfg, invFreq: inv, scoresMax: 1 << 24}, nil
}

func (g *deviceModel) weightBuffers() []**gpu.Buffer {
	out := []**gpu.Buffer{&g.embed, &g.norm, &g.lmHead}
	for i := range g.layers {
		l := &g.layers[i]
		out = append(out, &l.attnNorm, &l.mlpNorm, &l.qkv, &l.qkvBias, &l.o, &l.oBias, &l.qNorm, &l.kNorm, &l.gateUp, &l.down)
	}
	return out
}

func (g *deviceModel) scratchBuffers() []**gpu.Buffer {
	return []**gpu.Buffer{&g.x, &g.h, &g.qkv, &g.q, &g.k, &g.v, &g.att, &g.o, &g.gu, &g.act, &g.sel, &g.logits, &g.scores,
		&g.meta}
}

// free releases buffers and clears the fields, returning their errors.
func (g *deviceModel) free(bufs []**gpu.Buffer) error {
	var errs []error
	for _, b := range bufs {
		if *b != nil {
			errs = append(errs, g.d.Free(*b))
			*b = nil
		}
	}
	return errors.Join(errs...)
}

// allocWeights allocates every weight buffer (after newDeviceModel or
// dropWeights); on failure nothing stays allocated.
func (g *deviceModel) allocWeights() error {
	if g.closed {
		return errClosed
	}
	if g.layers != nil {
		return nil
	}
	c := g.cfg
	H, hd, inter := c.HiddenSize, c.HeadDim, c.IntermediateSize
	qd, kvd := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	type want struct {
		dst **gpu.Buffer
		n   int
	}
	g.layers = make([]devLayer, c.NumHiddenLayers)
	wants := []want{{&g.embed, c.VocabSize * H}, {&g.norm, H}}
	if !c.TieWordEmbeddings {
		wants = append(wants, want{&g.lmHead, c.VocabSize * H})
	}
	for i := range g.layers {
		l := &g.layers[i]
		wants = append(wants, want{&l.attnNorm, H}, want{&l.mlpNorm, H}, want{&l.qkv, (qd + 2*kvd) * H}, want{&l.o, H * qd},
			want{&l.gateUp, 2 * inter * H}, want{&l.down, H * inter})
		if c.QKVBias() {
			wants = append(wants, want{&l.qkvBias, qd + 2*kvd})
		}
		if c.OBias() {
			wants = append(wants, want{&l.oBias, H})
		}
		if c.QKNorm() {
			wants = append(wants, want{&l.qNorm, hd}, want{&l.kNorm, hd})
		}
	}
	for _, w := range wants {
		b, err := g.d.Alloc(w.n)
		if err != nil {
			err = errors.Join(fmt.Errorf("model: weights: %w", err), g.free(g.weightBuffers()))
			g.layers = nil
			return err
		}
		*w.dst = b
	}
	return nil
}

// target is where a named tensor goes: a buffer and the value offset of
// its rows inside a fused matrix or bias.
func (g *deviceModel) target(name string) (*gpu.Buffer, int, error) {
	c := g.cfg
	H, hd := c.HiddenSize, c.HeadDim
	qd, kvd, inter := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd, c.IntermediateSize
	switch name {
	case "model.embed_tokens.weight":
		return g.embed, 0, nil
	case "model.norm.weight":
		return g.norm, 0, nil
	case "lm_head.weight":
		if g.lmHead != nil {
			return g.lmHead, 0, nil
		}
	}
	idx, field, _ := strings.Cut(strings.TrimPrefix(name, "model.layers."), ".")
	if i, err := strconv.Atoi(idx); err == nil && i >= 0 && i < len(g.layers) {
		l := &g.layers[i]
		var b *gpu.Buffer
		off := 0
		switch field {
		case "input_layernorm.weight":
			b = l.attnNorm
		case "post_attention_layernorm.weight":
			b = l.mlpNorm
		case "self_attn.q_proj.weight":
			b = l.qkv
		case "self_attn.k_proj.weight":
			b, off = l.qkv, qd*H
		case "self_attn.v_proj.weight":
			b, off = l.qkv, (qd+kvd)*H
		case "self_attn.o_proj.weight":
			b = l.o
		case "mlp.gate_proj.weight":
			b = l.gateUp
		case "mlp.up_proj.weight":
			b, off = l.gateUp, inter*H
		case "mlp.down_proj.weight":
			b = l.down
		case "self_attn.q_proj.bias":
			b = l.qkvBias
		case "self_attn.k_proj.bias":
			b, off = l.qkvBias, qd
		case "self_attn.v_proj.bias":
			b, off = l.qkvBias, qd+kvd
		case "self_attn.o_proj.bias":
			b = l.oBias
		case "self_attn.q_norm.weight":
			b = l.qNorm
		case "self_attn.k_norm.weight":
			b = l.kNorm
		}
		if b != nil {
			return b, off, nil
		}
	}
	// CheckTensor accepted the name, so this is a mismatch between
	// TensorShapes and this table.
	return nil, 0, fmt.Errorf("%w: no device buffer for tensor %q", ErrWeights, name)
}

// setTensor uploads one checked tensor (row-major, as in the checkpoint).
func (g *deviceModel) setTensor(name string, data []float32) error {
	if err := g.allocWeights(); err != nil {
		return err
	}
	b, off, err := g.target(name)
	if err != nil {
		return err
	}
	if err := g.d.Write(b, off, data); err != nil {
		return fmt.Errorf("model: uploading %s: %w", name, err)
	}
	return nil
}

// dropWeights frees the weights and the scratch (sleep). A failed cudaFree
// leaves the CUDA context broken, which the next call reports, so the
// error is not kept here.
func (g *deviceModel) dropWeights() {
	_ = g.free(append(g.weightBuffers(), g.scratchBuffers()...))
	g.layers = nil
	g.hLogits = nil // the host copy of the logits can be large too
}

func (g *deviceModel) close() error {
	if g.closed {
		return nil
	}
	err := g.free(append(g.weightBuffers(), append(g.scratchBuffers(), &g.invFreq)...))
	g.layers = nil
	g.closed = true
	return errors.Join(err, g.d.Close())
}

func (g *deviceModel) newKV(numBlocks, blockSize int) *deviceKV {
	return &deviceKV{g: g, slots: numBlocks * blockSize, blockSize: blockSize}
}

// allocKV allocates a cache's device memory if it is not yet; on failure
// nothing stays allocated (and a later call may try again).
func (g *deviceModel) allocKV(kv *deviceKV) error {
	switch {
	case kv.closed:
		return fmt.Errorf("%w: KV cache closed", ErrInput)
	case kv.g != g:
		return fmt.Errorf("%w: KV cache belongs to another model", ErrInput)
	case g.closed:
		return errClosed
	case kv.k != nil:
		return nil
	}
	c := g.cfg
	n := kv.slots * c.NumKeyValueHeads * c.HeadDim
	for range c.NumHiddenLayers {
		k, err := g.d.Alloc(n)
		if err != nil {
			return errors.Join(fmt.Errorf("model: KV cache: %w", err), kv.release())
		}
		kv.k = append(kv.k, k)
		v, err := g.d.Alloc(n)
		if err != nil {
			return errors.Join(fmt.Errorf("model: KV cache: %w", err), kv.release())
		}
		kv.v = append(kv.v, v)
	}
	return nil
}

// release frees the cache's device memory.
func (kv *deviceKV) release() error {
	var errs []error
	for _, b := range append(kv.k, kv.v...) {
		errs = append(errs, kv.g.d.Free(b))
	}
	kv.k, kv.v = nil, nil
	return errors.Join(errs...)
}

// close frees the cache for good.
func (kv *deviceKV) close() error {
	kv.closed = true
	return kv.release()
}

// view returns the first n values of *b, reallocating it when it is
// smaller (the old contents are not kept).
func (g *deviceModel) view(b **gpu.Buffer, n int) (*gpu.Buffer, error) {
	if *b == nil || (*b).N < n {
		if err := g.d.Free(*b); err != nil {
			return nil, err
		}
		*b = nil
		nb, err := g.d.Alloc(n)
		if err != nil {
			return nil, err
		}
		*b = nb
	}
	return (*b).Slice(0, n), nil
}

// forward is Forward on the device for a checked batch of T tokens: the
// same computation as the CPU path, kernel for kernel (see model.go), with
// the per-step metadata uploaded once and only the asked-for logits rows
// downloaded.
func (g *deviceModel) forward(kv *deviceKV, seqs []Seq, T int) ([][]float32, error) {
	if err := g.allocKV(kv); err != nil {
		return nil, err
	}
	if g.layers == nil {
		return nil, fmt.Errorf("%w: weights dropped", ErrWeights)
	}
	out, err := g.run(kv, seqs, T)
	if err != nil {
		return nil, fmt.Errorf("model: GPU forward: %w", err)
	}
	return out, nil
}

func (g *deviceModel) run(kv *deviceKV, seqs []Seq, T int) ([][]float32, error) {
	c := g.cfg
	H, hd, nh, nkv := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	qd, kvd, inter, V := nh*hd, nkv*hd, c.IntermediateSize, c.VocabSize
	w := qd + 2*kvd
	bs := kv.blockSize

	// Metadata on the host: token ids, positions, block tables, cache
	// slots, and the rows whose logits are wanted.
	g.hIDs, g.hPos, g.hOff, g.hTables, g.hSlots, g.hRows = g.hIDs[:0], g.hPos[:0], g.hOff[:0], g.hTables[:0], g.hSlots[:0], g.hRows[:0]
	maxPos := 0
	for _, s := range seqs {
		off := int32(len(g.hTables))
		g.hTables = append(g.hTables, s.Blocks...)
		first := len(s.Tokens) - 1
		if s.AllLogits {
			first = 0
		}
		for j, id := range s.Tokens {
			p := s.Start + j
			if j >= first {
				g.hRows = append(g.hRows, int32(len(g.hIDs)))
			}
			g.hIDs = append(g.hIDs, id)
			g.hPos = append(g.hPos, int32(p))
			g.hOff = append(g.hOff, off)
			g.hSlots = append(g.hSlots, s.Blocks[p/bs]*int32(bs)+int32(p%bs))
			maxPos = max(maxPos, p)
		}
	}
	rows := len(g.hRows)

	d := g.d
	var err error
	buf := func(b **gpu.Buffer, n int) *gpu.Buffer {
		if err != nil {
			return nil
		}
		var v *gpu.Buffer
		v, err = g.view(b, n)
		return v
	}
	x, h, qkv := buf(&g.x, T*H), buf(&g.h, T*H), buf(&g.qkv, T*w)
	q, k, v, att := buf(&g.q, T*qd), buf(&g.k, T*kvd), buf(&g.v, T*kvd), buf(&g.att, T*qd)
	o, gu, act := buf(&g.o, T*H), buf(&g.gu, T*2*inter), buf(&g.act, T*inter)
	sel, logits := buf(&g.sel, rows*H), buf(&g.logits, rows*V)
	perLaunch := min(T, max(1, g.scoresMax/(nh*(maxPos+1)))) // tokens per attention launch
	scores := buf(&g.scores, perLaunch*nh*(maxPos+1))
	// The metadata goes up in one copy: each host→device copy of pageable
	// memory costs a synchronization, which a decode step feels.
	g.hMeta = g.hMeta[:0]
	parts := [][]int32{g.hIDs, g.hPos, g.hOff, g.hTables, g.hSlots, g.hRows}
	for _, p := range parts {
		g.hMeta = append(g.hMeta, p...)
	}
	meta := buf(&g.meta, len(g.hMeta))
	if err != nil {
		return nil, err
	}
	if err := d.WriteInts(meta, 0, g.hMeta); err != nil {
		return nil, err
	}
	views := make([]*gpu.Buffer, len(parts))
	at := 0
	for i, p := range parts {
		views[i] = meta.Slice(at, len(p))
		at += len(p)
	}
	ids, pos, tableOff, tables, slots, rowIDs := views[0], views[1], views[2], views[3], views[4], views[5]

	// Every call below only queues work; errors are launch errors, and
	// execution errors surface at the final Read.
	eps := float32(c.RMSNormEps)
	a := gpu.Attention{Heads: nh, KVHeads: nkv, HeadDim: hd, BlockSize: bs, Scale: float32(1 / math.Sqrt(float64(hd))),
		Tables: tables, Scratch: scores, MaxContext: maxPos + 1}
	step := func(e error) {
		if err == nil {
			err = e
		}
	}
	step(d.Embed(x, g.embed, ids, H))
	for li := range g.layers {
		l := &g.layers[li]
		step(d.RMSNorm(h, x, l.attnNorm, eps))
		step(d.MatMul(qkv, h, T, l.qkv, w, H, l.qkvBias))
		step(d.Copy2D(q, qd, qkv, w, qd, T))
		step(d.Copy2D(k, kvd, qkv.Slice(qd, T*w-qd), w, kvd, T))
		step(d.Copy2D(v, kvd, qkv.Slice(qd+kvd, T*w-qd-kvd), w, kvd, T))
		if l.qNorm != nil {
			step(d.RMSNorm(q, q, l.qNorm, eps))
			step(d.RMSNorm(k, k, l.kNorm, eps))
		}
		step(d.RoPE(q, qd, nh, hd, pos, g.invFreq))
		step(d.RoPE(k, kvd, nkv, hd, pos, g.invFreq))
		step(d.StoreKV(kv.k[li], kv.v[li], k, v, slots, kvd))
		a.K, a.V = kv.k[li], kv.v[li]
		for t0 := 0; t0 < T; t0 += perLaunch {
			n := min(perLaunch, T-t0)
			a.Pos, a.TableOff = pos.Slice(t0, n), tableOff.Slice(t0, n)
			step(d.Attend(att.Slice(t0*qd, n*qd), q.Slice(t0*qd, n*qd), &a))
		}
		step(d.MatMul(o, att, T, l.o, H, qd, l.oBias))
		step(d.Add(x, o))
		step(d.RMSNorm(h, x, l.mlpNorm, eps))
		step(d.MatMul(gu, h, T, l.gateUp, 2*inter, H, nil))
		step(d.SwiGLU(act, gu, T, inter))
		step(d.MatMul(o, act, T, l.down, H, inter, nil))
		step(d.Add(x, o))
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", li, err)
		}
	}
	// Final norm and logits only for the rows asked for: gather them (the
	// embedding kernel is a row gather), normalize, project.
	lmHead := g.lmHead
	if lmHead == nil {
		lmHead = g.embed
	}
	step(d.Embed(sel, x, rowIDs, H))
	step(d.RMSNorm(sel, sel, g.norm, eps))
	step(d.MatMul(logits, sel, rows, lmHead, V, H, nil))
	if err != nil {
		return nil, err
	}
	if cap(g.hLogits) < rows*V {
		g.hLogits = make([]float32, rows*V)
	}
	host := g.hLogits[:rows*V]
	if err := d.Read(host, logits); err != nil {
		return nil, err
	}
	return splitLogits(host, seqs, V), nil
}
