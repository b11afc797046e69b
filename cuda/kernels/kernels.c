#include "kernels.h"
#include "vecops.h"

#include <immintrin.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

int agl_cpu_level(void) {
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f")) return agl_cpu_has_bf16() ? 3 : 2;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return 1;
	return 0;
}

void agl_pack_rows(const float* w, int64_t n, int64_t k, float* out, int64_t row0) {
	for (int64_t r = 0; r < n; r++) {
		int64_t row = row0 + r;
		float* dst = out + (row / AGL_PANEL) * k * AGL_PANEL + row % AGL_PANEL;
		const float* src = w + r * k;
		for (int64_t kk = 0; kk < k; kk++) dst[kk * AGL_PANEL] = src[kk];
	}
}

// Built with -std=c11, which implies -ffp-contract=off: no a*b+c is fused
// behind our back, so results do not depend on the instruction set except
// where an explicit fma is written. The dot/axpy/RoPE helpers are in
// vecops.h, shared with cuda/train.

// ---------------------------------------------------------------- GEMM
//
// A tile is MR rows × (NP panels × 16) columns kept in registers while k
// runs over a block of at most KC_MAX; partial sums go through a small tile
// buffer between k blocks (stored float32 is exactly the register value, so
// the chain stays one chain).

// Tiles are up to 12 rows × 2 panels (prefill, batched decode) or up to 6
// rows × 4 panels (a few rows: more independent FMA chains per weight byte
// streamed). k blocks are long (≤ 1024, so a 2-panel block is ≤ 128 KB and
// stays in L2 while every row block reuses it): shorter blocks (128 was
// tried) mean more tile round trips and, worse, weight reads scattered in
// 8 KB pieces that the hardware prefetcher does not follow across pages.
// Beyond SMALL_MR rows the AVX-512 kernel prefetches the weights of the
// next block explicitly, a slice per row block, so they stream at an even
// rate while the current block computes from cache: at 32 rows this took
// the GEMM from ~120 to ~190 GFLOP/s per core with weights coming from
// memory (cached: ~196).
enum { KC_MAX = 1024, TILE_MR = 12, SMALL_MR = 6, TILE_NC = 64, PF_AHEAD = 16 };

// Bytes ahead that the few-token tiles prefetch in each of their panel
// streams. At batch 1 an fp32 matrix held in Half (the 1.7B shape packed
// from its bf16 checkpoint, two engines interleaved, 6–8 rounds each)
// decoded 9 % faster at 2 KB than with none, 9 % faster than at 1 KB and
// 6 % than at 3 KB; float32 panels (a 0.6B-shape checkpoint of full
// float32 values) were no faster or slower (1.01). Defining it when
// compiling changes it, for measuring.
#ifndef AGL_GEMM_PF
#define AGL_GEMM_PF 2048
#endif

// Weights come as float32 panels, or (h) as the same panels' bf16 halves
// when every value is a bf16 value (its float32 bits' lower half zero):
// the shift below widens them exactly, so every FMA sees the same weight
// and the results are the same bits while memory delivers half the bytes.
// Pointers to weights are void* and offsets are in elements.
AGV_INLINE const void* wat(const int h, const void* w, int64_t i) {
	return (const char*)w + i * (h ? 2 : 4);
}

static inline float wval(const int h, const void* w, int64_t i) {
	if (!h) return ((const float*)w)[i];
	uint32_t u = (uint32_t)((const uint16_t*)w)[i] << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

typedef void (*micro_fn)(int h, int mr, int np, const float* x, int64_t ldx, const void* w, int64_t ldw,
                         int64_t kc, float* tile, const void* pf, int pfdiv);

static void micro_generic(int h, int mr, int np, const float* x, int64_t ldx, const void* w,
                          int64_t ldw, int64_t kc, float* tile, const void* pf, int pfdiv) {
	(void)pf;
	(void)pfdiv;
	for (int r = 0; r < mr; r++) {
		for (int p = 0; p < np; p++) {
			for (int j = 0; j < AGL_PANEL; j++) {
				float acc = tile[r * TILE_NC + p * AGL_PANEL + j];
				for (int64_t kk = 0; kk < kc; kk++)
					acc = fmaf(x[r * ldx + kk], wval(h, w, p * ldw + kk * AGL_PANEL + j), acc);
				tile[r * TILE_NC + p * AGL_PANEL + j] = acc;
			}
		}
	}
}

AGV_AVX512 AGV_INLINE __m512 wload512(const int H, const void* w, int64_t i) {
	if (H)
		return _mm512_castsi512_ps(
		    _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)((const uint16_t*)w + i))), 16));
	return _mm512_loadu_ps((const float*)w + i);
}

AGV_AVX512 AGV_INLINE void mk512(const int H, const int MR, const int NP, const float* x, int64_t ldx, const void* w,
                         int64_t ldw, int64_t kc, float* tile, const void* pf, int pfdiv) {
	__m512 acc[TILE_MR][4];
#pragma GCC unroll 12
	for (int r = 0; r < MR; r++) {
#pragma GCC unroll 4
		for (int p = 0; p < NP; p++) acc[r][p] = _mm512_loadu_ps(tile + r * TILE_NC + p * 16);
	}
	int pfc = 0;
	int64_t pfi = 0;
	for (int64_t kk = 0; kk < kc; kk++) {
		// A few tokens (decode) stream each panel once: prefetch
		// AGL_GEMM_PF bytes ahead in each, once a cache line.
		if (AGL_GEMM_PF > 0 && !pf && MR <= SMALL_MR && (!H || (kk & 1) == 0)) {
#pragma GCC unroll 4
			for (int p = 0; p < NP; p++)
				_mm_prefetch((const char*)wat(H, w, p * ldw + kk * 16) + AGL_GEMM_PF, _MM_HINT_T0);
		}
		if (pf && ++pfc == pfdiv) {
			pfc = 0;
#pragma GCC unroll 4
			for (int p = 0; p < NP; p++) _mm_prefetch((const char*)wat(H, pf, pfi + p * ldw), _MM_HINT_T0);
			pfi += 16;
		}
		__m512 b[4];
#pragma GCC unroll 4
		for (int p = 0; p < NP; p++) b[p] = wload512(H, w, p * ldw + kk * 16);
#pragma GCC unroll 12
		for (int r = 0; r < MR; r++) {
			__m512 a = _mm512_set1_ps(x[r * ldx + kk]);
#pragma GCC unroll 4
			for (int p = 0; p < NP; p++) acc[r][p] = _mm512_fmadd_ps(a, b[p], acc[r][p]);
		}
	}
#pragma GCC unroll 12
	for (int r = 0; r < MR; r++) {
#pragma GCC unroll 4
		for (int p = 0; p < NP; p++) _mm512_storeu_ps(tile + r * TILE_NC + p * 16, acc[r][p]);
	}
}

