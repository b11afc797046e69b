// bfloat16 weights: GEMM/GEMV over row-major W[n][k] (the checkpoint's own
// layout, so a bf16 checkpoint is used as read, with no repacking) against
// float32 activations that are rounded to bf16 once per call.
//
// Every output element is one fixed computation, whatever the level, the
// batch or the row range (see agl_gemm_bf16 in kernels.h): 16 lanes, lane i
// of each 32-element chunk c accumulating
//     acc[i] = fma(w[32c+2i+1], x[32c+2i+1], acc[i]);
//     acc[i] = fma(w[32c+2i],   x[32c+2i],   acc[i]);
// which is exactly what vdpbf16ps does (the product of two bf16 values is
// exact in float32, so its one rounding is that of the add), then the fixed
// tree ((i + i+8) + (i+4)) ... down to lane 0, then + bias. The AVX-512F,
// AVX2 and generic paths emulate the same lanes with fp32 FMAs on the
// widened halves. vdpbf16ps treats denormal inputs and results as zero;
// the emulations do not, so the levels agree bitwise only while no
// denormal occurs (weights and activations of real models have none).
#include "kernels.h"
#include "vecops.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define AGB_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))

enum {
	BK = 32,      // elements per chunk (one zmm of bf16)
	TOK_BLOCK = 96 // tokens whose activations stay in L2 while a row range streams by
};

int agl_cpu_has_bf16(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512bf16");
}

static inline float bf16_to_f32(uint16_t h) {
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

// Round to nearest even, as PyTorch's float → bfloat16; NaN stays a
// (quiet) NaN of the same sign.
static inline uint16_t f32_to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

void agl_bf16_round(const float* x, int64_t t, int64_t k, int64_t ldx, uint16_t* out) {
	for (int64_t i = 0; i < t; i++) {
		for (int64_t j = 0; j < k; j++) out[i * ldx + j] = f32_to_bf16(x[i * k + j]);
		for (int64_t j = k; j < ldx; j++) out[i * ldx + j] = 0;
	}
}

void agl_bf16_to_f32(const uint16_t* src, float* dst, int64_t n) {
	for (int64_t i = 0; i < n; i++) dst[i] = bf16_to_f32(src[i]);
}

void agl_f32_to_bf16(const float* src, uint16_t* dst, int64_t n) {
	for (int64_t i = 0; i < n; i++) dst[i] = f32_to_bf16(src[i]);
}

// The 16 → 1 tree shared by every level.
static inline float tree16(const float a[16]) {
	float b[8], c[4], d[2];
	for (int i = 0; i < 8; i++) b[i] = a[i] + a[i + 8];
	for (int i = 0; i < 4; i++) c[i] = b[i] + b[i + 4];
	for (int i = 0; i < 2; i++) d[i] = c[i] + c[i + 2];
	return d[0] + d[1];
}

AGV_AVX2 AGV_INLINE float tree256(__m256 lo, __m256 hi) {
	__m256 s8 = _mm256_add_ps(lo, hi);
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
	__m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	__m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
	return _mm_cvtss_f32(s1);
}

// A tile computes rows [0,R) × tokens [0,T): w points at row 0 (row stride
// k), x at token 0 (stride ldx, zero-padded to whole chunks), y at
// y[token 0][row 0] (stride n). nfull whole chunks are read from w; a last
// partial chunk (k % 32 elements) comes from wtail, R rows of 32 zero-padded
// values.
typedef struct {
	const uint16_t* w;
	int64_t k;
	const uint16_t* x;
	int64_t ldx;
	float* y;
	int64_t n;
	const float* bias;
	int64_t nfull;
	const uint16_t* wtail;
} tile_args;

static inline void store_out(const tile_args* a, int64_t r, int j, float s) {
	if (a->bias) s += a->bias[r];
	a->y[j * a->n + r] = s;
}

static void tile_generic(const tile_args* a, int R, int T) {
	for (int r = 0; r < R; r++) {
		for (int j = 0; j < T; j++) {
			float acc[16] = {0};
			const uint16_t* xr = a->x + j * a->ldx;
			for (int64_t c = 0; c <= a->nfull; c++) {
				const uint16_t* wr;
				if (c < a->nfull) wr = a->w + r * a->k + c * BK;
				else if (a->wtail) wr = a->wtail + r * BK;
				else break;
				const uint16_t* xc = xr + c * BK;
				for (int i = 0; i < 16; i++) {
					acc[i] = fmaf(bf16_to_f32(wr[2 * i + 1]), bf16_to_f32(xc[2 * i + 1]), acc[i]);
					acc[i] = fmaf(bf16_to_f32(wr[2 * i]), bf16_to_f32(xc[2 * i]), acc[i]);
				}
			}
			store_out(a, r, j, tree16(acc));
		}
	}
}

// tree16x16: lane e of the result is agv_tree512(v[e]), the same adds in the
// same tree, for 16 vectors at once: each level adds the halves of two
// vectors' live parts side by side (level 1: 256-bit halves, 2: 128-bit
// quarters, 3: 64-bit pairs, 4: neighbours), a quarter of the shuffles
// and adds of 16 agv_tree512s. The lanes come out in the order 4L+q ↔ v[4q+L]
// and are put back in order by one permute.
AGB_BF16 AGV_INLINE __m512 tree16x16(const __m512 v[16]) {
	__m512 s[8], u[4], w[2];
#pragma GCC unroll 8
	for (int m = 0; m < 8; m++) // [b(v2m) | b(v2m+1)], b[i] = v[i] + v[i+8]
		s[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
		                     _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
#pragma GCC unroll 4
	for (int m = 0; m < 4; m++) // lane L: c(v4m+L), c[i] = b[i] + b[i+4]
		u[m] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * m], s[2 * m + 1], 0x88),
		                     _mm512_shuffle_f32x4(s[2 * m], s[2 * m + 1], 0xDD));
