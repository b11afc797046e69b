package model

import (
	"strconv"
	"strings"
)

// This file is the one definition of the decoder: which weights a layer
// has, where each Hugging Face tensor goes in them, and the sequence of
// operations a forward pass runs. The CPU forward (model.go), the GPU
// forward (device_cuda.go) and the training forward (package train) each
// implement Ops over their own tensor types and call Decode, so an
// architecture change (a norm, a bias, a tied head) is made here once.

// Slot names one weight of the decoder in its fused layout: q|k|v and
// gate|up are one matrix each, so a layer runs one projection for them.
type Slot uint8

// Weight slots.
const (
	SlotEmbed    Slot = iota // [vocab][hidden] embedding table (gathered, not multiplied)
	SlotNorm                 // [hidden] final RMSNorm scale
	SlotLMHead               // [vocab][hidden] output projection
	SlotAttnNorm             // [hidden]
	SlotMLPNorm              // [hidden]
	SlotQKV                  // [q+k+v][hidden]: q (heads*hd), k, v (kvHeads*hd each)
	SlotQKVBias              // [q+k+v] (Qwen2 only)
	SlotO                    // [hidden][heads*hd]
	SlotOBias                // [hidden] (configs with o_proj bias only)
	SlotQNorm                // [headDim] (Qwen3 QK-norm only)
	SlotKNorm                // [headDim] (Qwen3 QK-norm only)
	SlotGateUp               // [2*inter][hidden]: gate, then up
	SlotDown                 // [hidden][inter]
)

// Matrix reports whether the slot is multiplied (MatMul) rather than read
// as a vector or gathered: backends store the two kinds differently (the
// CPU packs matrices into panels).
func (s Slot) Matrix() bool {
	switch s {
	case SlotLMHead, SlotQKV, SlotO, SlotGateUp, SlotDown:
		return true
	}
	return false
}

// Place is where a Hugging Face tensor lives in the decoder's weights:
// Layer (-1 for the embedding, final norm and head), the slot, and the
// first row it fills inside a fused matrix (for a fused bias: the first
// value).
type Place struct {
	Layer int
	Slot  Slot
	Row   int
}

// Place maps a tensor name of TensorShapes to its place. It reports false
// for names the config has no weight for (lm_head when tied, biases or
// QK-norms the architecture lacks, layers past the last).
func (c *Config) Place(name string) (Place, bool) {
	switch name {
	case "model.embed_tokens.weight":
		return Place{Layer: -1, Slot: SlotEmbed}, true
	case "model.norm.weight":
		return Place{Layer: -1, Slot: SlotNorm}, true
	case "lm_head.weight":
		return Place{Layer: -1, Slot: SlotLMHead}, !c.TieWordEmbeddings
	}
	rest, ok := strings.CutPrefix(name, "model.layers.")
	if !ok {
		return Place{}, false
	}
	idx, field, ok := strings.Cut(rest, ".")
	i, err := strconv.Atoi(idx)
	if !ok || err != nil || i < 0 || i >= c.NumHiddenLayers || strconv.Itoa(i) != idx {
		return Place{}, false
	}
	qd, kvd, inter := c.NumAttentionHeads*c.HeadDim, c.NumKeyValueHeads*c.HeadDim, c.IntermediateSize
	p := Place{Layer: i}
	switch field {
	case "input_layernorm.weight":
		p.Slot = SlotAttnNorm
	case "post_attention_layernorm.weight":
		p.Slot = SlotMLPNorm
	case "self_attn.q_proj.weight":
		p.Slot = SlotQKV
	case "self_attn.k_proj.weight":
		p.Slot, p.Row = SlotQKV, qd
	case "self_attn.v_proj.weight":
		p.Slot, p.Row = SlotQKV, qd+kvd
	case "self_attn.o_proj.weight":
		p.Slot = SlotO
	case "mlp.gate_proj.weight":
		p.Slot = SlotGateUp
	case "mlp.up_proj.weight":
		p.Slot, p.Row = SlotGateUp, inter
	case "mlp.down_proj.weight":
		p.Slot = SlotDown
	case "self_attn.q_proj.bias":
		p.Slot = SlotQKVBias
	case "self_attn.k_proj.bias":
		p.Slot, p.Row = SlotQKVBias, qd
	case "self_attn.v_proj.bias":
		p.Slot, p.Row = SlotQKVBias, qd+kvd
	case "self_attn.o_proj.bias":
		p.Slot = SlotOBias
	case "self_attn.q_norm.weight":
		p.Slot = SlotQNorm
	case "self_attn.k_norm.weight":
		p.Slot = SlotKNorm
	default:
		return Place{}, false
	}
	switch p.Slot {
	case SlotQKVBias:
		return p, c.QKVBias()
	case SlotOBias:
		return p, c.OBias()
	case SlotQNorm, SlotKNorm:
		return p, c.QKNorm()
	}
	return p, true
}