#define MK512_NP(H, R)                                        \
	switch (np) {                                             \
	case 1: mk512(H, R, 1, x, ldx, w, ldw, kc, tile, pf, pfdiv); break; \
	case 2: mk512(H, R, 2, x, ldx, w, ldw, kc, tile, pf, pfdiv); break; \
	case 3: if (R <= SMALL_MR) mk512(H, R <= SMALL_MR ? R : 1, 3, x, ldx, w, ldw, kc, tile, pf, pfdiv); break; \
	case 4: if (R <= SMALL_MR) mk512(H, R <= SMALL_MR ? R : 1, 4, x, ldx, w, ldw, kc, tile, pf, pfdiv); break; \
	}

#define MK512_CASE(R)                \
	case R:                          \
		if (h) {                     \
			MK512_NP(1, R)           \
		} else {                     \
			MK512_NP(0, R)           \
		}                            \
		break;

AGV_AVX512 static void micro_avx512(int h, int mr, int np, const float* x, int64_t ldx, const void* w,
                                int64_t ldw, int64_t kc, float* tile, const void* pf, int pfdiv) {
	switch (mr) {
		MK512_CASE(1)
		MK512_CASE(2)
		MK512_CASE(3)
		MK512_CASE(4)
		MK512_CASE(5)
		MK512_CASE(6)
		MK512_CASE(7)
		MK512_CASE(8)
		MK512_CASE(9)
		MK512_CASE(10)
		MK512_CASE(11)
		MK512_CASE(12)
	}
}

AGV_AVX2 AGV_INLINE __m256 wload256(const int H, const void* w, int64_t i) {
	if (H)
		return _mm256_castsi256_ps(
		    _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)((const uint16_t*)w + i))), 16));
	return _mm256_loadu_ps((const float*)w + i);
}

// AVX2: a panel is two 8-wide registers; 6 rows × 1 panel = 12 accumulators.
AGV_AVX2 AGV_INLINE void mk256(const int H, const int MR, const float* x, int64_t ldx, const void* w, int64_t kc,
                       float* tile) {
	__m256 acc[6][2];
#pragma GCC unroll 6
	for (int r = 0; r < MR; r++) {
		acc[r][0] = _mm256_loadu_ps(tile + r * TILE_NC);
		acc[r][1] = _mm256_loadu_ps(tile + r * TILE_NC + 8);
	}
	for (int64_t kk = 0; kk < kc; kk++) {
		__m256 b0 = wload256(H, w, kk * 16);
		__m256 b1 = wload256(H, w, kk * 16 + 8);
#pragma GCC unroll 6
		for (int r = 0; r < MR; r++) {
			__m256 a = _mm256_set1_ps(x[r * ldx + kk]);
			acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
			acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
		}
	}
#pragma GCC unroll 6
	for (int r = 0; r < MR; r++) {
		_mm256_storeu_ps(tile + r * TILE_NC, acc[r][0]);
		_mm256_storeu_ps(tile + r * TILE_NC + 8, acc[r][1]);
	}
}

#define MK256_MR(H)                                             \
	switch (m) {                                                \
	case 1: mk256(H, 1, xr, ldx, wp, kc, tl); break;            \
	case 2: mk256(H, 2, xr, ldx, wp, kc, tl); break;            \
	case 3: mk256(H, 3, xr, ldx, wp, kc, tl); break;            \
	case 4: mk256(H, 4, xr, ldx, wp, kc, tl); break;            \
	case 5: mk256(H, 5, xr, ldx, wp, kc, tl); break;            \
	default: mk256(H, 6, xr, ldx, wp, kc, tl); break;           \
	}

AGV_AVX2 static void micro_avx2(int h, int mr, int np, const float* x, int64_t ldx, const void* w,
                            int64_t ldw, int64_t kc, float* tile, const void* pf, int pfdiv) {
	(void)pf;
	(void)pfdiv;
	for (int p = 0; p < np; p++) {
		for (int r0 = 0; r0 < mr; r0 += 6) {
			int m = mr - r0 < 6 ? mr - r0 : 6;
			const float* xr = x + r0 * ldx;
			const void* wp = wat(h, w, p * ldw);
			float* tl = tile + r0 * TILE_NC + p * AGL_PANEL;
			if (h) {
				MK256_MR(1)
			} else {
				MK256_MR(0)
			}
		}
	}
}

void agl_gemm(int level, const float* x, int64_t t, int64_t k, const void* wp, int half, int64_t n,
              const float* bias, float* y, int64_t p_lo, int64_t p_hi) {
	micro_fn micro = level >= 2 ? micro_avx512 : level == 1 ? micro_avx2 : micro_generic;
	const int h = half != 0;
	// With a single row block the weights are used once: stream whole
	// panels (no reuse to gain). Otherwise split k into equal blocks of at
	// most KC_MAX.
	int64_t nkb = (k + KC_MAX - 1) / KC_MAX;
	int64_t kcb = t <= TILE_MR || nkb <= 1 ? k : (k + nkb - 1) / nkb;
	int small = t <= SMALL_MR;
	int mrmax = small ? SMALL_MR : TILE_MR, npmax = small ? 4 : 2;
	if (kcb <= 0) kcb = 1;
	int nrb = (int)((t + mrmax - 1) / mrmax);
	float tile[TILE_MR * TILE_NC] __attribute__((aligned(64)));
	int64_t ldw = k * AGL_PANEL;
	for (int64_t kb = 0; kb < k || kb == 0; kb += kcb) {
		int64_t kc = k - kb < kcb ? k - kb : kcb;
		int last = kb + kc >= k;
		for (int64_t p = p_lo; p < p_hi; p += npmax) {
			int np = p_hi - p >= npmax ? npmax : (int)(p_hi - p);
			int64_t c0 = p * AGL_PANEL;
			int64_t nc = n - c0 < np * AGL_PANEL ? n - c0 : np * AGL_PANEL;
			if (nc <= 0) break;
			const void* w = wat(h, wp, p * ldw + kb * AGL_PANEL);
			// The weight block the next iteration reads: fetched while this
			// one computes, a slice per row block, so the weights stream
			// from memory at an even rate instead of stalling each block.
			const void* nextw = NULL;
			int first = !small && kb == 0 && p == p_lo;
			if (first) {
				for (int q = 0; q < np; q++)
					for (int l = 0; l < PF_AHEAD; l++)
						_mm_prefetch((const char*)wat(h, w, q * ldw + l * AGL_PANEL), _MM_HINT_T0);
			}
			if (!small) {
				if (p + npmax < p_hi) nextw = wat(h, wp, (p + npmax) * ldw + kb * AGL_PANEL);
				else if (kb + kc < k) nextw = wat(h, wp, p_lo * ldw + (kb + kc) * AGL_PANEL);
			}
			for (int64_t t0 = 0; t0 < t; t0 += mrmax) {
				int mr = t - t0 < mrmax ? (int)(t - t0) : mrmax;
				for (int r = 0; r < mr; r++) {
					float* tr = tile + r * TILE_NC;
					if (kb == 0) {
						memset(tr, 0, sizeof(float) * TILE_NC);
					} else {
						memcpy(tr, y + (t0 + r) * n + c0, sizeof(float) * nc);
					}
				}
				// The first block of a call has no predecessor that fetched
				// it: its first row block streams it PF_AHEAD lines ahead of
				// use and the others share the fetching of the next block.
				int rb = (int)(t0 / mrmax), parts = nrb, part = rb;
				const void* pf = NULL;
				if (first && nrb > 1) {
					parts = nrb - 1;
					part = rb - 1;
				}
				if (first && nrb > 1 && rb == 0) {
					pf = wat(h, w, PF_AHEAD * AGL_PANEL);
					parts = 1;
				} else if (nextw) {
					pf = wat(h, nextw, part * ((kc + parts - 1) / parts) * AGL_PANEL);
				}
				if (kc > 0) micro(h, mr, np, x + t0 * k + kb, k, w, ldw, kc, tile, pf, parts);
				for (int r = 0; r < mr; r++) {
					float* yr = y + (t0 + r) * n + c0;
					const float* tr = tile + r * TILE_NC;
					if (last && bias) {
						for (int64_t j = 0; j < nc; j++) yr[j] = tr[j] + bias[c0 + j];
					} else {
						memcpy(yr, tr, sizeof(float) * nc);
					}
				}
			}
		}
		if (k == 0) break;
	}
}

