// C kernels for the CPU backend of the in-process engine. Every function is
// pure: it reads its inputs, writes its outputs, and keeps no state, so Go
// may call them from several goroutines at once on disjoint outputs.
//
// level selects the instruction set: 0 generic x86-64, 1 AVX2+FMA, 2 AVX-512F,
// 3 AVX-512F with AVX512_BF16 (and BW): the float32 kernels treat 3 as 2.
// Vector variants are compiled with per-function target attributes and chosen
// at run time (agl_cpu_level), so the library runs on any x86-64.
#ifndef AGL_KERNELS_H
#define AGL_KERNELS_H
#include <stdint.h>

enum { AGL_PANEL = 16 };

int agl_cpu_level(void);
int agl_cpu_has_bf16(void);

// bfloat16 weights (bf16.c). Activations are rounded to bf16 once per call:
// agl_bf16_round writes t rows of k (row stride k) as bf16 rows of stride
// ldx (k rounded up to 32), zero-padded, round-to-nearest-even.
void agl_bf16_round(const float* x, int64_t t, int64_t k, int64_t ldx, uint16_t* out);
void agl_bf16_to_f32(const uint16_t* src, float* dst, int64_t n);
void agl_f32_to_bf16(const float* src, uint16_t* dst, int64_t n);

// y[t][n] = sum_k xb[t][k] * W[n][k] (+ bias[n]) for rows [r_lo, r_hi), W
// row-major bf16 (n × k). Each output is 16 lanes of vdpbf16ps-style pair
// FMAs over 32-element chunks, then a fixed reduction tree: identical at
// every level (denormals aside) and independent of t and the row range.
void agl_gemm_bf16(int level, const uint16_t* xb, int64_t t, int64_t k, int64_t ldx, const uint16_t* w,
                   int64_t n, const float* bias, float* y, int64_t r_lo, int64_t r_hi);

// The same products for many tokens at level 3 (AVX-512 BF16), same bits:
// the activations are first rounded and packed by agl_bf16_pack_act
// (tiles [tile_lo, tile_hi) of agl_bf16_act_words(t, k) words in all), and
// pk is scratch of agl_bf16_panel_words(k) words for the weights.
int64_t agl_bf16_act_tiles(int64_t t);
int64_t agl_bf16_panel_rows(void);
int64_t agl_bf16_act_words(int64_t t, int64_t k);
int64_t agl_bf16_panel_words(int64_t k);
void agl_bf16_pack_act(const float* x, int64_t t, int64_t k, int64_t tile_lo, int64_t tile_hi, uint32_t* xp);
void agl_gemm_bf16_many(const uint32_t* xp, int64_t t, int64_t k, const uint16_t* w, int64_t n, const float* bias,
                        float* y, int64_t r_lo, int64_t r_hi, uint32_t* pk);

// Weights W[n][k] (row-major, out × in) are packed once into panels of 16
// output columns: P[p][k][j] = W[16p+j][k], zero-padded to a multiple of 16.
// agl_pack_rows writes rows [row0, row0+n) of such a packed matrix.
void agl_pack_rows(const float* w, int64_t n, int64_t k, float* out, int64_t row0);

// y[t][n] = sum_k x[t][k] * W[n][k] (+ bias[n]) for the panels [p_lo, p_hi).
// Every output element is one fused multiply-add chain over k in increasing
// order, whatever the level, t or the panel range: results are bitwise
// independent of batch composition and of the instruction set. wp is the
// packed float32 panels, or with half the same panels as the upper 16 bits
// of each value (uint16_t), for a matrix whose values are all bf16 values:
// widened exactly in registers, they give the same bits.
void agl_gemm(int level, const float* x, int64_t t, int64_t k, const void* wp, int half,
              int64_t n, const float* bias, float* y, int64_t p_lo, int64_t p_hi);

// 1 when every one of the n floats is a bf16 value (the lower 16 bits of
// its encoding are zero), else 0.
int agl_bf16_exact(const float* x, int64_t n);

// y[r] = w * x[r] / sqrt(mean(x[r]^2) + eps) for each of rows rows of d.
void agl_rmsnorm(int level, const float* x, const float* w, float* y,
                 int64_t rows, int64_t d, float eps);

// Rotary embedding, Hugging Face half-split convention, in place on
// x[t][stride] for heads [0, nheads) of hd at offset h*hd.
void agl_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
              const int32_t* pos, const float* inv_freq);

// out[i][hd] = silu(gu[i][j]) * gu[i][inter+j] for j < inter.
void agl_swiglu(int level, const float* gu, int64_t t, int64_t inter, float* out);

// Causal attention over a paged KV cache for work items [lo, hi) of the
// t*nh items, head-major (item = head*t + token: the tokens of a chunk that
// share a head run together and find that head's K/V in cache). q is
// [t][nh*hd]; kc/vc are [slots][nkv*hd], float32, or bf16 bits (uint16_t)
// when kv_bf16; token i sits at position pos[i] and reads cache positions
// 0..pos[i] through the block table bt + bt_off[i] (slot = bt[p/bs]*bs +
// p%bs). The tokens of one sequence are adjacent and share their bt_off: a
// token with no neighbour of its sequence is a decode token, whose rows
// are prefetched (AGL_ATT_PF, bytes ahead: 16384 by default), and decode
// tokens whose tables share leading blocks are computed together over them
// (AGL_ATT_GROUP, most members: 32 by default), with the bits each gets
// alone. scratch holds agl_attention_scratch_rows() rows of stride floats,
// stride ≥ max(pos)+1 rounded up to a multiple of 16.
void agl_attention(int level, const float* q, int64_t t, int64_t nh, int64_t nkv, int64_t hd, const void* kc,
                   const void* vc, int kv_bf16, const int32_t* pos, const int32_t* bt_off, const int32_t* bt,
                   int64_t bs, float scale, float* out, int64_t lo, int64_t hi, float* scratch, int64_t stride);
int64_t agl_attention_scratch_rows(void);

// x[i] += y[i]
void agl_add(float* x, const float* y, int64_t n);
#endif

// Sum of x[0..n): a pure streaming read, used to measure memory bandwidth.
// pattern (AVX-512 levels; the others have one pattern) picks how: 0 a
// plain loop, 1 with software prefetch 4 KB ahead, 2 and 3 two and four
// interleaved streams (see kernels.c).
enum { AGL_STREAM_PATTERNS = 4 };
float agl_stream(int level, int pattern, const float* x, int64_t n);

// Runs iters rounds of 16 independent FMA chains in registers and returns
// the number of floating-point operations done (2 per lane per FMA): the
// machine's FMA peak, measured.
double agl_fma_peak(int level, int64_t iters);
