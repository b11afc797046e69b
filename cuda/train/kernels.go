package train

/*
#cgo CFLAGS: -O3 -std=c11 -Wall -I${SRCDIR}/../kernels
#cgo LDFLAGS: -lm
#include "train.h"
*/
import "C"

import (
	"unsafe"

	"github.com/agentrl/agentrl/cuda/kernels"
)

// Level is an instruction-set level of the training kernels: the inference
// kernels' levels, detected the same way.
type Level = kernels.Level

// Instruction-set levels, in increasing order.
const (
	Generic = kernels.Generic
	AVX2    = kernels.AVX2 // AVX2 + FMA
	AVX512  = kernels.AVX512
)

// Detect returns the best level this CPU supports.
func Detect() Level { return kernels.Detect() }

func fptr(s []float32) *C.float {
	if len(s) == 0 {
		return nil
	}
	return (*C.float)(unsafe.Pointer(&s[0]))
}

func iptr(s []int32) *C.int32_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int32_t)(unsafe.Pointer(&s[0]))
}

// cpu runs the kernels at one level over a fixed number of goroutines.
type cpu struct {
	level   Level
	threads int
}

// parallel runs f over [0,n) split into at most c.threads contiguous
// ranges, one goroutine each, and waits.
func (c cpu) parallel(n int, f func(lo, hi int)) { kernels.Parallel(c.threads, n, f) }

// gemmNT computes c[m][n] (+)= Σ_k a[m][k]·b[n][k], split over rows of a.
func (c cpu) gemmNT(dst, a, b []float32, m, n, k int, accumulate bool) {
	acc := C.int(0)
	if accumulate {
		acc = 1
	}
	c.parallel(m, func(lo, hi int) {
		C.agt_gemm_nt(C.int(c.level), fptr(a), fptr(b), fptr(dst), C.int64_t(m), C.int64_t(n), C.int64_t(k),
			acc, C.int64_t(lo), C.int64_t(hi))
	})
}

// gemmNNAcc computes c[m][j] += Σ_p a[m·sam + p·sap]·b[p][j] for m < rows,
// split over rows.
func (c cpu) gemmNNAcc(dst, a []float32, sam, sap int, b []float32, rows, jn, pn int) {
	c.parallel(rows, func(lo, hi int) {
		C.agt_gemm_nn_acc(C.int(c.level), fptr(a), C.int64_t(sam), C.int64_t(sap), fptr(b), fptr(dst),
			C.int64_t(jn), C.int64_t(pn), C.int64_t(lo), C.int64_t(hi))
	})
}

// swiglu runs the SwiGLU forward and backward kernels on flat slices (the
// model calls them directly; this entry point is for kernel tests).
func (c cpu) swiglu(out, dg, du, dout, g, u []float32) {
	n := C.int64_t(len(g))
	C.agt_swiglu_forward(C.int(c.level), fptr(out), fptr(g), fptr(u), n)
	C.agt_swiglu_backward(C.int(c.level), fptr(dg), fptr(du), fptr(dout), fptr(g), fptr(u), n)
}