int agl_bf16_exact(const float* x, int64_t n) {
	const uint32_t* u = (const uint32_t*)x;
	uint32_t any = 0;
	for (int64_t i = 0; i < n; i++) any |= u[i];
	return (any & 0xffffu) == 0;
}

// ---------------------------------------------------------------- layer ops

void agl_rmsnorm(int level, const float* x, const float* w, float* y, int64_t rows, int64_t d,
                 float eps) {
	for (int64_t r = 0; r < rows; r++) {
		const float* xr = x + r * d;
		float* yr = y + r * d;
		float ms = agv_dot(level, xr, xr, d) / (float)d;
		float inv = 1.0f / sqrtf(ms + eps);
		for (int64_t i = 0; i < d; i++) yr[i] = w[i] * (xr[i] * inv);
	}
}

void agl_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride, const int32_t* pos,
              const float* inv_freq) {
	agv_rope(x, t, nheads, hd, stride, pos, inv_freq, 1.0f);
}

void agl_swiglu(int level, const float* gu, int64_t t, int64_t inter, float* out) {
	for (int64_t i = 0; i < t; i++) agv_swiglu(level, out + i * inter, gu + i * 2 * inter, gu + i * 2 * inter + inter, inter);
}

// ---------------------------------------------------------------- attention
//
// One (token, head) item at a time, whatever else is in the batch, so a
// token's result never depends on its neighbours. The AVX-512 path (head
// sizes 16, 32, 64, 128 and 256) works on 16 positions at once:
// each score is a lane-wise FMA chain over the head's 16-float chunks
// followed by one fixed reduction tree that turns 16 such vectors into the
// 16 scores; the exponentials are agv_exp512; the weighted sum of
// V rows stays in registers. It rounds differently from the scalar path
// (still within 1e-6 of a float64 reference), but always the same way for
// a given head size.

enum { ATT_MAXC = 16 }; // head size ≤ 16 chunks of 16 floats

// Row j of the result is the sum of the 16 lanes of a[j].
AGV_AVX512 AGV_INLINE __m512 hsum16x16(__m512 a[16]) {
	__m512 t[8], u[4];
	for (int i = 0; i < 8; i++)
		t[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
	for (int i = 0; i < 4; i++)
		u[i] = _mm512_add_ps(_mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0x44), _mm512_shuffle_ps(t[2 * i], t[2 * i + 1], 0xEE));
	__m512 y01 = _mm512_add_ps(_mm512_shuffle_f32x4(u[0], u[1], 0x88), _mm512_shuffle_f32x4(u[0], u[1], 0xDD));
	__m512 y23 = _mm512_add_ps(_mm512_shuffle_f32x4(u[2], u[3], 0x88), _mm512_shuffle_f32x4(u[2], u[3], 0xDD));
	return _mm512_add_ps(_mm512_shuffle_f32x4(y01, y23, 0x88), _mm512_shuffle_f32x4(y01, y23, 0xDD));
}

// Walks cache positions of a block table without dividing.
typedef struct {
	const int32_t* table;
	int64_t bs, blk, off, base;
} slot_iter;

// The table is read only when a position of a new block is asked for.
AGV_INLINE slot_iter slots_from(const int32_t* table, int64_t bs) {
	slot_iter it = {table, bs, -1, bs, 0};
	return it;
}

AGV_INLINE int64_t slot_next(slot_iter* it) {
	if (it->off == it->bs) {
		it->off = 0;
		it->base = (int64_t)it->table[++it->blk] * it->bs;
	}
	return it->base + it->off++;
}

// An iterator whose next slot is position p's (p must be a position of the
// table).
AGV_INLINE slot_iter slots_at(const int32_t* table, int64_t bs, int64_t p) {
	slot_iter it = {table, bs, p / bs, p % bs, (int64_t)table[p / bs] * bs};
	return it;
}

// A cache: the layer's K or V rows as stored (fp32, or bf16 bits when bf),
// from one KV head's first element; a row is stride bytes after the one
// before. Passed by value, so that in the inlined kernels its fields stay
// in registers: read through a pointer, the base and stride were loaded
// again for every row, and the paired-head K loop is bound by its loads
// (prefill attention ran 15 % slower).
typedef struct {
	const char* base;
	int64_t stride;
	int bf;
	int lines; // 64-byte lines of one head's row
} kv_rows;

AGV_INLINE const char* kv_row(kv_rows c, int64_t slot) { return c.base + slot * c.stride; }

// Prefetch of a decode token's rows into L2, ahead of the pass that reads
// them. Such a token's rows come from memory (an earlier step wrote them,
// and the cache is larger than L3 by far at long contexts). Within a block
// a KV head's rows are a stream of one row every nkv·hd values (4 KB at
// the 0.6B shape), which the hardware prefetchers follow, on into the next
// block when it lies right after this one; but the table puts the next
// block anywhere once the cache has been in use a while (sequences
// allocate blocks as they grow, interleaved with each other), and there
// the stream breaks and the pass waits on memory. So the rows of a block
// that does not follow its predecessor in memory are prefetched, 16 KB
// ahead (32 fp32 rows of head size 128): scattered blocks were read 1.4×
// (fp32) and 2.3× (bf16) faster on one thread, while prefetching contiguous
// blocks too cost 3–4 % (BENCHMARKS.md, "cuda: decode over long contexts").
// A prefill chunk's rows are not prefetched: its tokens read the same rows
// one after another, from cache after the first.
typedef struct {
	slot_iter it;
	int64_t p, n; // the next position to prefetch, and the end
	int skip;     // the block of position p − 1 follows its predecessor
} kv_pf;

