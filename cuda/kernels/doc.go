// Package kernels holds the CPU compute kernels of the in-process engine,
// written in C and called through cgo: packed GEMM/GEMV, RMSNorm, RoPE,
// SwiGLU, residual add and attention over a paged KV cache.
//
// The vector variants (AVX-512F, AVX2+FMA) are compiled with per-function
// target attributes and chosen at run time from the CPU's feature bits, so
// the binary runs on any x86-64 without -march flags. A CPU value splits
// each operation over a fixed number of threads (one per core by default):
// one cgo call per operation, in which the calling thread and a pool of C
// helper threads (pool.c: spinning briefly after an operation, then
// asleep, and gone once the CPU has been idle for 20 ms) take chunks of it
// from a shared counter. Goroutines in long cgo calls would make the Go
// runtime hand their Ps to other OS threads and back (see pool.c for what
// that cost). Which thread computes a chunk never changes its result, and
// a caller that finds the pool busy computes its operation alone. Split
// runs Go work (sampling) on a crew of helper goroutines instead.
//
// A Packed matrix whose values are all bf16 values (a bf16 checkpoint's,
// computed in float32) is held in Half: the panels as the upper 16 bits of
// each value, which the GEMM widens exactly in registers (a shift), so it
// computes the float32 panels' bits from half the bytes, which is what a
// memory-bound decode step is paying for. Pack picks Half when every
// value is a bf16 value; PackRows moves a matrix to float32 panels when a
// row it is given is not.
//
// bfloat16 weights (BF16, MatMulBF16) stay in the checkpoint's row-major
// layout and are multiplied with vdpbf16ps where the CPU has AVX512_BF16,
// accumulating in float32 against activations rounded to bf16 once per
// call; the AVX-512F, AVX2 and generic paths emulate the same 16 lanes
// exactly, so every level gives the same bits. A BF16 may be parted
// (NewBF16Parts): its rows are several row blocks used in place, such as
// the q, k and v tensors of a read-only mapping of the checkpoint, with
// the same results as one contiguous matrix.
//
// BF16Z (CompressBF16, MatMulBF16Z) is a bf16 matrix compressed
// losslessly to about 12 bits a weight (a 4-bit code of each value's high
// byte into a per-matrix table, the low byte as is, rare escapes), which a
// memory-bound decode step reads three quarters of: the products have
// MatMulBF16's bits, decoded in registers straight into vdpbf16ps for up to
// 8 tokens and into small row buffers for the bf16 kernels otherwise.
// CompressBF16 encodes 64 weights at a time with AVX-512BW where the CPU
// has it, into the bytes of the scalar encoder, which stays the format's
// reference.
//
// GuardMapping makes such a mapping fail closed: a SIGBUS from a page past
// the end of a file truncated under it (which inside C code would kill the
// process) maps zero pages instead and marks the mapping Damaged, for the
// caller to report; every other SIGBUS goes to Go's handler as before.
//
// int8 weights (Q8, MatMulQ8) hold llama.cpp's Q8_0 values (int8 with an
// fp16 scale per 32 weights, quantized as ggml's quantize_row_q8_0_ref) in
// a panel layout of their own. Products quantize each token's activations
// per 32 too and sum a block's products exactly in int32 — vpdpbusd where
// the CPU has AVX-512 VNNI, vpmaddubsw/vpmaddwd at AVX2, a loop otherwise —
// then accumulate the scaled block sums in one float32 chain: every path,
// batch and thread count gives the same bits.
//
// Attention (Attend) reads a paged KV cache of float32 rows, or of bf16
// rows (Attention.KH/VH, written with ToBF16's rounding: half the bytes a
// position), widened exactly in registers. Over a long context a decode
// step reads more cache than weights, so decode tokens (alone of their
// sequence in a call) are made cheaper in two ways that leave every bit as
// it was: their rows are prefetched into L2 16 KB ahead, since the block
// table scatters them where the hardware prefetchers do not follow; and
// decode tokens whose tables share leading blocks — a prompt's samples
// through the prefix cache — form decode groups that read each shared row
// once per step for all of them.
//
// Loading converts checkpoint rows (F32, F16 or BF16 bytes) straight into
// these layouts (PackRowsFrom, Q8.QuantizeRowsFrom, Widen): the same bits
// as widening to float32 and then packing or quantizing, without writing
// the widened copy (convert.c).
//
// ExpShift (and ExpShiftSum32 for float32 rows) computes a softmax's
// exp(x − max) and normalizer in float64 for the sampler and prompt
// logprobs: 8 or 4 values at a time, each within 1 ulp of the true exp
// (closer than Go's math.Exp on amd64), the sum in 32 partial sums in a
// fixed order, so that every instruction-set level gives the same bits.
//
// OpenBLAS is measured against the GEMM kernel (build tag openblas) but
// never linked: on one core it is as fast on prefill shapes and 1.7×
// slower at 32 rows.
//
//	cpu := kernels.NewCPU(0)                   // all cores, best level
//	w := cpu.Pack(weights, outDim, inDim)      // once, at load
//	cpu.MatMul(y, x, tokens, w, bias)          // y = x·Wᵀ + bias
package kernels
