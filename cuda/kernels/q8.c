// int8 weights (see q8.h for the numerics and the layout).
//
// Every output is one fixed computation at every path, batch and panel
// range: for each block b in order,
//     isum = Σ_{i<32} q[i]·xq[i]            (exact, in int32)
//     acc  = fmaf((float)isum, fl(dw[b]·dx[b]), acc)
// from acc = 0, then + bias. The integer part is exact however it is
// summed: the VNNI path adds the +128-offset weight bytes times the
// activations with vpdpbusd (u8 × s8, four products a lane) starting from
// corr = −128·Σxq; the AVX2 path multiplies the signed values with
// llama.cpp's abs/sign trick (vpmaddubsw cannot overflow int16 with both
// operands in [−127, 127]) and vpmaddwd; the generic path loops. |isum| ≤
// 32·127·127 < 2^24, so (float)isum is exact too, and the float part is the
// same fmaf chain everywhere.
#include "q8.h"
#include "vecops.h"

#include <float.h>
#include <immintrin.h>
#include <math.h>
#include <string.h>

// Panels per VNNI tile for one token (decode). A tile's panels are as
// many weight streams (a panel's blocks are contiguous, panels nb·512 bytes
// apart) plus as many streams of scales: at 8 panels, 16 streams, more than
// the hardware prefetcher keeps up with. 4 panels streamed 4–15 % faster
// (one core, thread CPU time, a whole 0.6B-shape decode step, alternating
// builds); 2 panels, and a software prefetch of the blocks 1, 2 or 4
// ahead, were slower or no faster. Defining it when compiling changes it,
// for measuring.
#ifndef AGL_Q8_DECODE_RP
#define AGL_Q8_DECODE_RP 4
#endif
#define AGQ_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define AGQ_AVX2 __attribute__((target("avx2,fma,f16c")))

enum {
	QB = AGL_Q8_BLOCK,
	QP = AGL_Q8_PANEL,
	PANEL_BYTES = QB * QP, // one block of one panel
	TOK_BLOCK = 64         // tokens whose activations stay in cache while panels stream by
};

int agl_cpu_has_vnni(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("avx512vnni");
}