// contiguous reports whether blocks lo..hi of a table lie one after another
// in memory.
AGV_INLINE int contiguous(const int32_t* table, int64_t lo, int64_t hi) {
	for (int64_t b = lo + 1; b <= hi; b++)
		if (table[b] != table[b - 1] + 1) return 0;
	return 1;
}

// kv_pf_start begins prefetching for a pass over positions [from, n): ahead
// rows past from. Nothing when ahead is 0, when from + ahead ≥ n (all rows
// near) or when the blocks to prefetch from are all contiguous (none to
// prefetch: a pass over them costs no per-row work).
AGV_INLINE kv_pf kv_pf_start(const int32_t* table, int64_t bs, int64_t from, int64_t ahead, int64_t n) {
	kv_pf f = {slots_from(table, bs), n, n, 0};
	if (ahead > 0 && from + ahead < n && !contiguous(table, (from + ahead) / bs, (n - 1) / bs)) {
		f.it = slots_at(table, bs, from + ahead);
		f.p = from + ahead;
	}
	return f;
}

AGV_INLINE void kv_prefetch_row(kv_rows c, int64_t slot) {
	const char* r = kv_row(c, slot);
	for (int l = 0; l < c.lines; l++) _mm_prefetch(r + 64 * l, _MM_HINT_T1);
}

AGV_INLINE void kv_pf_step(kv_pf* f, kv_rows c) {
	if (f->p >= f->n) return;
	int64_t slot = slot_next(&f->it);
	if (f->it.off == 1) // the first row of a block
		f->skip = f->it.blk > 0 && f->it.table[f->it.blk] == f->it.table[f->it.blk - 1] + 1;
	if (!f->skip) kv_prefetch_row(c, slot);
	f->p++;
}

// kv_pf_first prefetches the first min(ahead, n) rows: the V pass's start,
// issued while the K pass ends.
AGV_INLINE void kv_pf_first(kv_rows c, const int32_t* table, int64_t bs, int64_t ahead, int64_t n) {
	slot_iter it = slots_from(table, bs);
	for (int64_t p = 0; p < ahead && p < n; p++) kv_prefetch_row(c, slot_next(&it));
}

// 16 floats of a row from chunk c: fp32 as stored, bf16 widened (exactly: a
// bf16 value is the upper half of its float32).
AGV_AVX512 AGV_INLINE __m512 kv16(const int bf, const char* row, int c) {
	if (bf)
		return _mm512_castsi512_ps(
		    _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)(row + 32 * c))), 16));
	return _mm512_loadu_ps((const float*)(row + 64 * c));
}

// softmax512 turns the scores in scratch[0,n) (their running maximum in
// vmax) into exponentials exp(s − max) in place and sets inv to 1/their sum:
// the middle of attend512 and attend512_pair, one definition so both give
// the same bits.
AGV_AVX512 AGV_INLINE void softmax512(float* scratch, int64_t n, __m512 vmax, __m512* inv) {
	__m512 mx = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
	__m512 vsum = _mm512_setzero_ps();
	for (int64_t p0 = 0; p0 < n; p0 += 16) {
		int m = n - p0 < 16 ? (int)(n - p0) : 16;
		__mmask16 live = (__mmask16)(m == 16 ? 0xFFFF : (1u << m) - 1);
		__m512 e = _mm512_maskz_mov_ps(live, agv_exp512(_mm512_sub_ps(_mm512_loadu_ps(scratch + p0), mx)));
		vsum = _mm512_add_ps(vsum, e);
		_mm512_storeu_ps(scratch + p0, e);
	}
	*inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(vsum));
}

// score16 writes the scores of m ≤ 16 rows (row[j]) for query q (nc
// chunks in registers) to s[0,16) — −inf past m — and folds them into vmax:
// each score is one FMA chain over the chunks, the 16 chains reduced by one
// fixed tree (hsum16x16), times scale. One definition for attend512 and
// the decode groups, so that both give the same bits.
AGV_AVX512 AGV_INLINE void score16(const int nc, const int bf, const __m512* q, const char* const* row, int m,
                                   float scale, __m512* vmax, float* s) {
	__m512 acc[16];
	for (int j = 0; j < 16; j++) {
		if (j >= m) {
			acc[j] = _mm512_setzero_ps();
			continue;
		}
		__m512 a = _mm512_mul_ps(q[0], kv16(bf, row[j], 0));
#pragma GCC unroll 16
		for (int c = 1; c < nc; c++) a = _mm512_fmadd_ps(q[c], kv16(bf, row[j], c), a);
		acc[j] = a;
	}
	__mmask16 live = (__mmask16)(m == 16 ? 0xFFFF : (1u << m) - 1);
	__m512 sv = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live, _mm512_mul_ps(hsum16x16(acc), _mm512_set1_ps(scale)));
	*vmax = _mm512_max_ps(*vmax, sv);
	_mm512_storeu_ps(s, sv);
}

// weigh16 adds m ≤ 16 V rows, weighted by w[0,m), to o, one row after the
// other (each a lane-wise FMA).
AGV_AVX512 AGV_INLINE void weigh16(const int nc, const int bf, __m512* o, const char* const* row, int m,
                                   const float* w) {
	for (int j = 0; j < m; j++) {
		__m512 wj = _mm512_set1_ps(w[j]);
#pragma GCC unroll 16
		for (int c = 0; c < nc; c++) o[c] = _mm512_fmadd_ps(wj, kv16(bf, row[j], c), o[c]);
	}
}

// rows16 gathers the next m rows of an iterator, prefetching ahead.
AGV_INLINE void rows16(kv_rows c, slot_iter* it, kv_pf* f, int m, const char** row) {
	for (int j = 0; j < m; j++) {
		kv_pf_step(f, c);
		row[j] = kv_row(c, slot_next(it));
	}
}

// The K pass of positions [from, n) of one query (from a multiple of 16):
// scores to s, their maximum folded into vmax.
AGV_AVX512 AGV_INLINE void kpass(const int nc, const int bf, const __m512* q, kv_rows kc,
                                 const int32_t* table, int64_t bs, int64_t from, int64_t n, float scale,
                                 __m512* vmax, float* s, int64_t ahead) {
	if (from >= n) return;
	slot_iter it = slots_at(table, bs, from);
	kv_pf f = kv_pf_start(table, bs, from, ahead, n);
	for (int64_t p0 = from; p0 < n; p0 += 16) {
		int m = n - p0 < 16 ? (int)(n - p0) : 16;
		const char* row[16];
		rows16(kc, &it, &f, m, row);
		score16(nc, bf, q, row, m, scale, vmax, s + p0);
	}
}