#pragma GCC unroll 2
	for (int m = 0; m < 2; m++) // lane L: [d(v8m+L), d(v8m+4+L)], d[i] = c[i] + c[i+2]
		w[m] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(u[2 * m]), _mm512_castps_pd(u[2 * m + 1]))),
		                     _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(u[2 * m]), _mm512_castps_pd(u[2 * m + 1]))));
	// lane L: [v(L), v(4+L), v(8+L), v(12+L)] summed: d[0] + d[1]
	__m512 z = _mm512_add_ps(_mm512_shuffle_ps(w[0], w[1], 0x88), _mm512_shuffle_ps(w[0], w[1], 0xDD));
	const __m512i back = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
	return _mm512_permutexvar_ps(back, z);
}

// ---- AVX-512 BF16: vdpbf16ps.
AGB_BF16 AGV_INLINE void tile_bf16_rt(const tile_args* a, const int R, const int T) {
	__m512 acc[8][6];
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 6
		for (int j = 0; j < T; j++) acc[r][j] = _mm512_setzero_ps();
	for (int64_t c = 0; c <= a->nfull; c++) {
		__m512bh w[8];
		if (c < a->nfull) {
			// Each row is a short stream (k·2 bytes, a few KB), too short
			// for the hardware prefetcher to learn before it ends: fetch
			// the next tile's rows (they follow these in memory) while this
			// one computes. (Past the last tile this names memory beyond the
			// matrix: a prefetch never faults.)
			if (T <= 2) {
#pragma GCC unroll 8
				for (int r = 0; r < R; r++) _mm_prefetch((const char*)(a->w + (R + r) * a->k + c * BK), _MM_HINT_T0);
			}
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) w[r] = (__m512bh)_mm512_loadu_si512(a->w + r * a->k + c * BK);
		} else if (a->wtail) {
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) w[r] = (__m512bh)_mm512_loadu_si512(a->wtail + r * BK);
		} else {
			break;
		}
#pragma GCC unroll 6
		for (int j = 0; j < T; j++) {
			__m512bh xv = (__m512bh)_mm512_loadu_si512(a->x + j * a->ldx + c * BK);
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], w[r], xv);
		}
	}
	if (R == 4) {
		// Four tokens' four rows per tree16x16: lanes 4j'..4j'+3 are
		// token j's rows, one 128-bit store each.
		const __m128 b4 = a->bias ? _mm_loadu_ps(a->bias) : _mm_setzero_ps();
#pragma GCC unroll 2
		for (int j0 = 0; j0 < T; j0 += 4) {
			__m512 v[16];
#pragma GCC unroll 4
			for (int jj = 0; jj < 4; jj++)
#pragma GCC unroll 4
				for (int r = 0; r < 4; r++) v[4 * jj + r] = j0 + jj < T ? acc[r][j0 + jj] : _mm512_setzero_ps();
			const __m512 z = tree16x16(v);
			__m128 q[4] = {_mm512_castps512_ps128(z), _mm512_extractf32x4_ps(z, 1), _mm512_extractf32x4_ps(z, 2),
			               _mm512_extractf32x4_ps(z, 3)};
#pragma GCC unroll 4
			for (int jj = 0; jj < 4; jj++) {
				if (j0 + jj >= T) break;
				_mm_storeu_ps(a->y + (j0 + jj) * a->n, a->bias ? _mm_add_ps(q[jj], b4) : q[jj]);
			}
		}
		return;
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 6
		for (int j = 0; j < T; j++) store_out(a, r, j, agv_tree512(acc[r][j]));
}

// ---- AVX-512F: the odd element of each 32-bit pair is its high half (a
// float32 once the low half is masked off), the even one its low half
// shifted up.

// emu_chunk512 is one 32-element chunk c of the AVX-512F emulation: each
// token's activations are split once into odd and even halves, then each of
// the R weight rows at wp adds its odd products and then its even ones to
// acc, vdpbf16ps's order. The tile kernel and the multi-row decode kernel
// share it, so both keep the same lanes and order (the same bits).
AGV_AVX512 AGV_INLINE void emu_chunk512(__m512 (*acc)[4], const uint16_t* const* wp, const int R, const tile_args* a,
                                        int64_t c, const int T, __m512i hi) {
	__m512 xo[4], xe[4];
#pragma GCC unroll 4
	for (int j = 0; j < T; j++) {
		__m512i xv = _mm512_loadu_si512(a->x + j * a->ldx + c * BK);
		xo[j] = _mm512_castsi512_ps(_mm512_and_si512(xv, hi));
		xe[j] = _mm512_castsi512_ps(_mm512_slli_epi32(xv, 16));
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++) {
		__m512i wv = _mm512_loadu_si512(wp[r]);
		__m512 wo = _mm512_castsi512_ps(_mm512_and_si512(wv, hi));
		__m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
#pragma GCC unroll 4
		for (int j = 0; j < T; j++) {
			acc[r][j] = _mm512_fmadd_ps(wo, xo[j], acc[r][j]);
			acc[r][j] = _mm512_fmadd_ps(we, xe[j], acc[r][j]);
		}
	}
}

AGV_AVX512 AGV_INLINE void tile_512_rt(const tile_args* a, const int R, const int T) {
	__m512 acc[8][4];
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int j = 0; j < T; j++) acc[r][j] = _mm512_setzero_ps();
	for (int64_t c = 0; c <= a->nfull; c++) {
		const uint16_t* wp[8];
		if (c < a->nfull) {
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) wp[r] = a->w + r * a->k + c * BK;
		} else if (a->wtail) {
#pragma GCC unroll 8
			for (int r = 0; r < R; r++) wp[r] = a->wtail + r * BK;
		} else {
			break;
		}
		emu_chunk512(acc, wp, R, a, c, T, hi);
	}
#pragma GCC unroll 8
	for (int r = 0; r < R; r++)
#pragma GCC unroll 4
		for (int j = 0; j < T; j++) store_out(a, r, j, agv_tree512(acc[r][j]));
}

