package kernels

/*
#include "par.h"
*/
import "C"

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// MeasureBandwidth streams a buffer of the given size through all threads
// reps times (each time the best of several read patterns, see Measure)
// and returns the median read bandwidth in bytes per second. It
// is the bound batch-1 decode is compared with: every step reads every
// weight once.
func (c *CPU) MeasureBandwidth(bytes int, reps int) float64 {
	p := c.NewStreamProbe(bytes)
	rates := make([]float64, 0, reps)
	for r := 0; r < reps; r++ {
		rates = append(rates, p.Measure())
	}
	return median(rates)
}

// A StreamProbe measures read bandwidth again and again on one buffer, so
// that a benchmark can take the bound right before each timed step (on a
// shared machine the bandwidth available moves from second to second)
// without allocating and faulting in a new buffer every time.
type StreamProbe struct {
	c    *CPU
	buf  []float32
	sink atomic.Uint32
	turn int // the pattern Measure starts with
}

// NewStreamProbe allocates (and touches) a buffer of about bytes bytes.
func (c *CPU) NewStreamProbe(bytes int) *StreamProbe {
	n := max(bytes/4, 1) / probeBlock * probeBlock
	p := &StreamProbe{c: c, buf: make([]float32, max(n, probeBlock))}
	for i := range p.buf {
		p.buf[i] = 1 // touch every page before timing
	}
	return p
}

// probeBlock is the values of the buffer one work item streams (16 KB).
const probeBlock = 4096

// Bytes is the size of one streaming read.
func (p *StreamProbe) Bytes() int { return 4 * len(p.buf) }

// Measure streams the whole buffer on all the CPU's threads at once, once
// with each of agl_stream's read patterns (plain loop, software prefetch,
// two and four interleaved streams per thread; see kernels.c), and returns
// the fastest rate in bytes per second: which pattern is fastest changes
// from minute to minute on a shared host, and the bound a decode step is
// compared with should be the best read the machine can do at that moment,
// not one loop's. The pattern order rotates from call to call so that none
// always runs first. The buffer is split as the kernels split a matrix
// (work items of a quarter of a thread's share, taken from a shared
// counter by the caller and the pool's helper threads, as in a
// decode step); one contiguous half per thread read no faster (within ±5 %,
// alternating runs) and loses more when a thread is descheduled.
func (p *StreamProbe) Measure() float64 {
	n := p.c.streamPatterns()
	best := 0.0
	for i := range n {
		best = max(best, p.measurePattern((p.turn+i)%n))
	}
	p.turn++
	return best
}

// streamPatterns is the number of read patterns agl_stream has at the
// CPU's level (the AVX2 and generic loops have one).
func (c *CPU) streamPatterns() int {
	if c.level >= AVX512 {
		return C.AGL_STREAM_PATTERNS
	}
	return 1
}

// measurePattern streams the buffer once with one agl_stream pattern and
// returns the rate in bytes per second.
func (p *StreamProbe) measurePattern(pattern int) float64 {
	start := time.Now()
	blocks := len(p.buf) / probeBlock
	helpers, chunk := p.c.chunks(blocks)
	p.sink.Add(uint32(C.agl_par_stream(p.c.pool, helpers, chunk, C.int(p.c.level), C.int(pattern), fptr(p.buf),
		C.int64_t(blocks), probeBlock)))
	runtime.KeepAlive(p.c)
	return float64(4*len(p.buf)) / time.Since(start).Seconds()
}

// MeasureGEMM times MatMul on a t×k by k×n problem reps times and returns
// the median rate in FLOP/s: the practical peak prefill is compared with.
func (c *CPU) MeasureGEMM(t, n, k, reps int) float64 {
	return measureMatMul(t, n, k, reps, func(w []float32) func(y, x []float32) {
		p := c.Pack(w, n, k)
		return func(y, x []float32) { c.MatMul(y, x, t, p, nil) }
	})
}

// measureMatMul times one weight type's matrix product: it draws the n×k
// weights and the t×k input from one fixed seed (weights first), prepare
// converts the weights and returns the product, and the median rate over
// reps runs is returned in FLOP/s.
func measureMatMul(t, n, k, reps int, prepare func(w []float32) func(y, x []float32)) float64 {
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(r.NormFloat64())
	}
	mul := prepare(w)
	x := make([]float32, t*k)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	y := make([]float32, t*n)
	rates := make([]float64, 0, reps)
	for i := 0; i < reps; i++ {
		start := time.Now()
		mul(y, x)
		rates = append(rates, 2*float64(t)*float64(n)*float64(k)/time.Since(start).Seconds())
	}
	return median(rates)
}

// MeasureFMAPeak runs register-only FMA chains on every thread reps times
// and returns the median rate in FLOP/s: the arithmetic ceiling no GEMM can
// pass.
func (c *CPU) MeasureFMAPeak(reps int) float64 {
	const iters = 20_000_000
	rates := make([]float64, 0, reps)
	for r := 0; r < reps; r++ {
		var flops atomic.Uint64
		start := time.Now()
		// one goroutine per thread, all at once
		Parallel(c.threads, c.threads, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				flops.Add(uint64(C.agl_fma_peak(C.int(c.level), iters)))
			}
		})
		rates = append(rates, float64(flops.Load())/time.Since(start).Seconds())
	}
	return median(rates)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// MeasureGEMMBF16 is MeasureGEMM for bf16 weights (MatMulBF16).
func (c *CPU) MeasureGEMMBF16(t, n, k, reps int) float64 {
	return measureMatMul(t, n, k, reps, func(wf []float32) func(y, x []float32) {
		w := NewBF16(n, k)
		ToBF16(w.Data, wf)
		return func(y, x []float32) { c.MatMulBF16(y, x, t, w, nil) }
	})
}