// The V pass of positions [from, n) into o, weights s.
AGV_AVX512 AGV_INLINE void vpass(const int nc, const int bf, __m512* o, kv_rows vc, const int32_t* table,
                                 int64_t bs, int64_t from, int64_t n, const float* s, int64_t ahead) {
	if (from >= n) return;
	slot_iter it = slots_at(table, bs, from);
	kv_pf f = kv_pf_start(table, bs, from, ahead, n);
	for (int64_t p0 = from; p0 < n; p0 += 16) {
		int m = n - p0 < 16 ? (int)(n - p0) : 16;
		const char* row[16];
		rows16(vc, &it, &f, m, row);
		weigh16(nc, bf, o, row, m, s + p0);
	}
}

// One query head of nc 16-float chunks over n ≥ 1 cache positions; scratch
// holds n rounded up to 16. Inlined with a constant nc and bf for the
// common head sizes so that q and the output stay in registers. ahead > 0
// prefetches rows that far ahead (kv_pf).
AGV_AVX512 AGV_INLINE void attend512(const int nc, const int bf, const float* qh, kv_rows kc,
                                     kv_rows vc, const int32_t* table, int64_t bs, int64_t n, float scale,
                                     float* oh, float* scratch, int64_t ahead) {
	__m512 q[ATT_MAXC];
#pragma GCC unroll 16
	for (int c = 0; c < nc; c++) q[c] = _mm512_loadu_ps(qh + 16 * c);
	__m512 vmax = _mm512_set1_ps(-INFINITY);
	kpass(nc, bf, q, kc, table, bs, 0, n, scale, &vmax, scratch, ahead);
	if (ahead > 0) kv_pf_first(vc, table, bs, ahead, n);
	__m512 inv;
	softmax512(scratch, n, vmax, &inv);
	__m512 o[ATT_MAXC];
#pragma GCC unroll 16
	for (int c = 0; c < nc; c++) o[c] = _mm512_setzero_ps();
	vpass(nc, bf, o, vc, table, bs, 0, n, scratch, ahead);
#pragma GCC unroll 16
	for (int c = 0; c < nc; c++) _mm512_storeu_ps(oh + 16 * c, _mm512_mul_ps(o[c], inv));
}

// A decode group: query heads of decode tokens whose block tables share
// their first blocks (a GRPO group's samples, through the prefix cache),
// computed together over the shared positions [0, shared) — a multiple of
// 16, within every member's n — so that each shared K and V row is read
// from memory once per step instead of once per member: 16 rows at a time
// are gathered and every member's scores (or weighted sum) are computed
// from them while they sit in L1. Each member's operations are attend512's
// in attend512's order (score16 over the same 16-row blocks, the running
// maximum, softmax512, weigh16 row after row with the partial sums kept in
// o between blocks, stored and reloaded exactly), so each output has the
// bits the member gets alone. The rest of each member's positions (its own
// blocks) are computed as attend512 does.
typedef struct {
	const float* q;
	float *o, *s; // output, scores scratch
	const int32_t* table;
	int64_t n;
} att_member;

enum { ATT_GROUP_MAX = 32 };

AGV_AVX512 AGV_INLINE void attend512_group(const int nc, const int bf, const att_member* mb, int nm,
                                           kv_rows kc, kv_rows vc, int64_t bs, int64_t shared,
                                           float scale, int64_t ahead) {
	__m512 vmax[ATT_GROUP_MAX];
	const int32_t* table = mb[0].table; // the shared blocks' table
	for (int i = 0; i < nm; i++) vmax[i] = _mm512_set1_ps(-INFINITY);
	slot_iter it = slots_from(table, bs);
	kv_pf f = kv_pf_start(table, bs, 0, ahead, shared);
	for (int64_t p0 = 0; p0 < shared; p0 += 16) {
		const char* row[16];
		rows16(kc, &it, &f, 16, row);
		for (int i = 0; i < nm; i++) {
			__m512 q[ATT_MAXC];
#pragma GCC unroll 16
			for (int c = 0; c < nc; c++) q[c] = _mm512_loadu_ps(mb[i].q + 16 * c);
			score16(nc, bf, q, row, 16, scale, &vmax[i], mb[i].s + p0);
		}
	}
	__m512 inv[ATT_GROUP_MAX];
	for (int i = 0; i < nm; i++) {
		__m512 q[ATT_MAXC];
#pragma GCC unroll 16
		for (int c = 0; c < nc; c++) q[c] = _mm512_loadu_ps(mb[i].q + 16 * c);
		kpass(nc, bf, q, kc, mb[i].table, bs, shared, mb[i].n, scale, &vmax[i], mb[i].s, ahead);
		softmax512(mb[i].s, mb[i].n, vmax[i], &inv[i]);
		memset(mb[i].o, 0, sizeof(float) * 16 * nc);
	}
	if (ahead > 0) kv_pf_first(vc, table, bs, ahead, shared);
	it = slots_from(table, bs);
	f = kv_pf_start(table, bs, 0, ahead, shared);
	for (int64_t p0 = 0; p0 < shared; p0 += 16) {
		const char* row[16];
		rows16(vc, &it, &f, 16, row);
		for (int i = 0; i < nm; i++) {
			__m512 o[ATT_MAXC];
#pragma GCC unroll 16
			for (int c = 0; c < nc; c++) o[c] = _mm512_loadu_ps(mb[i].o + 16 * c);
			weigh16(nc, bf, o, row, 16, mb[i].s + p0);
#pragma GCC unroll 16
			for (int c = 0; c < nc; c++) _mm512_storeu_ps(mb[i].o + 16 * c, o[c]);
		}
	}
	for (int i = 0; i < nm; i++) {
		__m512 o[ATT_MAXC];
#pragma GCC unroll 16
		for (int c = 0; c < nc; c++) o[c] = _mm512_loadu_ps(mb[i].o + 16 * c);
		vpass(nc, bf, o, vc, mb[i].table, bs, shared, mb[i].n, mb[i].s, ahead);
#pragma GCC unroll 16
		for (int c = 0; c < nc; c++) _mm512_storeu_ps(mb[i].o + 16 * c, _mm512_mul_ps(o[c], inv[i]));
	}
}