// ---- AVX2: lanes 0–7 from the chunk's first 16 elements, lanes 8–15 from
// the next 16.
AGV_AVX2 AGV_INLINE void tile_256_rt(const tile_args* a, const int R, const int T) {
	__m256 lo[2][2], hi[2][2];
	const __m256i m = _mm256_set1_epi32((int)0xffff0000u);
#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 2
		for (int j = 0; j < T; j++) lo[r][j] = hi[r][j] = _mm256_setzero_ps();
	for (int64_t c = 0; c <= a->nfull; c++) {
		const uint16_t* wp[2];
		if (c < a->nfull) {
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) wp[r] = a->w + r * a->k + c * BK;
		} else if (a->wtail) {
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) wp[r] = a->wtail + r * BK;
		} else {
			break;
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256 xo[2], xe[2];
#pragma GCC unroll 2
			for (int j = 0; j < T; j++) {
				__m256i xv = _mm256_loadu_si256((const __m256i*)(a->x + j * a->ldx + c * BK + 16 * h));
				xo[j] = _mm256_castsi256_ps(_mm256_and_si256(xv, m));
				xe[j] = _mm256_castsi256_ps(_mm256_slli_epi32(xv, 16));
			}
#pragma GCC unroll 2
			for (int r = 0; r < R; r++) {
				__m256i wv = _mm256_loadu_si256((const __m256i*)(wp[r] + 16 * h));
				__m256 wo = _mm256_castsi256_ps(_mm256_and_si256(wv, m));
				__m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(wv, 16));
#pragma GCC unroll 2
				for (int j = 0; j < T; j++) {
					__m256* acc = h ? &hi[r][j] : &lo[r][j];
					*acc = _mm256_fmadd_ps(wo, xo[j], *acc);
					*acc = _mm256_fmadd_ps(we, xe[j], *acc);
				}
			}
		}
	}
#pragma GCC unroll 2
	for (int r = 0; r < R; r++)
#pragma GCC unroll 2
		for (int j = 0; j < T; j++) store_out(a, r, j, tree256(lo[r][j], hi[r][j]));
}

// ---- Few tokens (decode): whole rows, one after another. Each output is
// the same lane computation as in the tiles above; only the order in which
// rows are visited differs, and that changes no bits. Reading rows in
// memory order makes the weights one linear stream that the hardware
// prefetcher follows across rows, where interleaving several rows (the
// tiles) makes as many short streams of k·2 bytes each (2 KB at k = 1024),
// too short to be learned before they end: at the Qwen3-0.6B head
// (151,936 × 1024) one core read 34 GB/s this way against 26 GB/s with
// 8-row tiles and 39 GB/s for a plain streaming sum of the same bytes. The
// rows' dependency chains (one per row and token) are independent, so
// out-of-order execution overlaps one row's tail with the next row's head.
// Up to 8 tokens share each weight load (a few sequences decoding
// together): at 2–8 tokens this streamed the head at 24–30 GB/s on one
// core against 14–24 GB/s with the tiles, whose register blocking pays
// only beyond that.
// A last partial chunk is copied, zero-padded, to tail.
AGB_BF16 AGV_INLINE void rows_bf16_t(const tile_args* a, int64_t r_lo, int64_t r_hi, const int T) {
	const int64_t k = a->k;
	for (int64_t r = r_lo; r < r_hi; r++) {
		const uint16_t* wr = a->w + r * k;
		__m512 acc[8];
#pragma GCC unroll 8
		for (int j = 0; j < T; j++) acc[j] = _mm512_setzero_ps();
		for (int64_t c = 0; c < a->nfull; c++) {
			__m512bh wv = (__m512bh)_mm512_loadu_si512(wr + c * BK);
#pragma GCC unroll 8
			for (int j = 0; j < T; j++)
				acc[j] = _mm512_dpbf16_ps(acc[j], wv, (__m512bh)_mm512_loadu_si512(a->x + j * a->ldx + c * BK));
		}
		if (a->nfull * BK < k) {
			uint16_t tail[BK] __attribute__((aligned(64))) = {0};
			memcpy(tail, wr + a->nfull * BK, (size_t)(k - a->nfull * BK) * sizeof(uint16_t));
			__m512bh wv = (__m512bh)_mm512_load_si512(tail);
#pragma GCC unroll 8
			for (int j = 0; j < T; j++)
				acc[j] = _mm512_dpbf16_ps(acc[j], wv, (__m512bh)_mm512_loadu_si512(a->x + j * a->ldx + a->nfull * BK));
		}
#pragma GCC unroll 8
		for (int j = 0; j < T; j++) store_out(a, (int)r, j, agv_tree512(acc[j]));
	}
}

AGV_AVX512 AGV_INLINE void rows_512_t(const tile_args* a, int64_t r_lo, int64_t r_hi, const int T) {
	const int64_t k = a->k;
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	for (int64_t r = r_lo; r < r_hi; r++) {
		const uint16_t* wr = a->w + r * k;
		__m512 acc[8];
#pragma GCC unroll 8
		for (int j = 0; j < T; j++) acc[j] = _mm512_setzero_ps();
		uint16_t tail[BK] __attribute__((aligned(64)));
		for (int64_t c = 0; c <= a->nfull; c++) {
			const uint16_t* wp = wr + c * BK;
			if (c == a->nfull) {
				if (c * BK == k) break;
				memset(tail, 0, sizeof(tail));
				memcpy(tail, wp, (size_t)(k - c * BK) * sizeof(uint16_t));
				wp = tail;
			}
			__m512i wv = _mm512_loadu_si512(wp);
			__m512 wo = _mm512_castsi512_ps(_mm512_and_si512(wv, hi));
			__m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(wv, 16));
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				__m512i xv = _mm512_loadu_si512(a->x + j * a->ldx + c * BK);
				acc[j] = _mm512_fmadd_ps(wo, _mm512_castsi512_ps(_mm512_and_si512(xv, hi)), acc[j]);
				acc[j] = _mm512_fmadd_ps(we, _mm512_castsi512_ps(_mm512_slli_epi32(xv, 16)), acc[j]);
			}
		}
