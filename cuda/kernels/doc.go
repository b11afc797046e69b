// Package kernels holds the CPU compute kernels of the in-process engine,
// written in C and called through cgo: packed GEMM/GEMV, RMSNorm, RoPE,
// SwiGLU, residual add and attention over a paged KV cache.
//
// The vector variants (AVX-512F, AVX2+FMA) are compiled with per-function
// target attributes and chosen at run time from the CPU's feature bits, so
// the binary runs on any x86-64 without -march flags. A CPU value splits
// each operation over a fixed number of goroutines (one per core by
// default); each cgo call does a whole operation's share, never one
// element.
//
//	cpu := kernels.NewCPU(0)                   // all cores, best level
//	w := cpu.Pack(weights, outDim, inDim)      // once, at load
//	cpu.MatMul(y, x, tokens, w, bias)          // y = x·Wᵀ + bias
package kernels