// Two query heads of one KV group for one token (GQA): the same positions
// and the same K and V rows. Each query's scores, softmax and weighted sum
// are attend512's, operation for operation, so the outputs have the same
// bits; the K and V rows are read once for both (prefill reads each row
// from L2/L3 once per query otherwise: 1 KB per query and position at
// head size 128).
AGV_AVX512 AGV_INLINE void attend512_pair(const int nc, const int bf, const float* qa, const float* qb,
                                          kv_rows kc, kv_rows vc, const int32_t* table, int64_t bs,
                                          int64_t n, float scale, float* oa, float* ob, float* sa, float* sb,
                                          int64_t ahead) {
	__m512 vmaxa = _mm512_set1_ps(-INFINITY), vmaxb = vmaxa;
	slot_iter ks = slots_from(table, bs);
	kv_pf kf = kv_pf_start(table, bs, 0, ahead, n);
	for (int64_t p0 = 0; p0 < n; p0 += 16) {
		int m = n - p0 < 16 ? (int)(n - p0) : 16;
		__m512 acca[16], accb[16];
		for (int j = 0; j < 16; j++) {
			if (j >= m) {
				acca[j] = accb[j] = _mm512_setzero_ps();
				continue;
			}
			kv_pf_step(&kf, kc);
			const char* kp = kv_row(kc, slot_next(&ks));
			__m512 k0 = kv16(bf, kp, 0);
			__m512 a = _mm512_mul_ps(_mm512_loadu_ps(qa), k0), b = _mm512_mul_ps(_mm512_loadu_ps(qb), k0);
#pragma GCC unroll 16
			for (int c = 1; c < nc; c++) {
				__m512 kv = kv16(bf, kp, c);
				a = _mm512_fmadd_ps(_mm512_loadu_ps(qa + 16 * c), kv, a);
				b = _mm512_fmadd_ps(_mm512_loadu_ps(qb + 16 * c), kv, b);
			}
			acca[j] = a;
			accb[j] = b;
		}
		__mmask16 live = (__mmask16)(m == 16 ? 0xFFFF : (1u << m) - 1);
		__m512 sva = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live,
		                                _mm512_mul_ps(hsum16x16(acca), _mm512_set1_ps(scale)));
		__m512 svb = _mm512_mask_mov_ps(_mm512_set1_ps(-INFINITY), live,
		                                _mm512_mul_ps(hsum16x16(accb), _mm512_set1_ps(scale)));
		vmaxa = _mm512_max_ps(vmaxa, sva);
		vmaxb = _mm512_max_ps(vmaxb, svb);
		_mm512_storeu_ps(sa + p0, sva);
		_mm512_storeu_ps(sb + p0, svb);
	}
	if (ahead > 0) kv_pf_first(vc, table, bs, ahead, n);
	__m512 inva, invb;
	softmax512(sa, n, vmaxa, &inva);
	softmax512(sb, n, vmaxb, &invb);
	__m512 o1[ATT_MAXC], o2[ATT_MAXC]; // 8 chunks at most in use: see agl_attention's pair
#pragma GCC unroll 8
	for (int c = 0; c < nc; c++) o1[c] = o2[c] = _mm512_setzero_ps();
	slot_iter vs = slots_from(table, bs);
	kv_pf vf = kv_pf_start(table, bs, 0, ahead, n);
	for (int64_t p = 0; p < n; p++) {
		kv_pf_step(&vf, vc);
		const char* vp = kv_row(vc, slot_next(&vs));
		__m512 wa = _mm512_set1_ps(sa[p]), wb = _mm512_set1_ps(sb[p]);
#pragma GCC unroll 8
		for (int c = 0; c < nc; c++) {
			__m512 v = kv16(bf, vp, c);
			o1[c] = _mm512_fmadd_ps(wa, v, o1[c]);
			o2[c] = _mm512_fmadd_ps(wb, v, o2[c]);
		}
	}
#pragma GCC unroll 8
	for (int c = 0; c < nc; c++) {
		_mm512_storeu_ps(oa + 16 * c, _mm512_mul_ps(o1[c], inva));
		_mm512_storeu_ps(ob + 16 * c, _mm512_mul_ps(o2[c], invb));
	}
}

// ATT_SWITCH dispatches on the cache's type and the head size (1, 2, 4, 8
// or 16 chunks of 16) to CALL(NC, BF) with constant arguments, each its
// own specialization.
#define ATT_SIZES(CALL, BF)                                                                                          \
	case 1: CALL(1, BF); break;                                                                                    \
	case 2: CALL(2, BF); break;                                                                                    \
	case 4: CALL(4, BF); break;                                                                                    \
	case 8: CALL(8, BF); break;                                                                                    \
	case 16: CALL(16, BF); break

#define ATT_SWITCH(CALL, BF, HD)                                                                                    \
	do {                                                                                                           \
		if (BF) {                                                                                                  \
			switch ((HD) / 16) { ATT_SIZES(CALL, 1); }                                                             \
		} else {                                                                                                   \
			switch ((HD) / 16) { ATT_SIZES(CALL, 0); }                                                             \
		}                                                                                                          \
	} while (0)

#define ATT_PAIR(NC, BF)                                                                                              \
	attend512_pair(NC, BF, qa, qb, kc, vc, table, bs, n, scale, oa, ob, sa, sb, ahead)

AGV_AVX512 static void attend512_pair_any(int64_t hd, const float* qa, const float* qb, kv_rows kc,
                                          kv_rows vc, const int32_t* table, int64_t bs, int64_t n,
                                          float scale, float* oa, float* ob, float* sa, float* sb, int64_t ahead) {
	ATT_SWITCH(ATT_PAIR, kc.bf, hd);
}

#define ATT_ONE(NC, BF) attend512(NC, BF, qh, kc, vc, table, bs, n, scale, oh, scratch, ahead)

AGV_AVX512 static void attend512_any(int64_t hd, const float* qh, kv_rows kc, kv_rows vc,
                                     const int32_t* table, int64_t bs, int64_t n, float scale, float* oh,
                                     float* scratch, int64_t ahead) {
	ATT_SWITCH(ATT_ONE, kc.bf, hd);
}

// Element d of a row, as a float.
AGV_INLINE float kv_at(kv_rows c, const char* row, int64_t d) {
	if (c.bf) {
		uint32_t u = (uint32_t)((const uint16_t*)row)[d] << 16;
		float f;
		memcpy(&f, &u, sizeof f);
		return f;
	}
	return ((const float*)row)[d];
}