#pragma GCC unroll 8
		for (int j = 0; j < T; j++) store_out(a, (int)r, j, agv_tree512(acc[j]));
	}
}

// The whole-row decode path (rows_bf16) walks AGL_BF16_ROWPAIR rows at
// once (4 for up to 4 tokens, 2 for 5–8: the accumulators must fit in
// registers), each from its own part of the row range, and prefetches
// each part's weights AGL_BF16_PF elements (1.5 KB) ahead. Measured on one
// core (thread CPU time, a whole 0.6B-shape decode step, alternating
// builds, loaded machine): one row at a time 0.71–0.76 of the best
// streaming read; 2 rows 0.80–0.82; 4 rows 0.81–0.84; 4 rows with the
// prefetch 256 / 512 / 1024 / 2048 elements ahead 0.84–0.86 / 0.87–0.96 /
// 0.89–0.91 / 0.80–0.83; 2 rows with it 0.82–0.86. Both can be changed when
// compiling, for measuring (AGL_BF16_ROWPAIR 1 restores one row at a time,
// AGL_BF16_PF 0 turns the prefetch off). The AVX-512F emulation (CPUs
// without AVX512_BF16) does the same with rowsn_512_t (4 rows for 1–2
// tokens, 2 for 3–4; AGL_BF16_ROWS512 0 turns it off): run at that level
// here, 0.69–0.82 → 0.85–0.96 of the best read at 1 token, 0.67–0.70 →
// 0.77–0.83 at 2, 0.45–0.53 → 0.61–0.66 at 4 (prefetching
// AGL_BF16_PF512 elements ahead). Later, whole batch-1 decode steps of two
// engines side by side (interleave.mjs, medians of 8–10 A B B A rounds),
// against 512 elements: 768 (1.5 KB) +2 % at the Qwen3-4B shape (twice)
// and at 1.7B, ±0 at 0.6B; 1024 −2 to −3 % at 4B.
#ifndef AGL_BF16_PF
#define AGL_BF16_PF 768
#endif
#ifndef AGL_BF16_PF512
#define AGL_BF16_PF512 512
#endif
#ifndef AGL_BF16_ROWPAIR
#define AGL_BF16_ROWPAIR 4
#endif
// NR rows at once, one from each of NR equal parts of [r_lo, r_hi): rows
// r_lo+s·part+i (s < NR) go through their chunks in lockstep, so NR
// dependency chains per token run side by side and the weights are NR
// linear streams (each part in memory order) for the hardware prefetcher.
// Rows past NR·part are done one by one. Each output's lanes, chunk order
// and tree are those of rows_bf16_t, so the bits are the same. (The
// prefetch names up to 1.5 KB past a part or the matrix: a prefetch never
// faults.)
AGB_BF16 AGV_INLINE void rowsn_bf16_t(const int NR, const tile_args* a, int64_t r_lo, int64_t r_hi, const int T) {
	const int64_t k = a->k, part = (r_hi - r_lo) / NR, nfull = a->nfull;
	for (int64_t i = 0; i < part; i++) {
		const uint16_t* w[4];
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++) w[s] = a->w + (r_lo + s * part + i) * k;
		__m512 acc[4][8];
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++)
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) acc[s][j] = _mm512_setzero_ps();
		for (int64_t c = 0; c < nfull; c++) {
			__m512bh wv[4];
#if AGL_BF16_PF
#pragma GCC unroll 4
			for (int s = 0; s < NR; s++) _mm_prefetch((const char*)(w[s] + c * BK + AGL_BF16_PF), _MM_HINT_T0);
#endif
#pragma GCC unroll 4
			for (int s = 0; s < NR; s++) wv[s] = (__m512bh)_mm512_loadu_si512(w[s] + c * BK);
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				__m512bh xv = (__m512bh)_mm512_loadu_si512(a->x + j * a->ldx + c * BK);
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) acc[s][j] = _mm512_dpbf16_ps(acc[s][j], wv[s], xv);
			}
		}
		if (nfull * BK < k) {
			uint16_t tl[4][BK] __attribute__((aligned(64)));
			memset(tl, 0, sizeof(tl));
#pragma GCC unroll 4
			for (int s = 0; s < NR; s++) memcpy(tl[s], w[s] + nfull * BK, (size_t)(k - nfull * BK) * sizeof(uint16_t));
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				__m512bh xv = (__m512bh)_mm512_loadu_si512(a->x + j * a->ldx + nfull * BK);
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) acc[s][j] = _mm512_dpbf16_ps(acc[s][j], (__m512bh)_mm512_load_si512(tl[s]), xv);
			}
		}
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++)
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) store_out(a, r_lo + s * part + i, j, agv_tree512(acc[s][j]));
	}
	if (r_lo + NR * part < r_hi) rows_bf16_t(a, r_lo + NR * part, r_hi, T);
}

// rows_* take a with w, bias and y at row 0 (stores index them by r).
AGB_BF16 static void rows_bf16(const tile_args* a, int64_t r_lo, int64_t r_hi, int T) {
	if (AGL_BF16_ROWPAIR >= 4 && T <= 4) {
		switch (T) {
		case 1: rowsn_bf16_t(4, a, r_lo, r_hi, 1); break;
		case 2: rowsn_bf16_t(4, a, r_lo, r_hi, 2); break;
		case 3: rowsn_bf16_t(4, a, r_lo, r_hi, 3); break;
		case 4: rowsn_bf16_t(4, a, r_lo, r_hi, 4); break;
		}
		return;
	}
	if (AGL_BF16_ROWPAIR >= 2) {
		switch (T) {
		case 1: rowsn_bf16_t(2, a, r_lo, r_hi, 1); break;
		case 2: rowsn_bf16_t(2, a, r_lo, r_hi, 2); break;
		case 3: rowsn_bf16_t(2, a, r_lo, r_hi, 3); break;
		case 4: rowsn_bf16_t(2, a, r_lo, r_hi, 4); break;
		case 5: rowsn_bf16_t(2, a, r_lo, r_hi, 5); break;
		case 6: rowsn_bf16_t(2, a, r_lo, r_hi, 6); break;
		case 7: rowsn_bf16_t(2, a, r_lo, r_hi, 7); break;
		case 8: rowsn_bf16_t(2, a, r_lo, r_hi, 8); break;
		}
		return;
	}
	switch (T) {
	case 1: rows_bf16_t(a, r_lo, r_hi, 1); break;
	case 2: rows_bf16_t(a, r_lo, r_hi, 2); break;
	case 3: rows_bf16_t(a, r_lo, r_hi, 3); break;
	case 4: rows_bf16_t(a, r_lo, r_hi, 4); break;
	case 5: rows_bf16_t(a, r_lo, r_hi, 5); break;
	case 6: rows_bf16_t(a, r_lo, r_hi, 6); break;
	case 7: rows_bf16_t(a, r_lo, r_hi, 7); break;
	case 8: rows_bf16_t(a, r_lo, r_hi, 8); break;
	}
}