int agl_cpu_has_f16c(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

uint16_t agl_f32_to_f16(float f) {
	uint32_t x;
	memcpy(&x, &f, 4);
	uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
	uint32_t ax = x & 0x7fffffffu;
	if (ax > 0x7f800000u) return sign | 0x7e00 | (uint16_t)((ax >> 13) & 0x3ff); // NaN stays NaN
	if (ax >= 0x477ff000u) return sign | 0x7c00;                               // ≥ 65520 rounds to Inf
	if (ax >= 0x38800000u) {                                                      // a normal half
		uint32_t r = ax - 0x38000000u;                                            // rebias 127 → 15
		r += 0x0fffu + ((r >> 13) & 1);                                           // nearest even
		return sign | (uint16_t)(r >> 13);
	}
	// A subnormal half: multiples of 2^-24; scaling by 2^24 is exact and
	// nearbyintf rounds to nearest even (1024 is the smallest normal, whose
	// encoding follows on).
	return sign | (uint16_t)nearbyintf(fabsf(f) * 16777216.0f);
}

float agl_f16_to_f32(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff, bits;
	if (e == 0) {
		float v = (float)m * 0x1p-24f;
		return sign ? -v : v;
	}
	if (e == 31) bits = sign | 0x7f800000u | (m << 13);
	else bits = sign | ((e + 112) << 23) | (m << 13);
	float f;
	memcpy(&f, &bits, 4);
	return f;
}

static inline uint8_t* qat(uint8_t* q, int64_t nb, int64_t r, int64_t col) {
	int64_t p = r / QP, lane = r % QP, b = col / QB, i = col % QB;
	return q + (p * nb + b) * PANEL_BYTES + (i / 4) * 64 + lane * 4 + i % 4;
}

// roundf(v) (half away from zero) for |v| < 2^23 without a libm call:
// v − trunc(v) is exact there.
static inline int round_away(float v) {
	float a = fabsf(v);
	int t = (int)a;
	int r = t + (a - (float)t >= 0.5f);
	return v < 0 ? -r : r;
}

// One row block (n ≤ 32 values at x) into the lane's bytes of blk and its
// scale: quantize_row_q8_0_ref's numbers.
static void quantize_block(const float* x, int64_t n, uint8_t* blk, uint16_t* d) {
	float amax = 0.0f;
	for (int64_t i = 0; i < n; i++) {
		float v = fabsf(x[i]);
		amax = amax > v ? amax : v; // ggml's MAX
	}
	const float dd = amax / 127;
	const float id = dd ? 1.0f / dd : 0.0f;
	*d = agl_f32_to_f16(dd);
	for (int64_t i = 0; i < QB; i++) {
		int qi = 0;
		if (i < n) {
			float v = x[i] * id;
			// |x·id| ≤ 127 up to rounding, so roundf (as
			// quantize_row_q8_0_ref) gives at most 127 in magnitude; a NaN
			// or infinite weight becomes 0.
			qi = v >= 127.0f ? 127 : v <= -127.0f ? -127 : v == v ? round_away(v) : 0;
		}
		blk[(i / 4) * 64 + i % 4] = (uint8_t)(qi + 128);
	}
}

// quantize_block for a whole block of finite values, 16 lanes at a time:
// the same operations (max of |x|, the scalar d and 1/d, x·id, clamp,
// truncate and add one where the fraction is ≥ 0.5), so the same bytes.
// It returns 0, writing nothing, when the block needs the scalar path's
// special cases (a NaN or infinity, or 1/d overflowing).
AGV_AVX512 static int quantize_block512(const float* x, uint8_t* blk, uint16_t* d) {
	__m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
	__m512 a = _mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1));
	// (max_ps drops a NaN in its first operand: test the inputs.)
	if (_mm512_cmp_ps_mask(x0, x0, _CMP_UNORD_Q) | _mm512_cmp_ps_mask(x1, x1, _CMP_UNORD_Q)) return 0;
	const float amax = _mm512_reduce_max_ps(a);
	const float dd = amax / 127;
	const float id = dd ? 1.0f / dd : 0.0f;
	if (!(amax <= FLT_MAX) || !(id <= FLT_MAX)) return 0;
	*d = agl_f32_to_f16(dd);
	const __m512 vid = _mm512_set1_ps(id), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f),
	             half = _mm512_set1_ps(0.5f), one = _mm512_set1_ps(1.0f);
	const __m512i off = _mm512_set1_epi32(128);
	__m512 xs[2] = {x0, x1};
	for (int h = 0; h < 2; h++) {
		__m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(xs[h], vid), lo), hi);
		__m512 av = _mm512_abs_ps(v);
		__m512 t = _mm512_roundscale_ps(av, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
		__mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(av, t), half, _CMP_GE_OQ);
		__m512 r = _mm512_mask_add_ps(t, up, t, one);
		__m512i ri = _mm512_cvttps_epi32(r);
		__mmask16 neg = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_LT_OQ);
		ri = _mm512_mask_sub_epi32(ri, neg, _mm512_setzero_si512(), ri);
		uint8_t b[16];
		_mm_storeu_si128((__m128i*)b, _mm512_cvtepi32_epi8(_mm512_add_epi32(ri, off)));
		for (int g = 0; g < 4; g++) memcpy(blk + (h * 4 + g) * 64, b + 4 * g, 4);
	}
	return 1;
}