// The scalar path (levels below AVX-512, other head sizes): fp32 rows
// through agv_dot/agv_axpy; bf16 rows element by element.
static void attend_scalar(int level, int64_t hd, const float* qh, kv_rows kc, kv_rows vc,
                          const int32_t* table, int64_t bs, int64_t n, float scale, float* oh, float* scratch) {
	float mx = -INFINITY;
	slot_iter ks = slots_from(table, bs);
	for (int64_t p = 0; p < n; p++) {
		const char* kp = kv_row(kc, slot_next(&ks));
		float s = 0;
		if (kc.bf) {
			for (int64_t d = 0; d < hd; d++) s += qh[d] * kv_at(kc, kp, d);
		} else {
			s = agv_dot(level, qh, (const float*)kp, hd);
		}
		s *= scale;
		scratch[p] = s;
		if (s > mx) mx = s;
	}
	float sum = 0;
	for (int64_t p = 0; p < n; p++) {
		float e = expf(scratch[p] - mx);
		scratch[p] = e;
		sum += e;
	}
	memset(oh, 0, sizeof(float) * hd);
	float inv = 1.0f / sum;
	slot_iter vs = slots_from(table, bs);
	for (int64_t p = 0; p < n; p++) {
		const char* vp = kv_row(vc, slot_next(&vs));
		float w = scratch[p] * inv;
		if (vc.bf) {
			for (int64_t d = 0; d < hd; d++) oh[d] += w * kv_at(vc, vp, d);
		} else {
			agv_axpy(level, oh, w, (const float*)vp, hd);
		}
	}
}

// A token is a decode token when it is the only one of its sequence in the
// call: the tokens of a sequence are adjacent and share their table offset.
AGV_INLINE int alone(const int32_t* bt_off, int64_t t, int64_t i) {
	return (i == 0 || bt_off[i - 1] != bt_off[i]) && (i == t - 1 || bt_off[i + 1] != bt_off[i]);
}

// AGL_ATT_PF overrides the prefetch distance in bytes (0: none), and
// AGL_ATT_GROUP the most members of a decode group (0 or 1: no groups), for
// measurements; each read once.
static int64_t env_once(_Atomic int64_t* v, const char* name, int64_t def, int64_t hi) {
	int64_t b = atomic_load_explicit(v, memory_order_relaxed);
	if (b < 0) {
		const char* s = getenv(name);
		b = s && *s ? atoll(s) : def;
		if (b < 0) b = 0;
		if (b > hi) b = hi;
		atomic_store_explicit(v, b, memory_order_relaxed);
	}
	return b;
}

static int64_t att_prefetch_bytes(void) {
	static _Atomic int64_t v = -1;
	return env_once(&v, "AGL_ATT_PF", 16384, INT64_MAX / 2);
}

static int att_group_max(void) {
	static _Atomic int64_t v = -1;
	return (int)env_once(&v, "AGL_ATT_GROUP", ATT_GROUP_MAX, ATT_GROUP_MAX);
}

// A group shares at least this many positions, or it is not worth forming.
enum { ATT_GROUP_MIN_SHARED = 64 };

int64_t agl_attention_scratch_rows(void) { return ATT_GROUP_MAX; }

// The positions tokens a and b read from the same slots, rounded down to
// 16: their tables' common leading blocks, within both lengths.
static int64_t shared_positions(const int32_t* ta, int64_t na, const int32_t* tb, int64_t nb, int64_t bs) {
	int64_t n = na < nb ? na : nb, blocks = (n + bs - 1) / bs, k = 0;
	while (k < blocks && ta[k] == tb[k]) k++;
	int64_t p = k * bs < n ? k * bs : n;
	return p / 16 * 16;
}

#define ATT_GROUP(NC, BF) attend512_group(NC, BF, mb, nm, kc, vc, bs, shared, scale, ahead)

AGV_AVX512 static void attend512_group_any(int64_t hd, const att_member* mb, int nm, kv_rows kc,
                                           kv_rows vc, int64_t bs, int64_t shared, float scale,
                                           int64_t ahead) {
	ATT_SWITCH(ATT_GROUP, kc.bf, hd);
}

void agl_attention(int level, const float* q, int64_t t, int64_t nh, int64_t nkv, int64_t hd, const void* kc,
                   const void* vc, int kv_bf16, const int32_t* pos, const int32_t* bt_off, const int32_t* bt,
                   int64_t bs, float scale, float* out, int64_t lo, int64_t hi, float* scratch, int64_t stride) {
	int64_t group = nh / nkv;
	int64_t esz = kv_bf16 ? 2 : 4;
	int lines = (int)((hd * esz + 63) / 64);
	int64_t ahead = level >= 2 ? att_prefetch_bytes() / (hd * esz) : 0;
	int vec = level >= 2 && (hd == 16 || hd == 32 || hd == 64 || hd == 128 || hd == 256);
	int gmax = vec ? att_group_max() : 0;
	// Heads 2g and 2g+1 of an even-sized group share their K/V reads when
	// both items are in [lo, hi) (item it+t is head h+1's); the second
	// scores go to the second scratch row.
	int pair = vec && hd <= 128 && group % 2 == 0 && hi - lo > t;
	for (int64_t it = lo; it < hi; it++) {
		int64_t i = it % t, h = it / t, kvh = h / group;
		const float* qh = q + i * nh * hd + h * hd;
		const int32_t* table = bt + bt_off[i];
		int64_t n = (int64_t)pos[i] + 1;
		float* oh = out + i * nh * hd + h * hd;
		kv_rows k = {(const char*)kc + kvh * hd * esz, nkv * hd * esz, kv_bf16, lines};
		kv_rows v = {(const char*)vc + kvh * hd * esz, nkv * hd * esz, kv_bf16, lines};
		int solo = alone(bt_off, t, i);
		int64_t a = solo ? ahead : 0;
		if (pair && h % 2 == 1 && it - t >= lo) continue; // done with head h-1
		int with_pair = pair && h % 2 == 0 && it + t < hi;
		if (gmax >= 2 && solo && n >= ATT_GROUP_MIN_SHARED) {
			// Decode tokens i, i+1, ... of this head (and of head h+1 with
			// it) that share i's leading blocks.
			int per = with_pair ? 2 : 1, nm = 0;
			int64_t shared = n / 16 * 16, j = i;
			att_member mb[ATT_GROUP_MAX];
			for (; j < t && it + (j - i) < hi && nm + per <= gmax; j++) {
				int64_t nj = (int64_t)pos[j] + 1;
				if (with_pair && it + (j - i) + t >= hi) break;
				if (j > i) {
					if (!alone(bt_off, t, j)) break;
					int64_t sp = shared_positions(table, n, bt + bt_off[j], nj, bs);
					if (sp < ATT_GROUP_MIN_SHARED) break;
					if (sp < shared) shared = sp;
				}
				for (int64_t hh = h; hh < h + per; hh++) {
					att_member m = {q + j * nh * hd + hh * hd, out + j * nh * hd + hh * hd,
					                scratch + nm * stride, bt + bt_off[j], nj};
					mb[nm++] = m;
				}
			}
			if (j - i >= 2) {
				attend512_group_any(hd, mb, nm, k, v, bs, shared, scale, ahead);
				it += j - i - 1;
				continue;
			}
		}
		if (with_pair) {
			attend512_pair_any(hd, qh, qh + hd, k, v, table, bs, n, scale, oh, oh + hd, scratch, scratch + stride, a);
			continue;
		}
		if (vec) {
			attend512_any(hd, qh, k, v, table, bs, n, scale, oh, scratch, a);
			continue;
		}
		attend_scalar(level, hd, qh, k, v, table, bs, n, scale, oh, scratch);
	}
}

