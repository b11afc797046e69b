package kernels

/*
#include "convert.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Source is the element type of raw checkpoint bytes (little-endian) that
// the loading conversions read.
type Source int

// Source element types.
const (
	SourceF32  Source = C.AGL_SRC_F32
	SourceF16  Source = C.AGL_SRC_F16
	SourceBF16 Source = C.AGL_SRC_BF16
)

// Size is the bytes per element.
func (s Source) Size() int {
	if s == SourceF32 {
		return 4
	}
	return 2
}

func (s Source) String() string {
	switch s {
	case SourceF32:
		return "F32"
	case SourceF16:
		return "F16"
	case SourceBF16:
		return "BF16"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

func (s Source) check(fn string, src []byte, n int) {
	if s != SourceF32 && s != SourceF16 && s != SourceBF16 {
		panic(fmt.Sprintf("kernels: %s: unknown source type %d", fn, int(s)))
	}
	if len(src) != n*s.Size() {
		panic(fmt.Sprintf("kernels: %s: %d bytes of %v for %d values", fn, len(src), s, n))
	}
}

// vecConvert: the conversions' AVX-512F paths (the same bits as the scalar
// ones) are used where the CPU has AVX-512F.
var vecConvert = Detect() >= AVX512

func bptr(s []byte) unsafe.Pointer {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Pointer(&s[0])
}

// Widen converts src (len(dst) elements of s) to float32 exactly: bf16
// and f16 values widen without rounding, Inf and NaN keep their payload
// (as safetensors.HalfToFloat32 does), f32 is copied bit for bit.
func Widen(dst []float32, src []byte, s Source) {
	s.check("Widen", src, len(dst))
	widenFrom(vecConvert, dst, src, s)
}

func widenFrom(vec bool, dst []float32, src []byte, s Source) {
	if len(dst) == 0 {
		return
	}
	C.agl_cvt_f32(cbool(vec), C.int(s), bptr(src), C.int64_t(len(dst)), fptr(dst))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// PackRowsFrom is PackRows on rows given as raw elements of s: rows
// [row0, row0+rows) of p are written from src (rows×p.K elements), with
// the same bits as widening src (Widen) and packing the result, but
// without a float32 copy of the rows. Calls running at once must write
// different rows. Into a matrix held in Half the source must be BF16
// (whose values are all bf16 values: the rows are copied into the panels).
func (c *CPU) PackRowsFrom(p *Packed, row0 int, src []byte, s Source, rows int) {
	if row0 < 0 || rows < 0 || row0+rows > p.N {
		panic(fmt.Sprintf("kernels: PackRowsFrom: rows [%d,%d) of %d", row0, row0+rows, p.N))
	}
	if p.Half != nil && s != SourceBF16 {
		panic(fmt.Sprintf("kernels: PackRowsFrom: %v rows into a matrix held in Half (BF16 only; PackRows moves it to Data)", s))
	}
	s.check("PackRowsFrom", src, rows*p.K)
	packRowsFrom(vecConvert, p, row0, src, s, rows)
}

func packRowsFrom(vec bool, p *Packed, row0 int, src []byte, s Source, rows int) {
	if rows == 0 || p.K == 0 {
		return
	}
	out, half := p.weights()
	C.agl_cvt_pack_rows(cbool(vec), C.int(s), bptr(src), C.int64_t(rows), C.int64_t(p.K), out, half, C.int64_t(row0))
}

// QuantizeRowsFrom is QuantizeRows on rows given as raw elements of s
// (rows×K elements): the same bytes as widening src (Widen) and
// quantizing the result, one row at a time through scratch (at least K
// floats, so it stays in cache) instead of a float32 copy of all the rows.
// Calls running at once must write different rows and use different
// scratch.
func (w *Q8) QuantizeRowsFrom(row0 int, src []byte, s Source, rows int, scratch []float32) {
	if row0 < 0 || rows < 0 || row0+rows > w.N || len(scratch) < w.K {
		panic(fmt.Sprintf("kernels: Q8.QuantizeRowsFrom: rows [%d,%d) of %d, scratch %d for K=%d", row0, row0+rows, w.N, len(scratch), w.K))
	}
	s.check("Q8.QuantizeRowsFrom", src, rows*w.K)
	w.quantizeRowsFrom(vecConvert, row0, src, s, rows, scratch)
}

func (w *Q8) quantizeRowsFrom(vec bool, row0 int, src []byte, s Source, rows int, scratch []float32) {
	if rows == 0 || w.K == 0 {
		return
	}
	C.agl_cvt_q8_rows(cbool(vec), C.int(s), bptr(src), C.int64_t(rows), C.int64_t(w.K), C.int64_t(row0),
		C.int64_t(w.Blocks()), (*C.uint8_t)(unsafe.Pointer(&w.Q[0])), u16ptr(w.D), fptr(scratch))
}

// RowFloat32 copies row i of the matrix (K values, gathered from its
// panel) into dst: an embedding lookup in a tied head's table, which is
// kept packed only.
func (p *Packed) RowFloat32(dst []float32, i int) {
	if len(dst) != p.K || i < 0 || i >= p.N {
		panic(fmt.Sprintf("kernels: Packed.RowFloat32: row %d of %d into %d values for K=%d", i, p.N, len(dst), p.K))
	}
	at := i/Panel*Panel*p.K + i%Panel
	if p.Half != nil {
		src := p.Half[at:]
		for k := range dst {
			dst[k] = math.Float32frombits(uint32(src[k*Panel]) << 16)
		}
		return
	}
	src := p.Data[at:]
	for k := range dst {
		dst[k] = src[k*Panel]
	}
}