void agl_q8_quantize_rows(int vec, const float* src, int64_t rows, int64_t k, int64_t row0, int64_t nb,
                          uint8_t* q, uint16_t* d) {
	for (int64_t rr = 0; rr < rows; rr++) {
		int64_t r = row0 + rr, p = r / QP, lane = r % QP;
		const float* x = src + rr * k;
		for (int64_t b = 0; b < nb; b++) {
			int64_t c0 = b * QB, n = c0 + QB < k ? QB : k - c0;
			uint8_t* blk = q + (p * nb + b) * PANEL_BYTES + lane * 4;
			uint16_t* db = d + (p * nb + b) * QP + lane;
			if (vec && n == QB && quantize_block512(x + c0, blk, db)) continue;
			quantize_block(x + c0, n, blk, db);
		}
	}
}

void agl_q8_row_f32(const uint8_t* q, const uint16_t* d, int64_t nb, int64_t r, int64_t k, float* dst) {
	int64_t p = r / QP, lane = r % QP;
	for (int64_t c = 0; c < k; c++) {
		float dd = agl_f16_to_f32(d[(p * nb + c / QB) * QP + lane]);
		dst[c] = (float)((int)*qat((uint8_t*)q, nb, r, c) - 128) * dd;
	}
}

// One whole block of activations (32 finite values, 127/max|x| finite)
// with AVX-512F: the same operations as the scalar loop in
// agl_q8_quantize_act (max of |x|, the scalar 127/max, x·id rounded by
// one multiply, round to nearest even, clamp to ±127, the exact integer
// sum), so the same bytes. It returns 0, writing nothing, when the block
// needs the scalar path's special cases (a NaN or infinity, or 127/max
// overflowing).
AGV_AVX512 static int quantize_act_block512(const float* x, int8_t* o, float* dx, int32_t* corr) {
	__m512 x0 = _mm512_loadu_ps(x), x1 = _mm512_loadu_ps(x + 16);
	__m512 a0 = _mm512_abs_ps(x0), a1 = _mm512_abs_ps(x1);
	const __m512 big = _mm512_set1_ps(FLT_MAX);
	// !(|x| <= FLT_MAX): NaN or infinite
	if (_mm512_cmp_ps_mask(a0, big, _CMP_NLE_UQ) | _mm512_cmp_ps_mask(a1, big, _CMP_NLE_UQ)) return 0;
	const float amax = _mm512_reduce_max_ps(_mm512_max_ps(a0, a1));
	const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
	if (!(id <= FLT_MAX)) return 0;
	const __m512 vid = _mm512_set1_ps(id), lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
	__m512i q[2];
	__m512 xs[2] = {x0, x1};
	for (int h = 0; h < 2; h++) {
		__m512 v = _mm512_roundscale_ps(_mm512_mul_ps(xs[h], vid), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		q[h] = _mm512_cvtps_epi32(_mm512_min_ps(_mm512_max_ps(v, lo), hi));
		_mm_storeu_si128((__m128i*)(o + 16 * h), _mm512_cvtepi32_epi8(q[h]));
	}
	*dx = amax / 127.0f;
	*corr = -128 * _mm512_reduce_add_epi32(_mm512_add_epi32(q[0], q[1]));
	return 1;
}

void agl_q8_quantize_act(int vec, const float* x, int64_t t, int64_t k, int64_t nb, int8_t* xq, float* dx,
                         int32_t* corr) {
	for (int64_t j = 0; j < t; j++) {
		const float* xr = x + j * k;
		for (int64_t b = 0; b < nb; b++) {
			int64_t c0 = b * QB, c1 = c0 + QB < k ? c0 + QB : k;
			int8_t* o = xq + j * nb * QB + c0;
			if (vec && c1 - c0 == QB && quantize_act_block512(xr + c0, o, dx + j * nb + b, corr + j * nb + b)) continue;
			float amax = 0.0f;
			int bad = 0;
			for (int64_t c = c0; c < c1; c++) {
				float v = fabsf(xr[c]);
				bad |= !(v <= FLT_MAX);
				amax = amax > v ? amax : v;
			}
			const float id = amax != 0.0f && !bad ? 127.0f / amax : 0.0f;
			int32_t s = 0;
			for (int64_t c = c0; c < c0 + QB; c++) {
				int qi = 0;
				if (c < c1) {
					float v = nearbyintf(xr[c] * id);
					qi = v >= 127.0f ? 127 : v <= -127.0f ? -127 : (int)v;
				}
				o[c - c0] = (int8_t)qi;
				s += qi;
			}
			dx[j * nb + b] = bad ? NAN : amax / 127.0f;
			corr[j * nb + b] = -128 * s;
		}
	}
}

// A tile computes panels [p0, p0+RP) × tokens [j0, j0+T).
typedef struct {
	const uint8_t* q; // panel p0, block 0
	const uint16_t* d;
	int64_t nb;
	const int8_t* xq; // token j0
	const float* dx;
	const int32_t* corr;
	float* y; // y[j0][16·p0]
	int64_t n;
	int64_t row0; // 16·p0
	const float* bias;
} tile_args;

static inline void store_out(const tile_args* a, int64_t r, int64_t j, float s) {
	if (a->row0 + r >= a->n) return;
	if (a->bias) s += a->bias[a->row0 + r];
	a->y[j * a->n + a->row0 + r] = s;
}

static void tile_generic(const tile_args* a, int RP, int T) {
	const int64_t nb = a->nb;
	for (int p = 0; p < RP; p++) {
		for (int lane = 0; lane < QP; lane++) {
			for (int j = 0; j < T; j++) {
				float acc = 0.0f;
				for (int64_t b = 0; b < nb; b++) {
					const uint8_t* blk = a->q + ((int64_t)p * nb + b) * PANEL_BYTES + lane * 4;
					const int8_t* x = a->xq + j * nb * QB + b * QB;
					int32_t isum = a->corr[j * nb + b];
					for (int i = 0; i < QB; i++) isum += (int32_t)blk[(i / 4) * 64 + i % 4] * x[i];
					float s = agl_f16_to_f32(a->d[((int64_t)p * nb + b) * QP + lane]) * a->dx[j * nb + b];
					acc = fmaf((float)isum, s, acc);
				}
				store_out(a, (int64_t)p * QP + lane, j, acc);
			}
		}
	}
}

static inline int32_t load4(const int8_t* p) {
	int32_t v;
	memcpy(&v, p, 4);
	return v;
}

// ---- AVX-512 VNNI: vpdpbusd of 16 rows' four offset bytes with four
// broadcast activation bytes.
AGQ_VNNI AGV_INLINE void tile_vnni_rt(const tile_args* a, const int RP, const int T) {
	const int64_t nb = a->nb, ldx = nb * QB;
	__m512 acc[8][3];
#pragma GCC unroll 8
	for (int p = 0; p < RP; p++)
#pragma GCC unroll 3
		for (int j = 0; j < T; j++) acc[p][j] = _mm512_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m512i s[8][3];
#pragma GCC unroll 3
		for (int j = 0; j < T; j++) {
			__m512i c = _mm512_set1_epi32(a->corr[j * nb + b]);
#pragma GCC unroll 8
			for (int p = 0; p < RP; p++) s[p][j] = c;
		}
		const uint8_t* wb = a->q + b * PANEL_BYTES;
		const int8_t* xb = a->xq + b * QB;
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m512i wv[8];
#pragma GCC unroll 8
			for (int p = 0; p < RP; p++) wv[p] = _mm512_loadu_si512(wb + (int64_t)p * nb * PANEL_BYTES + g * 64);
#pragma GCC unroll 3
			for (int j = 0; j < T; j++) {
				__m512i xv = _mm512_set1_epi32(load4(xb + j * ldx + g * 4));
#pragma GCC unroll 8
				for (int p = 0; p < RP; p++) s[p][j] = _mm512_dpbusd_epi32(s[p][j], wv[p], xv);
			}
		}
#pragma GCC unroll 8
		for (int p = 0; p < RP; p++) {
			__m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i*)(a->d + ((int64_t)p * nb + b) * QP)));