// Weights are a decoder's weights as handles of a backend's weight type W
// (a packed CPU matrix, a device buffer, a trainable parameter; a bf16 or
// int8 matrix is one more W). Optional weights are W's zero value when
// the architecture has none.
type Weights[W comparable] struct {
	Embed, Norm, LMHead W // LMHead may be Embed's storage when tied
	Layers              []LayerWeights[W]
}

// LayerWeights are one decoder layer's weights (see the slots).
type LayerWeights[W comparable] struct {
	AttnNorm, MLPNorm W
	QKV, QKVBias      W
	O, OBias          W
	QNorm, KNorm      W
	GateUp, Down      W
}

// NewWeights allocates every weight cfg has through alloc, which gets the
// slot and its shape (rows, cols; cols is 1 for vectors). When the
// embedding is tied, LMHead is left zero for the caller to point at the
// embedding's storage in its own form. On error the weights allocated so
// far are returned with it, for the caller to free.
func NewWeights[W comparable](c *Config, alloc func(s Slot, rows, cols int) (W, error)) (*Weights[W], error) {
	w := &Weights[W]{Layers: make([]LayerWeights[W], c.NumHiddenLayers)}
	for _, s := range c.slots() {
		var err error
		if *w.At(s.at), err = alloc(s.at.Slot, s.rows, s.cols); err != nil {
			return w, err
		}
	}
	return w, nil
}

// slotShape is one weight the decoder has: its place (Row 0) and shape
// (cols is 1 for vectors).
type slotShape struct {
	at         Place
	rows, cols int
}

// slots lists every weight cfg has, in the order NewWeights allocates
// them: the embedding, the final norm, an untied head, then each layer's.
func (c *Config) slots() []slotShape {
	H, hd, inter, V := c.HiddenSize, c.HeadDim, c.IntermediateSize, c.VocabSize
	qd, kvd := c.NumAttentionHeads*hd, c.NumKeyValueHeads*hd
	out := []slotShape{{Place{Layer: -1, Slot: SlotEmbed}, V, H}, {Place{Layer: -1, Slot: SlotNorm}, H, 1}}
	if !c.TieWordEmbeddings {
		out = append(out, slotShape{Place{Layer: -1, Slot: SlotLMHead}, V, H})
	}
	for i := 0; i < c.NumHiddenLayers; i++ {
		add := func(s Slot, rows, cols int) { out = append(out, slotShape{Place{Layer: i, Slot: s}, rows, cols}) }
		add(SlotAttnNorm, H, 1)
		add(SlotMLPNorm, H, 1)
		add(SlotQKV, qd+2*kvd, H)
		add(SlotO, H, qd)
		add(SlotGateUp, 2*inter, H)
		add(SlotDown, H, inter)
		if c.QKVBias() {
			add(SlotQKVBias, qd+2*kvd, 1)
		}
		if c.OBias() {
			add(SlotOBias, H, 1)
		}
		if c.QKNorm() {
			add(SlotQNorm, hd, 1)
			add(SlotKNorm, hd, 1)
		}
	}
	return out
}

// At returns the handle at a place (from Config.Place).
func (w *Weights[W]) At(p Place) *W {
	if p.Layer < 0 {
		switch p.Slot {
		case SlotEmbed:
			return &w.Embed
		case SlotNorm:
			return &w.Norm
		default:
			return &w.LMHead
		}
	}
	l := &w.Layers[p.Layer]
	return [...]*W{SlotAttnNorm: &l.AttnNorm, SlotMLPNorm: &l.MLPNorm, SlotQKV: &l.QKV, SlotQKVBias: &l.QKVBias,
		SlotO: &l.O, SlotOBias: &l.OBias, SlotQNorm: &l.QNorm, SlotKNorm: &l.KNorm, SlotGateUp: &l.GateUp,
		SlotDown: &l.Down}[p.Slot]
}

// Each calls f on every handle, set or not (to free them).
func (w *Weights[W]) Each(f func(*W)) {
	f(&w.Embed)
	f(&w.Norm)
	f(&w.LMHead)
	for i := range w.Layers {
		l := &w.Layers[i]
		for _, p := range []*W{&l.AttnNorm, &l.MLPNorm, &l.QKV, &l.QKVBias, &l.O, &l.OBias, &l.QNorm, &l.KNorm, &l.GateUp, &l.Down} {
			f(p)
		}
	}
}

