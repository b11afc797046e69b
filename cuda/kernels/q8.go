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

// Q8BlockSize is the number of weights that share one scale in a Q8
// matrix, as in llama.cpp's Q8_0.
const Q8BlockSize = C.AGL_Q8_BLOCK

// Q8 is a weight matrix W[N][K] quantized as llama.cpp's Q8_0: each row
// is cut into blocks of 32 along K, each block stored as int8 values q in
// [−127, 127] with one fp16 scale d = max|w|/127, w ≈ q·d. The values are
// those of ggml's quantize_row_q8_0_ref (a GGUF Q8_0 tensor written from
// the same float weights holds the same bytes), but the layout is the
// kernels' own: rows in panels of 16 with four columns of sixteen rows
// interleaved, so one 64-byte load feeds vpdpbusd (see q8.h). The bytes per
// weight are 34/32, a quarter of fp32's plus the scales.
type Q8 struct {
	N, K int
	Q    []uint8  // Panels()·Blocks()·512 bytes: q+128 per weight
	D    []uint16 // Panels()·Blocks()·16 fp16 scales
}

// NewQ8 allocates a zero n×k int8 matrix.
func NewQ8(n, k int) *Q8 {
	w := &Q8{N: n, K: k}
	w.Q = make([]uint8, w.Panels()*w.Blocks()*Q8BlockSize*Panel)
	if len(w.Q) > 0 { // q = 0 everywhere: the byte 128, filled by doubling copies
		w.Q[0] = 128
		for i := 1; i < len(w.Q); i *= 2 {
			copy(w.Q[i:], w.Q[:i])
		}
	}
	w.D = make([]uint16, w.Panels()*w.Blocks()*Panel)
	return w
}

// Blocks is the number of 32-weight blocks per row (K rounded up).
func (w *Q8) Blocks() int { return (w.K + Q8BlockSize - 1) / Q8BlockSize }

// Panels is the number of 16-row panels.
func (w *Q8) Panels() int { return (w.N + Panel - 1) / Panel }

// Bytes is the memory the matrix holds.
func (w *Q8) Bytes() int64 { return int64(len(w.Q)) + 2*int64(len(w.D)) }

// QuantizeRows quantizes rows [row0, row0+rows) from src (rows×K floats,
// row-major), rounding as ggml's quantize_row_q8_0_ref. Calls running at
// once must write different rows.
func (w *Q8) QuantizeRows(row0 int, src []float32, rows int) {
	if row0 < 0 || rows < 0 || row0+rows > w.N || len(src) != rows*w.K {
		panic(fmt.Sprintf("kernels: Q8.QuantizeRows: rows [%d,%d) of %d, %d values for K=%d", row0, row0+rows, w.N, len(src), w.K))
	}
	w.quantizeRows(Detect() >= AVX512, row0, src, rows)
}

func (w *Q8) quantizeRows(vec bool, row0 int, src []float32, rows int) {
	if rows == 0 || w.K == 0 {
		return
	}
	v := 0
	if vec {
		v = 1
	}
	C.agl_q8_quantize_rows(C.int(v), fptr(src), C.int64_t(rows), C.int64_t(w.K), C.int64_t(row0), C.int64_t(w.Blocks()),
		(*C.uint8_t)(unsafe.Pointer(&w.Q[0])), u16ptr(w.D))
}

// RowFloat32 dequantizes row i (q·d per weight) into dst (len K): an
// embedding lookup.
func (w *Q8) RowFloat32(dst []float32, i int) {
	if len(dst) != w.K || i < 0 || i >= w.N {
		panic(fmt.Sprintf("kernels: Q8.RowFloat32: row %d of %d into %d values for K=%d", i, w.N, len(dst), w.K))
	}
	if w.K == 0 {
		return
	}
	C.agl_q8_row_f32((*C.uint8_t)(unsafe.Pointer(&w.Q[0])), u16ptr(w.D), C.int64_t(w.Blocks()), C.int64_t(i), C.int64_t(w.K), fptr(dst))
}

// RowQ8_0 appends row i as llama.cpp's block_q8_0 records (an fp16 scale,
// little-endian, then 32 int8 values; the last block zero-padded): the
// bytes of a GGUF Q8_0 row when K is a multiple of 32.
func (w *Q8) RowQ8_0(dst []byte, i int) []byte {
	if i < 0 || i >= w.N {
		panic(fmt.Sprintf("kernels: Q8.RowQ8_0: row %d of %d", i, w.N))
	}
	nb, p, lane := w.Blocks(), i/Panel, i%Panel
	for b := 0; b < nb; b++ {
		d := w.D[(p*nb+b)*Panel+lane]
		dst = append(dst, byte(d), byte(d>>8))
		blk := w.Q[(p*nb+b)*Q8BlockSize*Panel:]
		for c := 0; c < Q8BlockSize; c++ {
			dst = append(dst, blk[(c/4)*64+lane*4+c%4]-128)
		}
	}
	return dst
}

// F32ToF16 rounds f to IEEE half precision, nearest even (as F16C and
// ggml's GGML_FP32_TO_FP16): the rounding of a Q8 scale.
func F32ToF16(f float32) uint16 { return uint16(C.agl_f32_to_f16(C.float(f))) }

// F16ToF32 widens an IEEE half exactly.
func F16ToF32(h uint16) float32 { return float32(C.agl_f16_to_f32(C.uint16_t(h))) }

