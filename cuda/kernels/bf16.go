package kernels

/*
#include "par.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// BF16 is a weight matrix W[N][K] of bfloat16 values, row-major: the
// layout of a Hugging Face checkpoint, so a BF16 tensor is used as read
// (fused matrices such as q|k|v are consecutive row ranges of one BF16).
//
// A BF16 either owns its values in Data (NewBF16, or a literal with Data
// set) or is parted (NewBF16Parts): its rows are those of several row
// blocks in order, each its own slice used in place, so that a fused
// matrix can be served from the checkpoint's tensors where they lie, for
// example in a read-only memory mapping of the file. A parted matrix has
// Data nil and is read-only: its memory may not be writable and is never
// written by this package. Row, RowFloat32, Bytes and MatMulBF16 work on
// both kinds with the same results (MatMulBF16 gives the same bits);
// Parted tells them apart and Own turns a parted matrix into an owned copy
// that may then be written.
type BF16 struct {
	N, K int
	Data []uint16 // N*K values, the upper halves of float32s; nil when parted

	// parts are the row blocks of a parted matrix, in row order, none
	// empty; nil for an owned one.
	parts []bf16Part
}

// bf16Part is a row block of a parted BF16: rows [row0, row0+len(data)/K).
type bf16Part struct {
	row0 int
	data []uint16
}

// NewBF16 allocates a zero n×k bf16 matrix.
func NewBF16(n, k int) *BF16 {
	return &BF16{N: n, K: k, Data: make([]uint16, n*k)}
}

// NewBF16Parts returns the n×k matrix whose rows are the rows of parts in
// order, n = Σ len(part)/k: each part is a row-major block of whole rows,
// used in place (not copied), for example one tensor of a fused q|k|v
// matrix. The matrix is read-only (see BF16); the parts must stay valid
// and unchanged while it is used. Empty parts are skipped. It panics if k
// is negative or a part's length is not a multiple of k (with k = 0 every
// part must be empty: rows of no values cannot be counted, and the
// matrix is 0×0), a programming error as a wrong size for NewBF16.
func NewBF16Parts(k int, parts ...[]uint16) *BF16 {
	if k < 0 {
		panic(fmt.Sprintf("kernels: NewBF16Parts: k=%d", k))
	}
	w := &BF16{K: k, parts: make([]bf16Part, 0, len(parts))}
	for i, p := range parts {
		if len(p) == 0 {
			continue
		}
		if k == 0 || len(p)%k != 0 {
			panic(fmt.Sprintf("kernels: NewBF16Parts: part %d has %d values, not whole rows of k=%d", i, len(p), k))
		}
		w.parts = append(w.parts, bf16Part{row0: w.N, data: p})
		w.N += len(p) / k
	}
	return w
}

// Parted reports whether w is parted (made by NewBF16Parts and not since
// owned): read-only, with Data nil.
func (w *BF16) Parted() bool { return w.parts != nil }

// Own makes w an owned matrix: a parted matrix's rows are copied into a
// freshly allocated Data and the parts dropped, so that the values may be
// written (a weight update) and the parts' memory released. For an owned
// matrix it does nothing. It changes w, so it must not run while another
// goroutine uses w.
func (w *BF16) Own() {
	if w.parts == nil {
		return
	}
	data := make([]uint16, w.N*w.K)
	for _, p := range w.parts {
		copy(data[p.row0*w.K:], p.data)
	}
	w.Data, w.parts = data, nil
}

// values is the number of values w holds: len(Data), or the parts' total.
func (w *BF16) values() int {
	if w.parts == nil {
		return len(w.Data)
	}
	n := 0
	for _, p := range w.parts {
		n += len(p.data)
	}
	return n
}

// part returns the index of the part holding row i of a parted matrix.
func (w *BF16) part(i int) int {
	j := len(w.parts) - 1
	for j > 0 && w.parts[j].row0 > i {
		j--
	}
	return j
}

// Row returns row i's bf16 values (read-only for a parted matrix).
func (w *BF16) Row(i int) []uint16 {
	if w.parts == nil {
		return w.Data[i*w.K : (i+1)*w.K]
	}
	if i < 0 || i >= w.N {
		panic(fmt.Sprintf("kernels: BF16.Row: row %d of %d", i, w.N))
	}
	p := w.parts[w.part(i)]
	r := i - p.row0
	return p.data[r*w.K : (r+1)*w.K]
}

// RowFloat32 widens row i into dst (len K): an embedding lookup.
func (w *BF16) RowFloat32(dst []float32, i int) {
	if len(dst) != w.K || i < 0 || i >= w.N {
		panic(fmt.Sprintf("kernels: BF16.RowFloat32: row %d of %d into %d values for K=%d", i, w.N, len(dst), w.K))
	}
	if w.K == 0 {
		return
	}
	C.agl_bf16_to_f32(u16ptr(w.Row(i)), fptr(dst), C.int64_t(w.K))
}

// Bytes is the memory the matrix holds (for a parted matrix, the parts'
// memory: 2·N·K bytes).
func (w *BF16) Bytes() int64 { return 2 * int64(w.values()) }

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
const bf16Rows = C.AGL_PAR_BF16_ROWS

// MatMulBF16 computes y[t][n] = Σ_k bf16(x[t][k])·W[n][k] + bias[n] for t
// tokens: the activations are rounded to bfloat16 (as vdpbf16ps needs)
// and every product is accumulated in float32. At level AVX512BF16 it runs
// on vdpbf16ps; the other levels emulate the same lanes, so every level,
// batch composition and thread count gives the same bits (see kernels.h).
func (c *CPU) MatMulBF16(y, x []float32, t int, w *BF16, bias []float32) {
	if len(x) < t*w.K || len(y) < t*w.N || (bias != nil && len(bias) != w.N) || w.values() != w.N*w.K || (w.parts != nil && w.Data != nil) {
		panic(fmt.Sprintf("kernels: MatMulBF16: x %d, y %d, bias %d, data %d (parted %v) for t=%d N=%d K=%d",
			len(x), len(y), len(bias), w.values(), w.parts != nil, t, w.N, w.K))
	}
	if t == 0 || w.N == 0 {
		return
	}
	if c.level >= AVX512BF16 && t >= bf16ManyTokens && w.K > 0 {
		c.matMulBF16Many(y, x, t, w, bias)
		return
	}
	ldx := (w.K + 31) / 32 * 32
	xb, done := roundActs(x, t, w.K, ldx)
	defer done()
	if w.parts == nil {
		c.matMulBF16Rows(xb, t, ldx, w.K, w.Data, w.N, w.N, bias, y)
		return
	}
	// Part by part: the kernel reads row r at w + r·k and writes it at
	// y[j·n + r] (bias[r]), each row on its own, so a part's rows relative
	// to its base, with y and bias moved to its first row, give the same
	// bits as one contiguous matrix.
	for _, p := range w.parts {
		c.matMulBF16Rows(xb, t, ldx, w.K, p.data, len(p.data)/w.K, w.N, biasFrom(bias, p.row0), y[p.row0:])
	}
}

// roundActs rounds t rows of k activations to bf16 rows of stride ldx
// (zero-padded) in pooled scratch; done returns the scratch to the pool.
func roundActs(x []float32, t, k, ldx int) (xb []uint16, done func()) {
	xb = pooledU16(&bf16Scratch, t*ldx)
	if ldx > 0 {
		C.agl_bf16_round(fptr(x), C.int64_t(t), C.int64_t(k), C.int64_t(ldx), u16ptr(xb))
	}
	return xb, func() { bf16Scratch.Put(&xb) }
}

// pooledU16 is n values from pool (a fresh slice when it has none large
// enough); the caller puts it back.
func pooledU16(pool *sync.Pool, n int) []uint16 {
	if p, ok := pool.Get().(*[]uint16); ok && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]uint16, n, max(n, 4096))
}

// matMulBF16Rows runs agl_gemm_bf16 over rows [0, rows) of w (row stride
// k) on the pool, in work items of AGL_PAR_BF16_ROWS rows.
func (c *CPU) matMulBF16Rows(xb []uint16, t, ldx, k int, w []uint16, rows, n int, bias, y []float32) {
	helpers, chunk := c.chunks((rows + bf16Rows - 1) / bf16Rows)
	C.agl_par_gemm_bf16(c.pool, helpers, chunk, C.int(c.level), u16ptr(xb), C.int64_t(t), C.int64_t(k),
		C.int64_t(ldx), u16ptr(w), C.int64_t(rows), C.int64_t(n), fptr(bias), fptr(y))
	runtime.KeepAlive(c)
}

// biasFrom is bias from row r on, nil without a bias.
func biasFrom(bias []float32, r int) []float32 {
	if bias == nil {
		return nil
	}
	return bias[r:]
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

// getScratch takes n elements of scratch from pool (whose buffers are all
// *[]T), or makes a new buffer when the pooled one is too small.
func getScratch[T any](pool *sync.Pool, n int) *[]T {
	if p, ok := pool.Get().(*[]T); ok && cap(*p) >= n {
		*p = (*p)[:n]
		return p
	}
	s := make([]T, n)
	return &s
}

func u32ptr(s []uint32) *C.uint32_t { return (*C.uint32_t)(unsafe.Pointer(&s[0])) }

// manyScratch rounds and packs t tokens' activations (k each) for the
// many-token kernels, in parallel over tiles of tokens, and takes pw words
// of panel scratch per thread; done returns both to their pools.
func (c *CPU) manyScratch(x []float32, t, k int) (xp, pk *[]uint32, pw int, done func()) {
	xp = getScratch[uint32](&bf16Acts, int(C.agl_bf16_act_words(C.int64_t(t), C.int64_t(k))))
	helpers, chunk := c.chunks(int(C.agl_bf16_act_tiles(C.int64_t(t))))
	C.agl_par_bf16_pack_act(c.pool, helpers, chunk, fptr(x), C.int64_t(t), C.int64_t(k), u32ptr(*xp))
	pw = int(C.agl_bf16_panel_words(C.int64_t(k)))
	pk = getScratch[uint32](&bf16Panels, c.threads*pw)
	return xp, pk, pw, func() { bf16Acts.Put(xp); bf16Panels.Put(pk) }
}

// manyItems is the number of row ranges the many-token kernels cut rows
// rows into (see matMulBF16Many).
func (c *CPU) manyItems(rows int) int {
	perPanel := int(C.agl_bf16_panel_rows()) / 16
	groups := (rows + 15) / 16
	items := (groups + perPanel - 1) / perPanel
	if c.threads > 1 {
		items = min(groups, (items+c.threads-1)/c.threads*c.threads)
	}
	return items
}

// matMulBF16Many is MatMulBF16 for many tokens at AVX512BF16: the
// activations are rounded and packed once (in parallel over tiles of
// tokens), then the threads take row ranges of at most one panel each
// (packed once, used for all t tokens) from a shared counter. The ranges
// are whole 16-row groups cut as evenly as the panel height allows, their
// count a multiple of the threads, so that the threads' shares come out
// equal (at the 0.6B shapes: 64 groups of o and down → 14 ranges of 4–5
// groups) where chunks' pieces of a fixed size would leave one
// thread a panel more.
func (c *CPU) matMulBF16Many(y, x []float32, t int, w *BF16, bias []float32) {
	xp, pk, pw, done := c.manyScratch(x, t, w.K)
	defer done()
	// Part by part, as in MatMulBF16: each row is a lane of its panel on
	// its own, so a panel cut short at a part's end (its other lanes zero)
	// gives the same bits.
	parts := w.parts
	if parts == nil {
		parts = []bf16Part{{data: w.Data}}
	}
	for _, p := range parts {
		rows := len(p.data) / w.K
		items := c.manyItems(rows)
		helpers, _ := c.chunks(items) // items are taken one at a time
		C.agl_par_gemm_bf16_many(c.pool, helpers, u32ptr(*xp), C.int64_t(t), C.int64_t(w.K), u16ptr(p.data),
			C.int64_t(rows), C.int64_t(w.N), fptr(biasFrom(bias, p.row0)), fptr(y[p.row0:]), C.int64_t(items),
			u32ptr(*pk), C.int64_t(pw))
	}
	runtime.KeepAlive(c)
}