#pragma GCC unroll 3
			for (int j = 0; j < T; j++) {
				__m512 sc = _mm512_mul_ps(dw, _mm512_set1_ps(a->dx[j * nb + b]));
				acc[p][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[p][j]), sc, acc[p][j]);
			}
		}
	}
#pragma GCC unroll 8
	for (int p = 0; p < RP; p++) {
		int64_t r0 = a->row0 + (int64_t)p * QP;
		int64_t valid = a->n - r0 < QP ? a->n - r0 : QP;
		if (valid <= 0) continue;
		__mmask16 m = (__mmask16)((1u << valid) - 1);
		__m512 bv = a->bias ? _mm512_maskz_loadu_ps(m, a->bias + r0) : _mm512_setzero_ps();
#pragma GCC unroll 3
		for (int j = 0; j < T; j++) {
			__m512 v = a->bias ? _mm512_add_ps(acc[p][j], bv) : acc[p][j];
			_mm512_mask_storeu_ps(a->y + j * a->n + r0, m, v);
		}
	}
}

AGQ_VNNI static void tile_vnni(const tile_args* a, int RP, int T) {
	switch (RP * 4 + T) {
	case 1 * 4 + 1: tile_vnni_rt(a, 1, 1); break;
	case 2 * 4 + 1: tile_vnni_rt(a, 2, 1); break;
	case 3 * 4 + 1: tile_vnni_rt(a, 3, 1); break;
	case 4 * 4 + 1: tile_vnni_rt(a, 4, 1); break;
	case 5 * 4 + 1: tile_vnni_rt(a, 5, 1); break;
	case 6 * 4 + 1: tile_vnni_rt(a, 6, 1); break;
	case 7 * 4 + 1: tile_vnni_rt(a, 7, 1); break;
	case 8 * 4 + 1: tile_vnni_rt(a, 8, 1); break;
	case 1 * 4 + 2: tile_vnni_rt(a, 1, 2); break;
	case 2 * 4 + 2: tile_vnni_rt(a, 2, 2); break;
	case 3 * 4 + 2: tile_vnni_rt(a, 3, 2); break;
	case 4 * 4 + 2: tile_vnni_rt(a, 4, 2); break;
	case 1 * 4 + 3: tile_vnni_rt(a, 1, 3); break;
	case 2 * 4 + 3: tile_vnni_rt(a, 2, 3); break;
	case 3 * 4 + 3: tile_vnni_rt(a, 3, 3); break;
	case 4 * 4 + 3: tile_vnni_rt(a, 4, 3); break;
	}
}

