package kernels

/*
#include "kernels.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"unsafe"
)

// BF16 is a weight matrix W[N][K] of bfloat16 values, row-major: the
// layout of a Hugging Face checkpoint, so a BF16 tensor is used as read
// (fused matrices such as q|k|v are consecutive row ranges of one BF16).
type BF16 struct {
	N, K int
	Data []uint16 // N*K values, the upper halves of float32s
}

// NewBF16 allocates a zero n×k bf16 matrix.
func NewBF16(n, k int) *BF16 {
	return &BF16{N: n, K: k, Data: make([]uint16, n*k)}
}

// Row returns row i's bf16 values.
func (w *BF16) Row(i int) []uint16 { return w.Data[i*w.K : (i+1)*w.K] }

// RowFloat32 widens row i into dst (len K): an embedding lookup.
func (w *BF16) RowFloat32(dst []float32, i int) {
	if len(dst) != w.K || i < 0 || i >= w.N {
		panic(fmt.Sprintf("kernels: BF16.RowFloat32: row %d of %d into %d values for K=%d", i, w.N, len(dst), w.K))
	}
	if w.K == 0 {
		return
	}
	C.agl_bf16_to_f32(u16ptr(w.Data[i*w.K:]), fptr(dst), C.int64_t(w.K))
}

// Bytes is the memory the matrix holds.
func (w *BF16) Bytes() int64 { return 2 * int64(len(w.Data)) }

// ToBF16 rounds src to bfloat16 (nearest even, as PyTorch's
// tensor.to(torch.bfloat16)) into dst.
func ToBF16(dst []uint16, src []float32) {
	if len(dst) != len(src) {
		panic("kernels: ToBF16: length mismatch")
	}
	if len(src) == 0 {
		return
	}
	C.agl_f32_to_bf16(fptr(src), u16ptr(dst), C.int64_t(len(src)))
}

// FromBF16 widens src into dst exactly.
func FromBF16(dst []float32, src []uint16) {
	if len(dst) != len(src) {
		panic("kernels: FromBF16: length mismatch")
	}
	if len(src) == 0 {
		return
	}
	C.agl_bf16_to_f32(u16ptr(src), fptr(dst), C.int64_t(len(src)))
}

func u16ptr(s []uint16) *C.uint16_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.uint16_t)(unsafe.Pointer(&s[0]))
}

// bf16Scratch holds the bf16 rows for rounded activations, pooled:
// prefill rounds megabytes per call and decode calls hundreds of times per
// token.
var bf16Scratch sync.Pool

// bf16Rows is rows per work item of MatMulBF16: a multiple of every
// level's tile height, and enough rows (16 KB of weights at K=1024) that
// handing out an item costs little next to computing it.
const bf16Rows = 8

// MatMulBF16 computes y[t][n] = Σ_k bf16(x[t][k])·W[n][k] + bias[n] for t
// tokens: the activations are rounded to bfloat16 (as vdpbf16ps needs)
// and every product is accumulated in float32. At level AVX512BF16 it runs
// on vdpbf16ps; the other levels emulate the same lanes, so every level,
// batch composition and thread count gives the same bits (see kernels.h).
func (c *CPU) MatMulBF16(y, x []float32, t int, w *BF16, bias []float32) {
	if len(x) < t*w.K || len(y) < t*w.N || (bias != nil && len(bias) != w.N) || len(w.Data) != w.N*w.K {
		panic(fmt.Sprintf("kernels: MatMulBF16: x %d, y %d, bias %d, data %d for t=%d N=%d K=%d", len(x), len(y), len(bias), len(w.Data), t, w.N, w.K))
	}
	if t == 0 || w.N == 0 {
		return
	}
	if c.level >= AVX512BF16 && t >= bf16ManyTokens && w.K > 0 {
		c.matMulBF16Many(y, x, t, w, bias)
		return
	}
	ldx := (w.K + 31) / 32 * 32
	need := t * ldx
	var xb []uint16
	if p, ok := bf16Scratch.Get().(*[]uint16); ok && cap(*p) >= need {
		xb = (*p)[:need]
		defer bf16Scratch.Put(p)
	} else {
		xb = make([]uint16, need, max(need, 4096))
		defer bf16Scratch.Put(&xb)
	}
	if ldx > 0 {
		C.agl_bf16_round(fptr(x), C.int64_t(t), C.int64_t(w.K), C.int64_t(ldx), u16ptr(xb))
	}
	groups := (w.N + bf16Rows - 1) / bf16Rows
	c.parallelChunks(groups, func(lo, hi int) {
		C.agl_gemm_bf16(C.int(c.level), u16ptr(xb), C.int64_t(t), C.int64_t(w.K), C.int64_t(ldx), u16ptr(w.Data),
			C.int64_t(w.N), fptr(bias), fptr(y), C.int64_t(lo*bf16Rows), C.int64_t(min(hi*bf16Rows, w.N)))
	})
}

// bf16ManyTokens is the fewest tokens for which MatMulBF16 at AVX512BF16
// takes agl_gemm_bf16_many (rows in the vector lanes, weights repacked per
// panel) instead of the tiles: the repacking costs about as much as
// computing 40–50 tokens, so below that the tiles are faster. Both give
// the same bits, so this only moves time.
const bf16ManyTokens = 48

// bf16Acts holds packed activations and bf16Panels per-panel weight
// scratch, pooled like bf16Scratch; two pools, because one would hand a
// panel's buffer to the activations (too small: dropped, a fresh one of
// megabytes allocated) and the activations' to a panel on every call.
var bf16Acts, bf16Panels sync.Pool

func getWords(pool *sync.Pool, n int) *[]uint32 {
	if p, ok := pool.Get().(*[]uint32); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]uint32, n)
	return &s
}

func u32ptr(s []uint32) *C.uint32_t { return (*C.uint32_t)(unsafe.Pointer(&s[0])) }

// matMulBF16Many is MatMulBF16 for many tokens at AVX512BF16: the
// activations are rounded and packed once (in parallel over tiles of
// tokens), then the threads take row ranges of at most one panel each
// (packed once, used for all t tokens) from a shared counter. The ranges
// are whole 16-row groups cut as evenly as the panel height allows, their
// count a multiple of the threads, so that the threads' shares come out
// equal (at the 0.6B shapes: 64 groups of o and down → 14 ranges of 4–5
// groups) where parallelChunks' pieces of a fixed size would leave one
// thread a panel more.
func (c *CPU) matMulBF16Many(y, x []float32, t int, w *BF16, bias []float32) {
	xp := getWords(&bf16Acts, int(C.agl_bf16_act_words(C.int64_t(t), C.int64_t(w.K))))
	defer bf16Acts.Put(xp)
	c.parallelChunks(int(C.agl_bf16_act_tiles(C.int64_t(t))), func(lo, hi int) {
		C.agl_bf16_pack_act(fptr(x), C.int64_t(t), C.int64_t(w.K), C.int64_t(lo), C.int64_t(hi), u32ptr(*xp))
	})
	groups := (w.N + 15) / 16
	perPanel := int(C.agl_bf16_panel_rows()) / 16
	items := (groups + perPanel - 1) / perPanel
	if c.threads > 1 {
		items = min(groups, (items+c.threads-1)/c.threads*c.threads)
	}
	pw := int(C.agl_bf16_panel_words(C.int64_t(w.K)))
	f := func(lo, hi int) {
		pk := getWords(&bf16Panels, pw)
		defer bf16Panels.Put(pk)
		for i := lo; i < hi; i++ {
			r0, r1 := 16*(groups*i/items), min(16*(groups*(i+1)/items), w.N)
			C.agl_gemm_bf16_many(u32ptr(*xp), C.int64_t(t), C.int64_t(w.K), u16ptr(w.Data), C.int64_t(w.N), fptr(bias), fptr(y),
				C.int64_t(r0), C.int64_t(r1), u32ptr(*pk))
		}
	}
	if c.threads <= 1 || items <= 1 {
		f(0, items)
		return
	}
	c.crew.run(min(c.threads, items)-1, items, 1, f)
}