// LayerActs are the activations of one layer for a batch of T tokens, all
// row-major [T][width]. An inference backend hands out the same buffers
// for every layer and lets in-place steps alias (Mid and Out are the
// residual stream itself, QN is Q); a training backend hands out fresh
// ones and keeps them for the backward pass.
type LayerActs[X any] struct {
	H1      X // attention RMSNorm of the residual stream [T][hidden]
	QKV     X // fused projection [T][q+k+v]
	Q, K, V X // its three parts [T][heads*hd], [T][kvHeads*hd] ×2
	QN, KN  X // Q and K after QK-norm (Qwen3; unused otherwise)
	Att     X // attention output [T][heads*hd]
	Proj    X // output projection [T][hidden]
	Mid     X // residual stream after attention [T][hidden]
	H2      X // MLP RMSNorm [T][hidden]
	GateUp  X // fused gate|up projection [T][2*inter]
	Act     X // SwiGLU [T][inter]
	Down    X // down projection [T][hidden]
	Out     X // residual stream after the layer [T][hidden]
}

// HeadActs are the output head's activations over the rows whose logits
// are wanted.
type HeadActs[X any] struct {
	Rows   X // the residual stream's wanted rows [rows][hidden]
	Norm   X // their final RMSNorm [rows][hidden]
	Logits X // [rows][vocab]
}

// Ops are the operations Decode runs, over a backend's activation type X
// and weight type W, for one batch whose tokens (and positions, cache
// slots) the backend holds. Widths come from the operands: a backend
// knows the batch's token count, and a weight knows its shape. Ops do not
// return errors: a backend that can fail (a device launch) keeps the
// first error and skips the rest of the pass.
type Ops[X any, W comparable] interface {
	// Stream returns the residual stream buffer the embedding writes [T][hidden].
	Stream() X
	// Layer returns layer li's activation buffers.
	Layer(li int) *LayerActs[X]
	// Head returns the output head's buffers; last is the final stream.
	Head(last X) *HeadActs[X]

	// Embed writes the table rows of the batch's token ids to dst.
	Embed(dst X, table W)
	// RMSNorm normalizes each row of x (rows as wide as w) into dst;
	// dst may be x.
	RMSNorm(dst, x X, w W)
	// MatMul writes dst = x·wᵀ (+ bias unless bias is zero).
	MatMul(dst, x X, w W, bias W)
	// Split copies the q, k and v columns of the fused projection out.
	Split(q, k, v, qkv X)
	// RoPE rotates each of the heads of every row of x in place at the
	// tokens' positions.
	RoPE(x X, heads int)
	// Attend writes causal attention of q over layer li's keys and values
	// (the batch's k and v and, for inference, the cached prefix) to dst.
	Attend(dst, q, k, v X, li int)
	// Add writes dst = a + b; dst may be a.
	Add(dst, a, b X)
	// SwiGLU writes silu(gate)·up of each fused gate|up row to dst.
	SwiGLU(dst, gateUp X)
	// SelectRows copies the rows whose logits are wanted to dst; dst may
	// be x when all are.
	SelectRows(dst, x X)
}

// Decode runs the decoder over the batch o holds and returns the head's
// activations (the logits in Logits). It is the architecture: Llama with
// Qwen2's q/k/v bias, Qwen3's QK-norm and an optional o_proj bias, pre-norm
// residual blocks, rotary positions, SwiGLU MLP.
func Decode[X any, W comparable](o Ops[X, W], c *Config, w *Weights[W]) *HeadActs[X] {
	var none W
	x := o.Stream()
	o.Embed(x, w.Embed)
	for li := range w.Layers {
		l, a := &w.Layers[li], o.Layer(li)
		// Attention block.
		o.RMSNorm(a.H1, x, l.AttnNorm)
		o.MatMul(a.QKV, a.H1, l.QKV, l.QKVBias)
		o.Split(a.Q, a.K, a.V, a.QKV)
		q, k := a.Q, a.K
		if c.QKNorm() { // per head: the weights are headDim wide
			o.RMSNorm(a.QN, a.Q, l.QNorm)
			o.RMSNorm(a.KN, a.K, l.KNorm)
			q, k = a.QN, a.KN
		}
		o.RoPE(q, c.NumAttentionHeads)
		o.RoPE(k, c.NumKeyValueHeads)
		o.Attend(a.Att, q, k, a.V, li)
		o.MatMul(a.Proj, a.Att, l.O, l.OBias)
		o.Add(a.Mid, x, a.Proj)
		// MLP block.
		o.RMSNorm(a.H2, a.Mid, l.MLPNorm)
		o.MatMul(a.GateUp, a.H2, l.GateUp, none)
		o.SwiGLU(a.Act, a.GateUp)
		o.MatMul(a.Down, a.Act, l.Down, none)
		o.Add(a.Out, a.Mid, a.Down)
		x = a.Out
	}
	h := o.Head(x)
	o.SelectRows(h.Rows, x)
	o.RMSNorm(h.Norm, h.Rows, w.Norm)
	o.MatMul(h.Logits, h.Norm, w.LMHead, none)
	return h
}