// ---- AVX2 + F16C: rows 0–7 and 8–15 of a panel in two halves; the signed
// values are the offset bytes XOR 0x80, multiplied with llama.cpp's
// abs/sign trick (mul_sum_i8_pairs: |x| · sign(q, x) with vpmaddubsw, then
// vpmaddwd by ones).
AGQ_AVX2 AGV_INLINE void tile_256_rt(const tile_args* a, const int T) {
	const int64_t nb = a->nb, ldx = nb * QB;
	const __m256i flip = _mm256_set1_epi8((char)0x80), ones = _mm256_set1_epi16(1);
	__m256 acc[2][2];
#pragma GCC unroll 2
	for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
		for (int j = 0; j < T; j++) acc[h][j] = _mm256_setzero_ps();
	for (int64_t b = 0; b < nb; b++) {
		__m256i s[2][2];
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++)
#pragma GCC unroll 2
			for (int j = 0; j < T; j++) s[h][j] = _mm256_setzero_si256();
		const uint8_t* wb = a->q + b * PANEL_BYTES;
		const int8_t* xb = a->xq + b * QB;
#pragma GCC unroll 8
		for (int g = 0; g < 8; g++) {
			__m256i ax[2], sx[2];
#pragma GCC unroll 2
			for (int j = 0; j < T; j++) {
				sx[j] = _mm256_set1_epi32(load4(xb + j * ldx + g * 4));
				ax[j] = _mm256_sign_epi8(sx[j], sx[j]);
			}
#pragma GCC unroll 2
			for (int h = 0; h < 2; h++) {
				__m256i qv = _mm256_xor_si256(_mm256_loadu_si256((const __m256i*)(wb + g * 64 + h * 32)), flip);
#pragma GCC unroll 2
				for (int j = 0; j < T; j++) {
					__m256i dot = _mm256_maddubs_epi16(ax[j], _mm256_sign_epi8(qv, sx[j]));
					s[h][j] = _mm256_add_epi32(s[h][j], _mm256_madd_epi16(dot, ones));
				}
			}
		}
#pragma GCC unroll 2
		for (int h = 0; h < 2; h++) {
			__m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)(a->d + b * QP + h * 8)));