// rowsn_bf16_t for the AVX-512F emulation (rows_512_t's lanes): NR rows
// from NR parts of the range in lockstep, each part's weights prefetched
// AGL_BF16_PF512 elements ahead; the activations' halves are split once per
// chunk and token for all NR rows.
AGV_AVX512 AGV_INLINE void rowsn_512_t(const int NR, const tile_args* a, int64_t r_lo, int64_t r_hi, const int T) {
	const int64_t k = a->k, part = (r_hi - r_lo) / NR, nfull = a->nfull;
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	for (int64_t i = 0; i < part; i++) {
		const uint16_t* w[4];
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++) w[s] = a->w + (r_lo + s * part + i) * k;
		__m512 acc[4][4];
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++)
#pragma GCC unroll 4
			for (int j = 0; j < T; j++) acc[s][j] = _mm512_setzero_ps();
		uint16_t tl[4][BK] __attribute__((aligned(64)));
		for (int64_t c = 0; c <= nfull; c++) {
			const uint16_t* wp[4];
			if (c == nfull) {
				if (c * BK == k) break;
				memset(tl, 0, sizeof(tl));
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) {
					memcpy(tl[s], w[s] + c * BK, (size_t)(k - c * BK) * sizeof(uint16_t));
					wp[s] = tl[s];
				}
			} else {
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) {
#if AGL_BF16_PF512
					_mm_prefetch((const char*)(w[s] + c * BK + AGL_BF16_PF512), _MM_HINT_T0);
#endif
					wp[s] = w[s] + c * BK;
				}
			}
			emu_chunk512(acc, wp, NR, a, c, T, hi);
		}
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++)
#pragma GCC unroll 4
			for (int j = 0; j < T; j++) store_out(a, r_lo + s * part + i, j, agv_tree512(acc[s][j]));
	}
	if (r_lo + NR * part < r_hi) rows_512_t(a, r_lo + NR * part, r_hi, T);
}

AGV_AVX512 static void rows_512(const tile_args* a, int64_t r_lo, int64_t r_hi, int T) {
#ifndef AGL_BF16_ROWS512
#define AGL_BF16_ROWS512 1
#endif
	if (AGL_BF16_ROWS512 && AGL_BF16_ROWPAIR >= 4 && T <= 2) {
		if (T == 1) rowsn_512_t(4, a, r_lo, r_hi, 1);
		else rowsn_512_t(4, a, r_lo, r_hi, 2);
		return;
	}
	if (AGL_BF16_ROWS512 && AGL_BF16_ROWPAIR >= 2 && T <= 4) {
		switch (T) {
		case 1: rowsn_512_t(2, a, r_lo, r_hi, 1); break;
		case 2: rowsn_512_t(2, a, r_lo, r_hi, 2); break;
		case 3: rowsn_512_t(2, a, r_lo, r_hi, 3); break;
		case 4: rowsn_512_t(2, a, r_lo, r_hi, 4); break;
		}
		return;
	}
	switch (T) {
	case 1: rows_512_t(a, r_lo, r_hi, 1); break;
	case 2: rows_512_t(a, r_lo, r_hi, 2); break;
	case 3: rows_512_t(a, r_lo, r_hi, 3); break;
	case 4: rows_512_t(a, r_lo, r_hi, 4); break;
	case 5: rows_512_t(a, r_lo, r_hi, 5); break;
	case 6: rows_512_t(a, r_lo, r_hi, 6); break;
	case 7: rows_512_t(a, r_lo, r_hi, 7); break;
	case 8: rows_512_t(a, r_lo, r_hi, 8); break;
	}
}

// AGL_BF16_ROWS_T is the most tokens the whole-row path takes (at most 8;
// defining it when compiling changes it, for measuring; 0 turns it off).
#ifndef AGL_BF16_ROWS_T
#define AGL_BF16_ROWS_T 8
#endif

#define CASE_T(F, R, TMAX)                          \
	switch (T) {                                    \
	case 1: F(a, R, 1); break;                      \
	case 2: if (TMAX >= 2) F(a, R, TMAX >= 2 ? 2 : 1); break; \
	case 3: if (TMAX >= 3) F(a, R, TMAX >= 3 ? 3 : 1); break; \
	case 4: if (TMAX >= 4) F(a, R, TMAX >= 4 ? 4 : 1); break; \
	case 5: if (TMAX >= 5) F(a, R, TMAX >= 5 ? 5 : 1); break; \
	case 6: if (TMAX >= 6) F(a, R, TMAX >= 6 ? 6 : 1); break; \
	}

// R ≤ 8 with T ≤ 2 (decode: more rows streamed at once), or R ≤ 4 with T ≤ 6.
AGB_BF16 static void tile_bf16(const tile_args* a, int R, int T) {
	switch (R) {
	case 1: CASE_T(tile_bf16_rt, 1, 6) break;
	case 2: CASE_T(tile_bf16_rt, 2, 6) break;
	case 3: CASE_T(tile_bf16_rt, 3, 6) break;
	case 4: CASE_T(tile_bf16_rt, 4, 6) break;
	case 5: CASE_T(tile_bf16_rt, 5, 2) break;
	case 6: CASE_T(tile_bf16_rt, 6, 2) break;
	case 7: CASE_T(tile_bf16_rt, 7, 2) break;
	case 8: CASE_T(tile_bf16_rt, 8, 2) break;
	}
}