void agl_add(float* x, const float* y, int64_t n) {
	for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

// ---------------------------------------------------------------- stream probe
//
// The bandwidth probe must read a buffer as fast as this machine can, so
// that the decode kernels are compared with the best read there is rather
// than with one plain loop. Which access pattern is fastest changes with
// the host (the bandwidth on offer to this VM moves from minute to
// minute): when much is on offer a plain loop or two interleaved streams
// per thread read fastest (2 threads ~80 GB/s; a software prefetch is ~5 %
// slower), when less is, a prefetch 4 KB ahead or four interleaved streams
// per thread read 8–12 % faster than the plain loop (~50 against ~45 GB/s).
// agl_stream runs one pattern; the probe runs each and keeps the fastest.
// Every pattern reads each of the n floats once and returns their sum (so
// the loads are not dead code).

// Four accumulators, 256 bytes an iteration; with pf, a software prefetch
// of every line STREAM_PF_DIST floats (4 KB) ahead too, else the hardware
// prefetcher alone. (Near the end the prefetch names lines past the
// buffer: a prefetch never faults.) Inlined with a constant pf.
enum { STREAM_PF_DIST = 1024 };
AGV_AVX512 AGV_INLINE float sum512_at(const int pf, const float* x, int64_t n) {
	__m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int64_t i = 0;
	for (; i + 64 <= n; i += 64) {
		if (pf) {
			const char* p = (const char*)(x + i + STREAM_PF_DIST);
			_mm_prefetch(p, _MM_HINT_T0);
			_mm_prefetch(p + 64, _MM_HINT_T0);
			_mm_prefetch(p + 128, _MM_HINT_T0);
			_mm_prefetch(p + 192, _MM_HINT_T0);
		}
		a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + i));
		a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + i + 16));
		a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + i + 32));
		a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + i + 48));
	}
	float s = _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
	for (; i < n; i++) s += x[i];
	return s;
}
AGV_AVX512 static float sum512(const float* x, int64_t n) { return sum512_at(0, x, n); }
AGV_AVX512 static float sum512_pf(const float* x, int64_t n) { return sum512_at(1, x, n); }

// S far-apart parts of the range read in lockstep, one 64-byte line of
// each an iteration: S streams for the hardware prefetcher to run ahead
// on at once, so more lines are in flight than one stream gets.
AGV_AVX512 AGV_INLINE float sum512_streams(const int S, const float* x, int64_t n) {
	int64_t q = n / S / 16 * 16; // floats per stream, whole lines
	__m512 a[4];
#pragma GCC unroll 4
	for (int s = 0; s < S; s++) a[s] = _mm512_setzero_ps();
	for (int64_t i = 0; i < q; i += 16) {
#pragma GCC unroll 4
		for (int s = 0; s < S; s++) a[s] = _mm512_add_ps(a[s], _mm512_loadu_ps(x + s * q + i));
	}
	__m512 t = a[0];
#pragma GCC unroll 4
	for (int s = 1; s < S; s++) t = _mm512_add_ps(t, a[s]);
	float sum = _mm512_reduce_add_ps(t);
	for (int64_t i = S * q; i < n; i++) sum += x[i];
	return sum;
}

AGV_AVX512 static float sum512_2(const float* x, int64_t n) { return sum512_streams(2, x, n); }
AGV_AVX512 static float sum512_4(const float* x, int64_t n) { return sum512_streams(4, x, n); }

AGV_AVX2 static float sum256(const float* x, int64_t n) {
	__m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
	int64_t i = 0;
	for (; i + 32 <= n; i += 32) {
		a0 = _mm256_add_ps(a0, _mm256_loadu_ps(x + i));
		a1 = _mm256_add_ps(a1, _mm256_loadu_ps(x + i + 8));
		a2 = _mm256_add_ps(a2, _mm256_loadu_ps(x + i + 16));
		a3 = _mm256_add_ps(a3, _mm256_loadu_ps(x + i + 24));
	}
	float s = agv_hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
	for (; i < n; i++) s += x[i];
	return s;
}

float agl_stream(int level, int pattern, const float* x, int64_t n) {
	if (level >= 2) {
		switch (pattern) {
		case 1: return sum512_pf(x, n);
		case 2: return sum512_2(x, n);
		case 3: return sum512_4(x, n);
		default: return sum512(x, n);
		}
	}
	if (level == 1) return sum256(x, n);
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += x[i];
		s1 += x[i + 1];
		s2 += x[i + 2];
		s3 += x[i + 3];
	}
	for (; i < n; i++) s0 += x[i];
	return (s0 + s1) + (s2 + s3);
}

AGV_AVX512 static double fma_peak512(int64_t iters) {
	__m512 a[16];
	__m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
	for (int i = 0; i < 16; i++) a[i] = _mm512_set1_ps((float)i);
	for (int64_t it = 0; it < iters; it++) {
#pragma GCC unroll 16
		for (int i = 0; i < 16; i++) a[i] = _mm512_fmadd_ps(a[i], m, c);
	}
	__m512 s = a[0];
	for (int i = 1; i < 16; i++) s = _mm512_add_ps(s, a[i]);
	volatile float sink = _mm512_reduce_add_ps(s);
	(void)sink;
	return (double)iters * 16 * 16 * 2;
}

AGV_AVX2 static double fma_peak256(int64_t iters) {
	__m256 a[12];
	__m256 m = _mm256_set1_ps(0.999999f), c = _mm256_set1_ps(1e-7f);
	for (int i = 0; i < 12; i++) a[i] = _mm256_set1_ps((float)i);
	for (int64_t it = 0; it < iters; it++) {
#pragma GCC unroll 12
		for (int i = 0; i < 12; i++) a[i] = _mm256_fmadd_ps(a[i], m, c);
	}
	__m256 s = a[0];
	for (int i = 1; i < 12; i++) s = _mm256_add_ps(s, a[i]);
	volatile float sink = agv_hsum256(s);
	(void)sink;
	return (double)iters * 12 * 8 * 2;
}

double agl_fma_peak(int level, int64_t iters) {
	if (level >= 2) return fma_peak512(iters);
	if (level == 1) return fma_peak256(iters);
	float a[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	for (int64_t it = 0; it < iters; it++)
		for (int i = 0; i < 8; i++) a[i] = a[i] * 0.999999f + 1e-7f;
	volatile float sink = a[0] + a[7];
	(void)sink;
	return (double)iters * 8 * 2;
}
