package train

/*
#include "train.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

// ErrInput is wrapped by errors about bad token rows or gradient shapes.
var ErrInput = errors.New("train: bad input")

// ErrNoForward is returned by Backward when no Forward preceded it.
var ErrNoForward = errors.New("train: Backward without a preceding Forward")

// Param is one trainable tensor under its Hugging Face name, with its
// gradient (same shape, accumulated by Backward, cleared by ZeroGrad).
type Param struct {
	Name  string
	Shape []int64
	Data  []float32
	Grad  []float32
}

// Options configure a Model.
type Options struct {
	// Threads is the number of goroutines each operation is split over;
	// 0 = GOMAXPROCS.
	Threads int
	// Level caps the instruction set (nil = best detected). Lower levels
	// exist to test every kernel variant on one machine.
	Level *Level
}

type layerParams struct {
	attnNorm, mlpNorm   *Param
	q, k, v, o          *Param
	qBias, kBias, vBias *Param
	oBias               *Param
	qNorm, kNorm        *Param
	gate, up, down      *Param
}

// Model is a trainable Llama-family decoder (Llama, Qwen2 QKV bias, Qwen3
// QK-norm, tied or untied embeddings, GQA) in float32. It is not safe for
// concurrent use: Forward saves the activations that Backward consumes.
type Model struct {
	cfg     *model.Config
	cpu     cpu
	invFreq []float32
	params  []*Param // sorted by name
	byName  map[string]*Param

	embed, norm, lmHead *Param // lmHead == embed when tied
	layers              []layerParams

	acts *acts
}

// New returns a model for cfg holding copies of tensors, which must be
// exactly cfg's weights (model.Config.TensorShapes), e.g. from
// model.RandomWeights.
func New(cfg *model.Config, tensors map[string][]float32, opts Options) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level := Detect()
	if opts.Level != nil {
		if *opts.Level < Generic || *opts.Level > level {
			return nil, fmt.Errorf("train: level %v not supported by this CPU (best %v)", *opts.Level, level)
		}
		level = *opts.Level
	}
	threads := opts.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	m := &Model{cfg: cfg, cpu: cpu{level: level, threads: threads}, invFreq: cfg.InvFreq(), byName: map[string]*Param{}}
	shapes := cfg.TensorShapes()
	for _, name := range cfg.TensorNames() {
		v, ok := tensors[name]
		if !ok {
			return nil, fmt.Errorf("%w: missing tensor %q", model.ErrWeights, name)
		}
		n := int64(1)
		for _, d := range shapes[name] {
			n *= d
		}
		if int64(len(v)) != n {
			return nil, fmt.Errorf("%w: tensor %q has %d values, shape %v needs %d", model.ErrWeights, name, len(v), shapes[name], n)
		}
		p := &Param{Name: name, Shape: slices.Clone(shapes[name]), Data: slices.Clone(v), Grad: make([]float32, n)}
		m.params = append(m.params, p)
		m.byName[name] = p
	}
	for name := range tensors {
		if _, ok := shapes[name]; !ok {
			return nil, fmt.Errorf("%w: unexpected tensor %q for a %s model", model.ErrWeights, name, cfg.ModelType)
		}
	}
	m.embed, m.norm = m.byName["model.embed_tokens.weight"], m.byName["model.norm.weight"]
	m.lmHead = m.embed
	if !cfg.TieWordEmbeddings {
		m.lmHead = m.byName["lm_head.weight"]
	}
	m.layers = make([]layerParams, cfg.NumHiddenLayers)
	for i := range m.layers {
		p := "model.layers." + strconv.Itoa(i) + "."
		g := func(s string) *Param { return m.byName[p+s] } // nil when absent
		m.layers[i] = layerParams{
			attnNorm: g("input_layernorm.weight"), mlpNorm: g("post_attention_layernorm.weight"),
			q: g("self_attn.q_proj.weight"), k: g("self_attn.k_proj.weight"), v: g("self_attn.v_proj.weight"),
			o: g("self_attn.o_proj.weight"), qBias: g("self_attn.q_proj.bias"), kBias: g("self_attn.k_proj.bias"),
			vBias: g("self_attn.v_proj.bias"), oBias: g("self_attn.o_proj.bias"),
			qNorm: g("self_attn.q_norm.weight"), kNorm: g("self_attn.k_norm.weight"),
			gate: g("mlp.gate_proj.weight"), up: g("mlp.up_proj.weight"), down: g("mlp.down_proj.weight"),
		}
	}
	return m, nil
}

// Load reads a Hugging Face model directory (config.json and
// model.safetensors or a sharded index; F32/F16/BF16 weights become
// float32).
func Load(dir string, opts Options) (*Model, error) {
	cfg, set, err := model.OpenCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	defer set.Close()
	names := cfg.TensorNames()
	tensors := make(map[string][]float32, len(names))
	for _, name := range names {
		v, _, err := set.Float32(name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", model.ErrWeights, dir, err)
		}
		tensors[name] = v
	}
	return New(cfg, tensors, opts)
}

// Config returns the model's configuration.
func (m *Model) Config() *model.Config { return m.cfg }

// Level is the instruction-set level the kernels run at.
func (m *Model) Level() Level { return m.cpu.level }

// Params returns every trainable tensor, sorted by name. The slices are the
// model's own: optimizers update Data and read Grad in place.
func (m *Model) Params() []*Param { return m.params }

// Param returns one tensor by its Hugging Face name.
func (m *Model) Param(name string) (*Param, bool) {
	p, ok := m.byName[name]
	return p, ok
}

// ZeroGrad clears every gradient.
func (m *Model) ZeroGrad() {
	for _, p := range m.params {
		clear(p.Grad)
	}
}

// Tensors returns copies of the weights by name, for model.WriteDir.
func (m *Model) Tensors() map[string][]float32 {
	out := make(map[string][]float32, len(m.params))
	for _, p := range m.params {
		out[p.Name] = slices.Clone(p.Data)
	}
	return out
}

// Weights returns a copy of the weights as an in-process weight update for
// an engine (server.WeightUpdater).
func (m *Model) Weights(version int64) server.Weights {
	w := server.Weights{Version: version}
	for _, p := range m.params {
		w.Tensors = append(w.Tensors, server.Tensor{Name: p.Name, Shape: slices.Clone(p.Shape), Data: slices.Clone(p.Data)})
	}
	return w
}

// NumParams is the number of trainable weights.
func (m *Model) NumParams() int64 { return m.cfg.NumParams() }

// layerActs are one layer's saved activations, all [T][width].
type layerActs struct {
	xin, h1      []float32 // residual input, its norm
	rstd1, rstd2 []float32 // [T]
	qPre, kPre   []float32 // projections (+bias), before QK-norm
	rstdQ, rstdK []float32 // [T*heads] (QK-norm only)
	q, k, v      []float32 // attention inputs (after norm and rotation)
	att          []float32 // softmax probabilities, per row [heads][len][len]
	attOut       []float32
	xmid, h2     []float32
	g, u, act    []float32
}

type acts struct {
	rows    [][]int32
	offs    []int   // token offset of each row
	attOffs []int   // offset of each row in layerActs.att
	ids     []int32 // all tokens
	pos     []int32 // position of each token in its row
	target  []int32 // next token in the row, -1 for a row's last token
	layers  []layerActs
	xL      []float32 // residual stream after the last layer
	xf      []float32 // final norm
	rstdF   []float32
	logits  []float32
	lse     []float32
	logp    []float32
}

func (m *Model) check(rows [][]int32) (int, error) {
	if len(rows) == 0 {
		return 0, fmt.Errorf("%w: no rows", ErrInput)
	}
	T := 0
	for i, r := range rows {
		if len(r) == 0 {
			return 0, fmt.Errorf("%w: row %d is empty", ErrInput, i)
		}
		if len(r) > m.cfg.MaxPositionEmbeddings {
			return 0, fmt.Errorf("%w: row %d has %d tokens, more than max_position_embeddings %d", ErrInput, i, len(r), m.cfg.MaxPositionEmbeddings)
		}
		for j, id := range r {
			if id < 0 || int(id) >= m.cfg.VocabSize {
				return 0, fmt.Errorf("%w: row %d token %d: id %d outside the vocabulary of %d", ErrInput, i, j, id, m.cfg.VocabSize)
			}
		}
		T += len(r)
	}
	return T, nil
}

// Forward runs the model over whole token rows (each row is one sequence
// starting at position 0; rows may differ in length) and returns per-token
// log-probabilities: out[r][j] = log p(rows[r][j+1] | rows[r][:j+1]), one
// fewer than the row's tokens. It saves the activations Backward needs.
func (m *Model) Forward(rows [][]int32) ([][]float32, error) {
	T, err := m.check(rows)
	if err != nil {
		return nil, err
	}
	c := m.cfg
	H, hd, nh, nkv, inter, V := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads, c.IntermediateSize, c.VocabSize
	qd, kvd := nh*hd, nkv*hd
	eps := C.float(c.RMSNormEps)
	lvl := C.int(m.cpu.level)
	a := &acts{rows: rows}
	attN := 0
	for _, r := range rows {
		a.offs = append(a.offs, len(a.ids))
		a.attOffs = append(a.attOffs, attN)
		attN += nh * len(r) * len(r)
		a.ids = append(a.ids, r...)
		for j := range r {
			a.pos = append(a.pos, int32(j))
			if j+1 < len(r) {
				a.target = append(a.target, r[j+1])
			} else {
				a.target = append(a.target, -1)
			}
		}
	}
	x := make([]float32, T*H)
	C.agt_embedding_forward(fptr(x), fptr(m.embed.Data), iptr(a.ids), C.int64_t(T), C.int64_t(H))
	a.layers = make([]layerActs, len(m.layers))
	for li := range m.layers {
		l, s := &m.layers[li], &a.layers[li]
		s.xin = x
		s.h1, s.rstd1 = make([]float32, T*H), make([]float32, T)
		C.agt_rmsnorm_forward(lvl, fptr(s.h1), fptr(s.rstd1), fptr(x), fptr(l.attnNorm.Data), C.int64_t(T), C.int64_t(H), eps)
		s.qPre, s.kPre, s.v = m.linear(s.h1, T, l.q, l.qBias), m.linear(s.h1, T, l.k, l.kBias), m.linear(s.h1, T, l.v, l.vBias)
		s.q, s.k = slices.Clone(s.qPre), slices.Clone(s.kPre)
		if l.qNorm != nil {
			s.rstdQ, s.rstdK = make([]float32, T*nh), make([]float32, T*nkv)
			C.agt_rmsnorm_forward(lvl, fptr(s.q), fptr(s.rstdQ), fptr(s.qPre), fptr(l.qNorm.Data), C.int64_t(T*nh), C.int64_t(hd), eps)
			C.agt_rmsnorm_forward(lvl, fptr(s.k), fptr(s.rstdK), fptr(s.kPre), fptr(l.kNorm.Data), C.int64_t(T*nkv), C.int64_t(hd), eps)
		}
		C.agt_rope_forward(fptr(s.q), C.int64_t(T), C.int64_t(nh), C.int64_t(hd), C.int64_t(qd), iptr(a.pos), fptr(m.invFreq))
		C.agt_rope_forward(fptr(s.k), C.int64_t(T), C.int64_t(nkv), C.int64_t(hd), C.int64_t(kvd), iptr(a.pos), fptr(m.invFreq))
		s.att, s.attOut = make([]float32, attN), make([]float32, T*qd)
		scale := C.float(1 / math.Sqrt(float64(hd)))
		maxLen := 0
		for _, r := range rows {
			maxLen = max(maxLen, len(r))
		}
		m.cpu.parallel(len(rows)*nh, func(lo, hi int) {
			scratch := make([]float32, maxLen*hd)
			for it := lo; it < hi; it++ {
				r, h := it/nh, it%nh
				o, n := a.offs[r], len(rows[r])
				C.agt_attention_forward(lvl, fptr(s.attOut[o*qd:]), fptr(s.att[a.attOffs[r]:]), fptr(s.q[o*qd:]),
					fptr(s.k[o*kvd:]), fptr(s.v[o*kvd:]), C.int64_t(n), C.int64_t(nh), C.int64_t(nkv), C.int64_t(hd),
					scale, C.int64_t(h), C.int64_t(h+1), fptr(scratch))
			}
		})
		o := m.linear(s.attOut, T, l.o, l.oBias)
		s.xmid = make([]float32, T*H)
		C.agt_residual_forward(fptr(s.xmid), fptr(x), fptr(o), C.int64_t(T*H))
		s.h2, s.rstd2 = make([]float32, T*H), make([]float32, T)
		C.agt_rmsnorm_forward(lvl, fptr(s.h2), fptr(s.rstd2), fptr(s.xmid), fptr(l.mlpNorm.Data), C.int64_t(T), C.int64_t(H), eps)
		s.g, s.u = m.linear(s.h2, T, l.gate, nil), m.linear(s.h2, T, l.up, nil)
		s.act = make([]float32, T*inter)
		C.agt_swiglu_forward(lvl, fptr(s.act), fptr(s.g), fptr(s.u), C.int64_t(T*inter))
		d := m.linear(s.act, T, l.down, nil)
		x = make([]float32, T*H)
		C.agt_residual_forward(fptr(x), fptr(s.xmid), fptr(d), C.int64_t(T*H))
	}
	a.xL = x
	a.xf, a.rstdF = make([]float32, T*H), make([]float32, T)
	C.agt_rmsnorm_forward(lvl, fptr(a.xf), fptr(a.rstdF), fptr(x), fptr(m.norm.Data), C.int64_t(T), C.int64_t(H), eps)
	a.logits = m.linear(a.xf, T, m.lmHead, nil)
	a.lse, a.logp = make([]float32, T), make([]float32, T)
	m.cpu.parallel(T, func(lo, hi int) {
		C.agt_logprob_forward(fptr(a.logits), iptr(a.target), fptr(a.logp), fptr(a.lse), C.int64_t(V), C.int64_t(lo), C.int64_t(hi))
	})
	m.acts = a
	out := make([][]float32, len(rows))
	for r, row := range rows {
		out[r] = slices.Clone(a.logp[a.offs[r] : a.offs[r]+len(row)-1])
	}
	return out, nil
}

// linear returns x W^T (+ b) for T rows.
func (m *Model) linear(x []float32, T int, w, b *Param) []float32 {
	N, K := int(w.Shape[0]), int(w.Shape[1])
	y := make([]float32, T*N)
	m.cpu.gemmNT(y, x, w.Data, T, N, K, false)
	if b != nil {
		C.agt_bias_forward(fptr(y), fptr(b.Data), C.int64_t(T), C.int64_t(N))
	}
	return y
}

// linearBackward accumulates dx += dy W, dW += dy^T x and db += Σ dy.
func (m *Model) linearBackward(dx, dy, x []float32, T int, w, b *Param) {
	N, K := int(w.Shape[0]), int(w.Shape[1])
	m.cpu.gemmNNAcc(dx, dy, N, 1, w.Data, T, K, N) // dx[t][k] += Σ_n dy[t][n]·W[n][k]
	m.cpu.gemmNNAcc(w.Grad, dy, 1, N, x, N, K, T)  // dW[n][k] += Σ_t dy[t][n]·x[t][k]
	if b != nil {
		C.agt_bias_backward(fptr(b.Grad), fptr(dy), C.int64_t(T), C.int64_t(N))
	}
}

// Backward accumulates into every Param.Grad the gradient of a loss L given
// dL/dlogp for each log-probability the last Forward returned (same shape).
// Any loss that is a function of per-token log-probabilities (SFT
// cross-entropy, policy-gradient surrogates) reduces to this.
func (m *Model) Backward(dlogp [][]float32) error {
	a := m.acts
	if a == nil {
		return ErrNoForward
	}
	if len(dlogp) != len(a.rows) {
		return fmt.Errorf("%w: %d gradient rows for %d forward rows", ErrInput, len(dlogp), len(a.rows))
	}
	T := len(a.ids)
	dl := make([]float32, T)
	for r, row := range a.rows {
		if len(dlogp[r]) != len(row)-1 {
			return fmt.Errorf("%w: gradient row %d has %d values, want %d", ErrInput, r, len(dlogp[r]), len(row)-1)
		}
		for j, g := range dlogp[r] {
			if math.IsNaN(float64(g)) || math.IsInf(float64(g), 0) {
				return fmt.Errorf("%w: gradient row %d position %d is %v", ErrInput, r, j, g)
			}
		}
		copy(dl[a.offs[r]:], dlogp[r])
	}
	c := m.cfg
	H, hd, nh, nkv, inter, V := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads, c.IntermediateSize, c.VocabSize
	qd, kvd := nh*hd, nkv*hd
	lvl := C.int(m.cpu.level)

	dlogits := make([]float32, T*V)
	m.cpu.parallel(T, func(lo, hi int) {
		C.agt_logprob_backward(fptr(dlogits), fptr(dl), fptr(a.logits), iptr(a.target), fptr(a.lse), C.int64_t(V), C.int64_t(lo), C.int64_t(hi))
	})
	dxf := make([]float32, T*H)
	m.linearBackward(dxf, dlogits, a.xf, T, m.lmHead, nil)
	dx := make([]float32, T*H) // gradient of the residual stream
	C.agt_rmsnorm_backward(lvl, fptr(dx), fptr(m.norm.Grad), fptr(dxf), fptr(a.xL), fptr(m.norm.Data), fptr(a.rstdF), C.int64_t(T), C.int64_t(H))

	maxLen := 0
	for _, r := range a.rows {
		maxLen = max(maxLen, len(r))
	}
	for li := len(m.layers) - 1; li >= 0; li-- {
		l, s := &m.layers[li], &a.layers[li]
		// MLP branch: x = xmid + down(swiglu(gate(h2), up(h2))).
		dact := make([]float32, T*inter)
		m.linearBackward(dact, dx, s.act, T, l.down, nil)
		dg, du := make([]float32, T*inter), make([]float32, T*inter)
		C.agt_swiglu_backward(lvl, fptr(dg), fptr(du), fptr(dact), fptr(s.g), fptr(s.u), C.int64_t(T*inter))
		dh2 := make([]float32, T*H)
		m.linearBackward(dh2, dg, s.h2, T, l.gate, nil)
		m.linearBackward(dh2, du, s.h2, T, l.up, nil)
		C.agt_rmsnorm_backward(lvl, fptr(dx), fptr(l.mlpNorm.Grad), fptr(dh2), fptr(s.xmid), fptr(l.mlpNorm.Data), fptr(s.rstd2), C.int64_t(T), C.int64_t(H))
		// Attention branch: xmid = xin + o(attention(q, k, v)).
		dattOut := make([]float32, T*qd)
		m.linearBackward(dattOut, dx, s.attOut, T, l.o, l.oBias)
		dq, dk, dv := make([]float32, T*qd), make([]float32, T*kvd), make([]float32, T*kvd)
		scale := C.float(1 / math.Sqrt(float64(hd)))
		m.cpu.parallel(len(a.rows)*nkv, func(lo, hi int) {
			scratch := make([]float32, maxLen*(hd+1))
			for it := lo; it < hi; it++ {
				r, g := it/nkv, it%nkv
				o, n := a.offs[r], len(a.rows[r])
				C.agt_attention_backward(lvl, fptr(dq[o*qd:]), fptr(dk[o*kvd:]), fptr(dv[o*kvd:]), fptr(dattOut[o*qd:]),
					fptr(s.att[a.attOffs[r]:]), fptr(s.q[o*qd:]), fptr(s.k[o*kvd:]), fptr(s.v[o*kvd:]),
					C.int64_t(n), C.int64_t(nh), C.int64_t(nkv), C.int64_t(hd), scale, C.int64_t(g), C.int64_t(g+1), fptr(scratch))
			}
		})
		C.agt_rope_backward(fptr(dq), C.int64_t(T), C.int64_t(nh), C.int64_t(hd), C.int64_t(qd), iptr(a.pos), fptr(m.invFreq))
		C.agt_rope_backward(fptr(dk), C.int64_t(T), C.int64_t(nkv), C.int64_t(hd), C.int64_t(kvd), iptr(a.pos), fptr(m.invFreq))
		if l.qNorm != nil {
			dqPre, dkPre := make([]float32, T*qd), make([]float32, T*kvd)
			C.agt_rmsnorm_backward(lvl, fptr(dqPre), fptr(l.qNorm.Grad), fptr(dq), fptr(s.qPre), fptr(l.qNorm.Data), fptr(s.rstdQ), C.int64_t(T*nh), C.int64_t(hd))
			C.agt_rmsnorm_backward(lvl, fptr(dkPre), fptr(l.kNorm.Grad), fptr(dk), fptr(s.kPre), fptr(l.kNorm.Data), fptr(s.rstdK), C.int64_t(T*nkv), C.int64_t(hd))
			dq, dk = dqPre, dkPre
		}
		dh1 := make([]float32, T*H)
		m.linearBackward(dh1, dq, s.h1, T, l.q, l.qBias)
		m.linearBackward(dh1, dk, s.h1, T, l.k, l.kBias)
		m.linearBackward(dh1, dv, s.h1, T, l.v, l.vBias)
		C.agt_rmsnorm_backward(lvl, fptr(dx), fptr(l.attnNorm.Grad), fptr(dh1), fptr(s.xin), fptr(l.attnNorm.Data), fptr(s.rstd1), C.int64_t(T), C.int64_t(H))
	}
	C.agt_embedding_backward(fptr(m.embed.Grad), fptr(dx), iptr(a.ids), C.int64_t(T), C.int64_t(H))
	return nil
}