#pragma GCC unroll 2
			for (int j = 0; j < T; j++) {
				__m256 sc = _mm256_mul_ps(dw, _mm256_set1_ps(a->dx[j * nb + b]));
				acc[h][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s[h][j]), sc, acc[h][j]);
			}
		}
	}
	for (int h = 0; h < 2; h++)
		for (int j = 0; j < T; j++) {
			float out[8];
			_mm256_storeu_ps(out, acc[h][j]);
			for (int i = 0; i < 8; i++) store_out(a, h * 8 + i, j, out[i]);
		}
}

AGQ_AVX2 static void tile_256(const tile_args* a, int RP, int T) {
	for (int p = 0; p < RP; p++) {
		tile_args ap = *a;
		ap.q += (int64_t)p * a->nb * PANEL_BYTES;
		ap.d += (int64_t)p * a->nb * QP;
		ap.row0 += (int64_t)p * QP;
		if (T == 1) tile_256_rt(&ap, 1);
		else tile_256_rt(&ap, 2);
	}
}

void agl_gemm_q8(int path, const int8_t* xq, const float* dx, const int32_t* corr, int64_t t, int64_t nb,
                 const uint8_t* q, const uint16_t* d, int64_t n, const float* bias, float* y, int64_t p_lo,
                 int64_t p_hi) {
	void (*tile)(const tile_args*, int, int);
	int rmax, tmax;
	if (path >= 2) {
		tile = tile_vnni;
		rmax = t == 1 ? AGL_Q8_DECODE_RP : 4;
		tmax = t == 1 ? 1 : 3;
	} else if (path == 1) {
		tile = tile_256;
		rmax = 1;
		tmax = 2;
	} else {
		tile = tile_generic;
		rmax = 1;
		tmax = 1;
	}
	const int64_t ldx = nb * QB;
	for (int64_t t0 = 0; t0 < t; t0 += TOK_BLOCK) {
		int64_t t1 = t0 + TOK_BLOCK < t ? t0 + TOK_BLOCK : t;
		for (int64_t p0 = p_lo; p0 < p_hi; p0 += rmax) {
			int RP = p_hi - p0 < rmax ? (int)(p_hi - p0) : rmax;
			tile_args a = {q + p0 * nb * PANEL_BYTES, d + p0 * nb * QP, nb, NULL, NULL, NULL, NULL, n, p0 * QP, bias};
			for (int64_t j0 = t0; j0 < t1; j0 += tmax) {
				int T = t1 - j0 < tmax ? (int)(t1 - j0) : tmax;
				a.xq = xq + j0 * ldx;
				a.dx = dx + j0 * nb;
				a.corr = corr + j0 * nb;
				a.y = y + j0 * n;
				tile(&a, RP, T);
			}
		}
	}
}
