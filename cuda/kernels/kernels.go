package kernels

/*
#cgo CFLAGS: -O3 -std=c11 -Wall
#cgo LDFLAGS: -lm
#include "convert.h"
#include "par.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Level is an instruction-set level.
type Level int

// Instruction-set levels, in increasing order.
const (
	Generic Level = 0
	AVX2    Level = 1 // AVX2 + FMA
	AVX512  Level = 2 // AVX-512F
	// AVX512BF16 adds AVX512_BF16 (vdpbf16ps) and AVX512BW; float32
	// kernels run as at AVX512, bf16 matrices use vdpbf16ps.
	AVX512BF16 Level = 3
)

func (l Level) String() string {
	switch l {
	case Generic:
		return "generic"
	case AVX2:
		return "avx2"
	case AVX512:
		return "avx512"
	case AVX512BF16:
		return "avx512bf16"
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// Detect returns the best level this CPU supports.
func Detect() Level { return detected }

// detected is the CPU's level, read once: Detect is called per sampled
// token (ExpShift) and per embedding row, and the CPU does not change.
var detected = Level(C.agl_cpu_level())

// Panel is the number of output columns packed together.
const Panel = C.AGL_PANEL

// Packed is a weight matrix W[N][K] in the kernels' panel layout, held in
// Data, or in Half when every value is a bf16 value.
type Packed struct {
	N, K int
	Data []float32 // ceil(N/16)*16*K values, or nil when Half holds them
	// Half holds the same panels as the upper 16 bits of each value's
	// float32 encoding (bf16 bit patterns) for a matrix whose values are
	// all bf16 values, as a bf16 checkpoint's are: MatMul widens them
	// exactly in registers, so it computes Data's bits reading half the
	// bytes. PackRows keeps a matrix so while the rows it is given are
	// bf16 values, and moves it to Data (ToFloat32) when one is not.
	Half []uint16
}

// values is the number of values of the panels.
func (p *Packed) values() int { return p.Panels() * Panel * p.K }

// weights returns the panels' memory for agl_gemm and whether it is Half.
func (p *Packed) weights() (unsafe.Pointer, C.int) {
	n := p.values()
	switch {
	case p.Half != nil && len(p.Half) == n:
		return unsafe.Pointer(unsafe.SliceData(p.Half)), 1
	case p.Half == nil && len(p.Data) == n:
		return unsafe.Pointer(unsafe.SliceData(p.Data)), 0
	}
	panic(fmt.Sprintf("kernels: Packed %d×%d holds %d float32 and %d bf16 values, want %d of one", p.N, p.K, len(p.Data), len(p.Half), n))
}

// ToFloat32 stores the matrix's values as float32 panels (Data) if Half
// held them; the values do not change. It must not run at the same time
// as any other use of p.
func (p *Packed) ToFloat32() {
	if p.Half == nil {
		return
	}
	d := make([]float32, len(p.Half))
	if len(d) > 0 {
		widenFrom(vecConvert, d, unsafe.Slice((*byte)(unsafe.Pointer(&p.Half[0])), 2*len(p.Half)), SourceBF16)
	}
	p.Data, p.Half = d, nil
}

// Panels is the number of 16-column panels.
func (p *Packed) Panels() int { return (p.N + Panel - 1) / Panel }

// CPU runs kernels at one instruction-set level over a fixed number of
// goroutines. It is safe for concurrent use.
type CPU struct {
	level   Level
	threads int
	crew    *crew       // helper goroutines for Go work (Split)
	pool    *C.agl_pool // helper threads for the kernels (pool.c); nil with one thread
}

// NewCPU returns a CPU using threads goroutines per operation (0 = one per
// available core) at the best detected level.
func NewCPU(threads int) *CPU {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	return newCPU(Detect(), threads)
}

// newCPU sets up a CPU's helpers: the pool's threads are freed with the
// CPU (every kernel call keeps the CPU alive until it returns).
func newCPU(l Level, threads int) *CPU {
	c := &CPU{level: l, threads: threads, crew: newCrew(threads - 1)}
	if threads > 1 {
		c.pool = C.agl_pool_new(C.int(threads - 1))
		if c.pool != nil {
			runtime.AddCleanup(c, func(p *C.agl_pool) { C.agl_pool_free(p) }, c.pool)
		}
	}
	return c
}

// WithLevel returns a copy that runs at level l (at most the detected one).
func (c *CPU) WithLevel(l Level) (*CPU, error) {
	if l < Generic || l > Detect() {
		return nil, fmt.Errorf("kernels: level %v not supported by this CPU (best %v)", l, Detect())
	}
	return newCPU(l, c.threads), nil
}

// poolThreads is the number of the pool's helper threads running.
func (c *CPU) poolThreads() int {
	n := int(C.agl_pool_alive(c.pool))
	runtime.KeepAlive(c)
	return n
}

// Level is the instruction-set level in use.
func (c *CPU) Level() Level { return c.level }

// Threads is the number of goroutines an operation is split over.
func (c *CPU) Threads() int { return c.threads }

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

// Split runs f over [0,n) cut into at most Threads() contiguous ranges on
// the caller and helper goroutines that stay between calls (a crew, as the
// kernels' pool threads do: starting goroutines for every call costs more
// than the work), and returns when all are done. Each range runs on one
// goroutine. It is for Go work between kernel calls, such as sampling
// every sequence of a batch.
func (c *CPU) Split(n int, f func(lo, hi int)) {
	parts := min(c.threads, n)
	if parts <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	c.crew.run(parts-1, n, (n+parts-1)/parts, f)
}

// Parallel runs f over [0,n) split into at most threads contiguous ranges,
// one goroutine each (the caller runs the first), and waits for all of
// them. It is the kernels' work split, exported for cuda/train's kernels.
func Parallel(threads, n int, f func(lo, hi int)) {
	parts := min(threads, n)
	if parts <= 1 {
		if n > 0 {
			f(0, n)
		}
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < parts; i++ {
		lo, hi := n*i/parts, n*(i+1)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	f(0, n/parts)
	wg.Wait()
}

// chunksPerThread is how many pieces chunks cuts each thread's
// share into: enough that a helper thread which starts late (waking an
// idle core can take longer than a decode-size operation) leaves its share
// to the threads already running instead of stalling the whole operation.
const chunksPerThread = 4

// chunks returns the helpers and the chunk size for an operation of n work
// items on the pool: the caller and up to threads−1 helper threads take
// contiguous chunks of chunksPerThread-th of a thread's share from a
// shared counter until none are left (par.c). Which thread computes a
// chunk never changes what is computed, so results stay bitwise identical.
func (c *CPU) chunks(n int) (helpers C.int, chunk C.int64_t) {
	if c.threads <= 1 || n <= 1 {
		return 0, C.int64_t(max(n, 1))
	}
	return C.int(min(c.threads, n) - 1), C.int64_t(max(1, n/(c.threads*chunksPerThread)))
}

// NewPacked allocates a zero n×k packed matrix of float32 panels.
func NewPacked(n, k int) *Packed {
	p := &Packed{N: n, K: k}
	p.Data = make([]float32, p.values())
	return p
}

// NewPackedHalf allocates a zero n×k packed matrix kept in Half, for
// values that are all bf16 values (zero is one).
func NewPackedHalf(n, k int) *Packed {
	p := &Packed{N: n, K: k}
	p.Half = make([]uint16, p.values())
	return p
}

// Pack packs w (n rows of k) for MatMul: in Half when every value is a
// bf16 value, else in Data.
func (c *CPU) Pack(w []float32, n, k int) *Packed {
	var p *Packed
	if BF16Exact(w) {
		p = NewPackedHalf(n, k)
	} else {
		p = NewPacked(n, k)
	}
	c.PackRows(p, 0, w, n)
	return p
}

// BF16Exact reports whether every value of x is a bf16 value: the lower
// 16 bits of its float32 encoding are zero, so converting it to bf16 and
// back gives the same bits (NaNs included).
func BF16Exact(x []float32) bool {
	return len(x) == 0 || C.agl_bf16_exact(fptr(x), C.int64_t(len(x))) != 0
}

// PackRows writes rows [row0, row0+rows) of p from w (rows×p.K values),
// leaving the other rows alone: fused matrices (q|k|v, gate|up) are filled
// one source tensor at a time. A matrix held in Half stays there when the
// rows are bf16 values and moves to Data (ToFloat32) otherwise, so it must
// not run at the same time as another use of p.
func (c *CPU) PackRows(p *Packed, row0 int, w []float32, rows int) {
	if row0 < 0 || rows < 0 || row0+rows > p.N || len(w) != rows*p.K {
		panic(fmt.Sprintf("kernels: PackRows: rows [%d,%d) of %d, %d values for K=%d", row0, row0+rows, p.N, len(w), p.K))
	}
	if rows == 0 || p.K == 0 {
		return
	}
	if p.Half != nil && !BF16Exact(w) {
		p.ToFloat32()
	}
	if p.Half != nil {
		C.agl_cvt_pack_rows(cbool(vecConvert), C.int(SourceF32), unsafe.Pointer(&w[0]), C.int64_t(rows), C.int64_t(p.K),
			unsafe.Pointer(&p.Half[0]), 1, C.int64_t(row0))
		return
	}
	C.agl_pack_rows(fptr(w), C.int64_t(rows), C.int64_t(p.K), fptr(p.Data), C.int64_t(row0))
}

// MatMul computes y[t][n] = Σ_k x[t][k]·W[n][k] + bias[n] for t tokens
// (bias may be nil). y must hold t*N values and x t*K.
func (c *CPU) MatMul(y, x []float32, t int, w *Packed, bias []float32) {
	if len(x) < t*w.K || len(y) < t*w.N || (bias != nil && len(bias) != w.N) {
		panic(fmt.Sprintf("kernels: MatMul: x %d, y %d, bias %d for t=%d N=%d K=%d", len(x), len(y), len(bias), t, w.N, w.K))
	}
	if t == 0 || w.N == 0 {
		return
	}
	// Work items are groups of 4 panels so each thread runs whole tiles
	// (tiles are 2 or 4 panels wide).
	wp, half := w.weights()
	helpers, chunk := c.chunks((w.Panels() + 3) / 4)
	C.agl_par_gemm(c.pool, helpers, chunk, C.int(c.level), fptr(x), C.int64_t(t), C.int64_t(w.K), wp, half,
		C.int64_t(w.N), fptr(bias), fptr(y))
	runtime.KeepAlive(c)
}

// RMSNorm computes y[r] = w ⊙ x[r] / sqrt(mean(x[r]²) + eps) for rows of
// len(w). x and y may be the same slice.
func (c *CPU) RMSNorm(y, x, w []float32, eps float32) {
	d := len(w)
	if d == 0 || len(x)%d != 0 || len(y) != len(x) {
		panic(fmt.Sprintf("kernels: RMSNorm: x %d, y %d, w %d", len(x), len(y), d))
	}
	rows := len(x) / d
	helpers, chunk := c.rowChunks(rows, d)
	C.agl_par_rmsnorm(c.pool, helpers, chunk, C.int(c.level), fptr(x), fptr(w), fptr(y), C.int64_t(rows), C.int64_t(d),
		C.float(eps))
	runtime.KeepAlive(c)
}

// minParallelWork is the number of values below which a row-wise op runs
// on the calling goroutine: splitting costs more than it saves.
const minParallelWork = 1 << 14

// rowChunks splits rows of width values into one contiguous range per
// thread on the pool when there is enough work, and leaves them to the
// caller otherwise; every row is computed the same way either way.
func (c *CPU) rowChunks(rows, width int) (helpers C.int, chunk C.int64_t) {
	parts := min(c.threads, rows)
	if rows*width < minParallelWork || parts <= 1 {
		return 0, C.int64_t(max(rows, 1))
	}
	return C.int(parts - 1), C.int64_t((rows + parts - 1) / parts)
}

// RoPE rotates heads [0, heads) of head size hd in each of the len(pos)
// rows of x (row stride stride) by their positions, HF half-split style.
func (c *CPU) RoPE(x []float32, stride, heads, hd int, pos []int32, invFreq []float32) {
	if len(invFreq) != hd/2 || len(x) < len(pos)*stride || heads*hd > stride {
		panic(fmt.Sprintf("kernels: RoPE: x %d, stride %d, heads %d, hd %d, inv_freq %d", len(x), stride, heads, hd, len(invFreq)))
	}
	if len(pos) == 0 {
		return
	}
	helpers, chunk := c.rowChunks(len(pos), heads*hd)
	C.agl_par_rope(c.pool, helpers, chunk, fptr(x), C.int64_t(len(pos)), C.int64_t(heads), C.int64_t(hd), C.int64_t(stride),
		iptr(pos), fptr(invFreq))
	runtime.KeepAlive(c)
}

// SwiGLU computes out[t][j] = silu(gu[t][j])·gu[t][inter+j].
func (c *CPU) SwiGLU(out, gu []float32, t, inter int) {
	if len(gu) < t*2*inter || len(out) < t*inter {
		panic("kernels: SwiGLU: short buffers")
	}
	if t*inter == 0 {
		return
	}
	helpers, chunk := c.rowChunks(t, inter)
	C.agl_par_swiglu(c.pool, helpers, chunk, C.int(c.level), fptr(gu), C.int64_t(t), C.int64_t(inter), fptr(out))
	runtime.KeepAlive(c)
}

// Add computes x += y.
func (c *CPU) Add(x, y []float32) {
	if len(x) != len(y) {
		panic("kernels: Add: length mismatch")
	}
	if len(x) == 0 {
		return
	}
	C.agl_add(fptr(x), fptr(y), C.int64_t(len(x)))
}

// Attention describes one attention call over a paged KV cache.
type Attention struct {
	Heads, KVHeads, HeadDim int
	BlockSize               int
	Scale                   float32
	// The layer's cache, [slots][KVHeads*HeadDim]: K and V for an fp32
	// cache, or KH and VH (bf16 bits, ToBF16's rounding) for a bf16 one.
	// Exactly one pair is set.
	K, V     []float32
	KH, VH   []uint16
	Pos      []int32 // per token: its absolute position
	TableOff []int32 // per token: offset of its sequence's block table in Tables
	// Tables are the concatenated block tables. The tokens of a sequence
	// are adjacent and share their TableOff: a token alone of its sequence
	// is a decode token, whose cache rows the kernel prefetches.
	Tables []int32
}

// attScratch pools attention's score scratch: a malloc'd buffer of
// megabytes per call (a long context, many threads) was faulted in and
// zeroed at every layer of every step.
var attScratch sync.Pool

// Attend computes causal attention for len(a.Pos) tokens whose queries are
// q ([t][Heads*HeadDim]), writing out (same shape). Token i attends to
// cache positions 0..Pos[i], which must already hold its own K and V.
func (c *CPU) Attend(out, q []float32, a *Attention) {
	t := len(a.Pos)
	width := a.Heads * a.HeadDim
	if len(q) < t*width || len(out) < t*width || len(a.TableOff) != t || a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 {
		panic("kernels: Attend: inconsistent shapes")
	}
	var kc, vc unsafe.Pointer
	bf := a.KH != nil
	switch {
	case bf && a.K == nil && a.VH != nil && len(a.KH) > 0 && len(a.VH) > 0:
		kc, vc = unsafe.Pointer(&a.KH[0]), unsafe.Pointer(&a.VH[0])
	case !bf && a.VH == nil && len(a.K) > 0 && len(a.V) > 0:
		kc, vc = unsafe.Pointer(&a.K[0]), unsafe.Pointer(&a.V[0])
	default:
		panic("kernels: Attend: set K and V (fp32 cache) or KH and VH (bf16 cache)")
	}
	maxPos := int32(0)
	for _, p := range a.Pos {
		maxPos = max(maxPos, p)
	}
	helpers, chunk := c.chunks(t * a.Heads)
	stride := int(maxPos+16) / 16 * 16
	scratch := getScratch[float32](&attScratch, int(C.agl_attention_scratch_rows())*int(helpers+1)*stride)
	defer attScratch.Put(scratch)
	C.agl_par_attention(c.pool, helpers, chunk, C.int(c.level), fptr(q), C.int64_t(t), C.int64_t(a.Heads),
		C.int64_t(a.KVHeads), C.int64_t(a.HeadDim), kc, vc, cbool(bf), iptr(a.Pos), iptr(a.TableOff), iptr(a.Tables),
		C.int64_t(a.BlockSize), C.float(a.Scale), fptr(out), fptr(*scratch), C.int64_t(stride))
	runtime.KeepAlive(c)
}