// R ≤ 8 with T = 1, or R ≤ 4 with T ≤ 4.
AGV_AVX512 static void tile_512(const tile_args* a, int R, int T) {
	switch (R) {
	case 1: CASE_T(tile_512_rt, 1, 4) break;
	case 2: CASE_T(tile_512_rt, 2, 4) break;
	case 3: CASE_T(tile_512_rt, 3, 4) break;
	case 4: CASE_T(tile_512_rt, 4, 4) break;
	case 5: CASE_T(tile_512_rt, 5, 1) break;
	case 6: CASE_T(tile_512_rt, 6, 1) break;
	case 7: CASE_T(tile_512_rt, 7, 1) break;
	case 8: CASE_T(tile_512_rt, 8, 1) break;
	}
}

AGV_AVX2 static void tile_256(const tile_args* a, int R, int T) {
	switch (R) {
	case 1: CASE_T(tile_256_rt, 1, 2) break;
	case 2: CASE_T(tile_256_rt, 2, 2) break;
	}
}

// ---- Many tokens at AVX-512 BF16: rows in the lanes. The tiles above
// give each output a register of 16 lane sums and end with a horizontal
// tree per output (shuffles and adds: a quarter of the work at k = 1024).
// Here a zmm instead holds lane i's sum for 16 rows. Lane i of output
// (r, j) only ever sees the pairs (32c+2i, 32c+2i+1) of row r and token j,
// so its chain over the chunks c can run on its own, with row r's pair in
// zmm lane r (the weights packed so) and token j's pair broadcast to every
// lane. vdpbf16ps does the same two products and adds in the same order in
// each lane as in the tiles, so every lane sum has the same bits; the 16
// lane sums of 16 rows are then combined by the same tree with vertical
// adds, and the result is a run of 16 consecutive outputs of y. The lanes
// are visited in bit-reversed order (0, 8, 4, 12, …) so that the tree
// folds in as a binary counter: a partial waits only until its sibling is
// done, at most 4 levels of them.
#ifndef OUT_R
#define OUT_R 5 // 16-row groups per panel (80 rows)
#endif
#ifndef OUT_T
#define OUT_T 5 // tokens per tile: 25 accumulators + 5 weight registers + 1 broadcast
#endif

static const uint8_t lane_order[16] = {0, 8, 4, 12, 2, 10, 6, 14, 1, 9, 5, 13, 3, 11, 7, 15};

// The packed activations: tiles of OUT_T tokens; in each, pass s (lane
// i = lane_order[s]) reads one contiguous run xp[tile][s][c][j] of the
// pairs (32c+2i, 32c+2i+1) of token j as 32-bit words (even element low,
// as in memory), and the passes follow one another in memory too. Tokens
// past t and elements past k are zero.
int64_t agl_bf16_act_tiles(int64_t t) { return (t + OUT_T - 1) / OUT_T; }

int64_t agl_bf16_panel_rows(void) { return 16 * OUT_R; }

int64_t agl_bf16_act_words(int64_t t, int64_t k) {
	return (t + OUT_T - 1) / OUT_T * OUT_T * 16 * ((k + BK - 1) / BK);
}

// tr16 transposes 16 vectors of 16 32-bit words: out[e] word j = in[j] word e.
AGB_BF16 AGV_INLINE void tr16(__m512i v[16]) {
	__m512i t[16], u[16];
#pragma GCC unroll 8
	for (int p = 0; p < 8; p++) {
		t[2 * p] = _mm512_unpacklo_epi32(v[2 * p], v[2 * p + 1]);
		t[2 * p + 1] = _mm512_unpackhi_epi32(v[2 * p], v[2 * p + 1]);
	}
	// u[4q+m], 128-bit lane L: rows 4q..4q+3, word 4L+m.
#pragma GCC unroll 4
	for (int q = 0; q < 4; q++) {
		u[4 * q] = _mm512_unpacklo_epi64(t[4 * q], t[4 * q + 2]);
		u[4 * q + 1] = _mm512_unpackhi_epi64(t[4 * q], t[4 * q + 2]);
		u[4 * q + 2] = _mm512_unpacklo_epi64(t[4 * q + 1], t[4 * q + 3]);
		u[4 * q + 3] = _mm512_unpackhi_epi64(t[4 * q + 1], t[4 * q + 3]);
	}
#pragma GCC unroll 4
	for (int m = 0; m < 4; m++) {
		__m512i a = _mm512_shuffle_i32x4(u[m], u[4 + m], 0x88), b = _mm512_shuffle_i32x4(u[m], u[4 + m], 0xdd);
		__m512i c = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0x88), d = _mm512_shuffle_i32x4(u[8 + m], u[12 + m], 0xdd);
		v[m] = _mm512_shuffle_i32x4(a, c, 0x88);
		v[8 + m] = _mm512_shuffle_i32x4(a, c, 0xdd);
		v[4 + m] = _mm512_shuffle_i32x4(b, d, 0x88);
		v[12 + m] = _mm512_shuffle_i32x4(b, d, 0xdd);
	}
}

// round16 rounds 16 floats to bf16 as f32_to_bf16 does, in the low halves.
AGB_BF16 AGV_INLINE __m512i round16(__m512 f) {
	const __m512i u = _mm512_castps_si512(f);
	const __m512i one = _mm512_set1_epi32(1);
	__m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), _mm512_and_si512(_mm512_srli_epi32(u, 16), one)));
	r = _mm512_srli_epi32(r, 16);
	const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
	return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
}