// q8 kernel paths (agl_gemm_q8).
const (
	q8Generic = 0
	q8AVX2    = 1 // AVX2 + FMA + F16C
	q8VNNI    = 2 // AVX-512F + BW + VNNI
)

var (
	hasVNNI = C.agl_cpu_has_vnni() != 0
	hasF16C = C.agl_cpu_has_f16c() != 0
)

// q8Path is the best int8 kernel at the CPU's level: VNNI needs AVX-512
// (and the CPU's VNNI and BW), AVX2 needs F16C for the scales.
func (c *CPU) q8Path() int {
	switch {
	case c.level >= AVX512 && hasVNNI:
		return q8VNNI
	case c.level >= AVX2 && hasF16C:
		return q8AVX2
	}
	return q8Generic
}

// Q8Kernel names the int8 kernel this CPU runs: "vnni", "avx2" or
// "generic".
func (c *CPU) Q8Kernel() string {
	return [...]string{"generic", "avx2", "vnni"}[c.q8Path()]
}

// q8Act is the quantized activations of one MatMulQ8 call, pooled.
type q8Act struct {
	xq   []int8
	dx   []float32
	corr []int32
}

var q8Scratch = sync.Pool{New: func() any { return new(q8Act) }}

// q8Panels is panels per work item of MatMulQ8: a multiple of every
// path's tile height (the VNNI decode tile is 4 panels).
const q8Panels = 8

// MatMulQ8 computes y[t][n] = Σ_k x[t][k]·W[n][k] + bias[n] for t tokens
// with int8 weights, as llama.cpp's Q8_0 × Q8_0 dot product: each token's
// activations are quantized per block of 32 to int8 with a float32 scale
// (round to nearest even), the products of a block are summed exactly in
// int32 and scaled by fl(dw·dx), and the blocks are accumulated in float32
// in order. With AVX-512 VNNI that is vpdpbusd; the AVX2 and generic paths
// compute the same bits, and so does every batch composition and thread
// count (see q8.h).
func (c *CPU) MatMulQ8(y, x []float32, t int, w *Q8, bias []float32) {
	c.matMulQ8(c.q8Path(), y, x, t, w, bias)
}

func (c *CPU) matMulQ8(path int, y, x []float32, t int, w *Q8, bias []float32) {
	nb := w.Blocks()
	if len(x) < t*w.K || len(y) < t*w.N || (bias != nil && len(bias) != w.N) || len(w.Q) != w.Panels()*nb*Q8BlockSize*Panel || len(w.D) != w.Panels()*nb*Panel {
		panic(fmt.Sprintf("kernels: MatMulQ8: x %d, y %d, bias %d, data %d/%d for t=%d N=%d K=%d", len(x), len(y), len(bias), len(w.Q), len(w.D), t, w.N, w.K))
	}
	if t == 0 || w.N == 0 {
		return
	}
	if w.K == 0 {
		for j := 0; j < t; j++ {
			for r := 0; r < w.N; r++ {
				y[j*w.N+r] = 0
				if bias != nil {
					y[j*w.N+r] = bias[r]
				}
			}
		}
		return
	}
	a := q8Scratch.Get().(*q8Act)
	defer q8Scratch.Put(a)
	if cap(a.xq) < t*nb*Q8BlockSize {
		a.xq = make([]int8, t*nb*Q8BlockSize)
		a.dx = make([]float32, t*nb)
		a.corr = make([]int32, t*nb)
	}
	xq, dx, corr := a.xq[:t*nb*Q8BlockSize], a.dx[:t*nb], a.corr[:t*nb]
	quantizeAct(c.level >= AVX512, x, t, w.K, xq, dx, corr)
	helpers, chunk := c.chunks((w.Panels() + q8Panels - 1) / q8Panels)
	C.agl_par_gemm_q8(c.pool, helpers, chunk, C.int(path), (*C.int8_t)(unsafe.Pointer(&xq[0])), fptr(dx),
		(*C.int32_t)(unsafe.Pointer(&corr[0])), C.int64_t(t), C.int64_t(nb), (*C.uint8_t)(unsafe.Pointer(&w.Q[0])),
		u16ptr(w.D), C.int64_t(w.N), fptr(bias), fptr(y), q8Panels)
	runtime.KeepAlive(c)
}

// quantizeAct quantizes t tokens of k activations for MatMulQ8 into xq,
// dx and corr (agl_q8_quantize_act; vec: whole blocks with AVX-512F, the
// same bytes: it runs on one thread before every product, ~0.45 ms of a
// 0.6B-shape decode step with the scalar loop alone).
func quantizeAct(vec bool, x []float32, t, k int, xq []int8, dx []float32, corr []int32) {
	v := 0
	if vec {
		v = 1
	}
	nb := (k + Q8BlockSize - 1) / Q8BlockSize
	C.agl_q8_quantize_act(C.int(v), fptr(x), C.int64_t(t), C.int64_t(k), C.int64_t(nb),
		(*C.int8_t)(unsafe.Pointer(&xq[0])), fptr(dx), (*C.int32_t)(unsafe.Pointer(&corr[0])))
}

// MeasureGEMMQ8 is MeasureGEMM for int8 weights (MatMulQ8).
func (c *CPU) MeasureGEMMQ8(t, n, k, reps int) float64 {
	return measureMatMul(t, n, k, reps, func(wf []float32) func(y, x []float32) {
		w := NewQ8(n, k)
		w.QuantizeRows(0, wf, n)
		return func(y, x []float32) { c.MatMulQ8(y, x, t, w, nil) }
	})
}