// chunk32 rounds token row xr's chunk c (elements past k zero) into 16
// pair words.
AGB_BF16 AGV_INLINE __m512i chunk32(const float* xr, int64_t k, int64_t c) {
	const int64_t e = 32 * c, left = k - e;
	__m512 a, b;
	if (left >= 32) {
		a = _mm512_loadu_ps(xr + e);
		b = _mm512_loadu_ps(xr + e + 16);
	} else {
		a = _mm512_maskz_loadu_ps(left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1), xr + e);
		b = _mm512_maskz_loadu_ps(left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : 0, xr + e + 16);
	}
	// The rounding of a zero is zero, so the padding stays zero.
	const __m256i lo = _mm512_cvtepi32_epi16(round16(a)), hi = _mm512_cvtepi32_epi16(round16(b));
	return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

AGB_BF16 static void pack_act_bf16(const float* x, int64_t t, int64_t k, int64_t tile_lo, int64_t tile_hi, uint32_t* xp) {
	// G chunks of the tile's tokens at a time (G·OUT_T ≤ 16 rows of a
	// transpose): transposed, lane i's words of chunks c … c+G-1 are one
	// run of G·OUT_T words.
	enum { G = 16 / OUT_T };
	const int64_t nc = (k + BK - 1) / BK;
	for (int64_t tile = tile_lo; tile < tile_hi; tile++) {
		uint32_t* dst = xp + tile * OUT_T * 16 * nc;
		for (int64_t c = 0; c < nc; c += G) {
			__m512i v[16];
#pragma GCC unroll 16
			for (int q = 0; q < 16; q++) {
				const int64_t j = tile * OUT_T + q % OUT_T, cq = c + q / OUT_T;
				v[q] = q < G * OUT_T && j < t && cq < nc ? chunk32(x + j * k, k, cq) : _mm512_setzero_si512();
			}
			tr16(v);
			const int64_t g = nc - c < G ? nc - c : G;
			const __mmask16 m = (__mmask16)((1u << (g * OUT_T)) - 1);
#pragma GCC unroll 16
			for (int i = 0; i < 16; i++) _mm512_mask_storeu_epi32(dst + ((int64_t)lane_order[i] * nc + c) * OUT_T, m, v[i]);
		}
	}
}

void agl_bf16_pack_act(const float* x, int64_t t, int64_t k, int64_t tile_lo, int64_t tile_hi, uint32_t* xp) {
	pack_act_bf16(x, t, k, tile_lo, tile_hi, xp);
}

int64_t agl_bf16_panel_words(int64_t k) { return 16 * OUT_R * 16 * ((k + BK - 1) / BK); }

// pack_panel writes rows [r0, r0+16R) of w (those ≥ r_hi as zero) as
// pk[s][c][row], for lane i = lane_order[s] the pair (w[row][32c+2i],
// w[row][32c+2i+1]) as one 32-bit word, for nc chunks, zero past k: 16
// rows' chunk c, transposed. (lane_order is its own inverse.)
AGB_BF16 static void pack_panel(const uint16_t* w, int64_t k, int64_t nc, int64_t r0, int64_t r_hi, int R, uint32_t* pk) {
	const int64_t rw = 16 * (int64_t)R;
	for (int g = 0; g < R; g++) {
		for (int64_t c = 0; c < nc; c++) {
			const int64_t left = k - 32 * c;
			const __mmask32 m = left >= 32 ? (__mmask32)0xffffffffu : (__mmask32)((1u << left) - 1);
			__m512i v[16];
#pragma GCC unroll 16
			for (int r = 0; r < 16; r++) {
				const int64_t row = r0 + 16 * g + r;
				v[r] = row < r_hi ? _mm512_maskz_loadu_epi16(m, w + row * k + 32 * c) : _mm512_setzero_si512();
			}
			tr16(v);
#pragma GCC unroll 16
			for (int i = 0; i < 16; i++) _mm512_storeu_si512(pk + ((int64_t)lane_order[i] * nc + c) * rw + 16 * g, v[i]);
		}
	}
}

// outer_tile: a panel of R 16-row groups (packed as above) × T tokens of
// one packed activation tile: 16 passes of R·T accumulators over all
// chunks, each 16 rows × 1 token of one lane. y is the output of the panel's row 0 and the
// tile's token 0 (stride n); rows past nrows are neither read nor stored.
AGB_BF16 AGV_INLINE void outer_tile(const uint32_t* pk, int64_t nc, const uint32_t* xt, float* y, int64_t n,
                                    const float* bias, int nrows, const int R, const int T) {
	__m512 stk[4][OUT_R][OUT_T] __attribute__((aligned(64)));
	const int64_t rw = 16 * (int64_t)R;
	for (int s = 0; s < 16; s++) {
		__m512 acc[OUT_R][OUT_T];
#pragma GCC unroll 6
		for (int r = 0; r < R; r++)
#pragma GCC unroll 12
			for (int j = 0; j < T; j++) acc[r][j] = _mm512_setzero_ps();
		const uint32_t* wp = pk + (int64_t)s * nc * rw;
		const uint32_t* xp = xt + (int64_t)s * nc * OUT_T;
		for (int64_t c = 0; c < nc; c++) {
			__m512bh wv[OUT_R];
#pragma GCC unroll 6
			for (int r = 0; r < R; r++) wv[r] = (__m512bh)_mm512_loadu_si512(wp + c * rw + 16 * r);
#pragma GCC unroll 12
			for (int j = 0; j < T; j++) {
				__m512bh xv = (__m512bh)_mm512_set1_epi32((int)xp[c * OUT_T + j]);
#pragma GCC unroll 6
				for (int r = 0; r < R; r++) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], wv[r], xv);
			}
		}
		// Fold into the tree: step s completes one level per trailing one bit.
		int lvl = 0;
		for (; (s >> lvl) & 1; lvl++) {
#pragma GCC unroll 6
			for (int r = 0; r < R; r++)
#pragma GCC unroll 12
				for (int j = 0; j < T; j++) acc[r][j] = _mm512_add_ps(stk[lvl][r][j], acc[r][j]);
		}
		if (s < 15) {
#pragma GCC unroll 6
			for (int r = 0; r < R; r++)
#pragma GCC unroll 12
				for (int j = 0; j < T; j++) stk[lvl][r][j] = acc[r][j];
			continue;
		}
#pragma GCC unroll 6
		for (int r = 0; r < R; r++) {
			const int left = nrows - 16 * r;
			const __mmask16 m = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
			const __m512 b = bias ? _mm512_maskz_loadu_ps(m, bias + 16 * r) : _mm512_setzero_ps();
#pragma GCC unroll 12
			for (int j = 0; j < T; j++) {
				// The tiles add the bias to the tree's sum; so does this.
				const __m512 v = bias ? _mm512_add_ps(acc[r][j], b) : acc[r][j];
				_mm512_mask_storeu_ps(y + j * n + 16 * r, m, v);
			}
		}
	}
}

#define OUT_TILE(R, TT) outer_tile(pk, nc, xt, y, n, bias, nrows, R, OUT_T >= TT ? TT : 1)
#define OUT_CASE_T(R)                                      \
	switch (T) {                                           \
	case 1: OUT_TILE(R, 1); break;                         \
	case 2: OUT_TILE(R, 2); break;                         \
	case 3: OUT_TILE(R, 3); break;                         \
	case 4: OUT_TILE(R, 4); break;                         \
	case 5: OUT_TILE(R, 5); break;                         \
	case 6: OUT_TILE(R, 6); break;                         \
	case 7: OUT_TILE(R, 7); break;                         \
	case 8: OUT_TILE(R, 8); break;                         \
	case 9: OUT_TILE(R, 9); break;                         \
	case 10: OUT_TILE(R, 10); break;                       \
	case 11: OUT_TILE(R, 11); break;                       \
	case 12: OUT_TILE(R, 12); break;                       \
	}

AGB_BF16 static void outer_tile_any(const uint32_t* pk, int64_t nc, const uint32_t* xt, float* y, int64_t n,
                                    const float* bias, int nrows, int R, int T) {
	switch (R) {
	case 1: OUT_CASE_T(1) break;
	case 2: if (OUT_R >= 2) OUT_CASE_T(OUT_R >= 2 ? 2 : 1) break;
	case 3: if (OUT_R >= 3) OUT_CASE_T(OUT_R >= 3 ? 3 : 1) break;
	case 4: if (OUT_R >= 4) OUT_CASE_T(OUT_R >= 4 ? 4 : 1) break;
	case 5: if (OUT_R >= 5) OUT_CASE_T(OUT_R >= 5 ? 5 : 1) break;
	case 6: if (OUT_R >= 6) OUT_CASE_T(OUT_R >= 6 ? 6 : 1) break;
	}
}

void agl_gemm_bf16_many(const uint32_t* xp, int64_t t, int64_t k, const uint16_t* w, int64_t n, const float* bias,
                        float* y, int64_t r_lo, int64_t r_hi, uint32_t* pk) {
	const int64_t nc = (k + BK - 1) / BK;
	for (int64_t r0 = r_lo; r0 < r_hi; r0 += 16 * OUT_R) {
		const int nrows = r_hi - r0 < 16 * OUT_R ? (int)(r_hi - r0) : 16 * OUT_R;
		const int R = (nrows + 15) / 16;
		pack_panel(w, k, nc, r0, r_hi, R, pk);
		for (int64_t j0 = 0; j0 < t; j0 += OUT_T) {
			const int T = t - j0 < OUT_T ? (int)(t - j0) : OUT_T;
			outer_tile_any(pk, nc, xp + j0 * 16 * nc, y + j0 * n + r0, n, bias ? bias + r0 : NULL, nrows, R, T);
		}
	}
}

void agl_gemm_bf16(int level, const uint16_t* xb, int64_t t, int64_t k, int64_t ldx, const uint16_t* w,
                   int64_t n, const float* bias, float* y, int64_t r_lo, int64_t r_hi) {
	void (*tile)(const tile_args*, int, int);
	int rmax, tmax;
	if (level >= 3) {
		tile = tile_bf16;
		rmax = t <= 2 ? 8 : 4;
		tmax = t <= 2 ? 2 : 6;
	} else if (level == 2) {
		tile = tile_512;
		rmax = t == 1 ? 8 : 4;
		tmax = t == 1 ? 1 : 4;
	} else if (level == 1) {
		tile = tile_256;
		rmax = 2;
		tmax = 2;
	} else {
		tile = tile_generic;
		rmax = 1;
		tmax = 1;
	}
	int64_t nfull = k / BK, rem = k % BK;
	if (level >= 2 && t <= AGL_BF16_ROWS_T) {
		tile_args a = {w, k, xb, ldx, y, n, bias, nfull, NULL};
		(level >= 3 ? rows_bf16 : rows_512)(&a, r_lo, r_hi, (int)t);
		return;
	}
	uint16_t wtail[8 * BK];
	for (int64_t t0 = 0; t0 < t; t0 += TOK_BLOCK) {
		int64_t t1 = t0 + TOK_BLOCK < t ? t0 + TOK_BLOCK : t;
		for (int64_t r0 = r_lo; r0 < r_hi; r0 += rmax) {
			int R = r_hi - r0 < rmax ? (int)(r_hi - r0) : rmax;
			tile_args a = {w + r0 * k, k, NULL, ldx, NULL, n, bias ? bias + r0 : NULL, nfull, NULL};
			if (rem) {
				memset(wtail, 0, sizeof(wtail));
				for (int r = 0; r < R; r++) memcpy(wtail + r * BK, w + (r0 + r) * k + nfull * BK, rem * sizeof(uint16_t));
				a.wtail = wtail;
			}
			for (int64_t j0 = t0; j0 < t1; j0 += tmax) {
				int T = t1 - j0 < tmax ? (int)(t1 - j0) : tmax;
				a.x = xb + j0 * ldx;
				a.y = y + j0 * n + r0;
				tile(&a, R, T);
			}
		}
	}
}
