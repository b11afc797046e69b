// Vector helpers shared by the inference kernels (this package) and the
// training kernels (cuda/train, which adds this directory to its include
// path): dot products, axpy, exp, SwiGLU and the rotary embedding, each exactly one
// implementation so that inference and training round the same way.
//
// Everything is static inline: each translation unit gets its own copies.
// The AVX2/AVX-512 variants are compiled with per-function target
// attributes and picked at run time from a level (0 generic, 1 AVX2+FMA,
// 2 AVX-512F; see agl_cpu_level), so the code runs on any x86-64 without
// -march flags. Built with -std=c11, which implies -ffp-contract=off: no
// a*b+c is fused except where an fma is written.
#ifndef AGL_VECOPS_H
#define AGL_VECOPS_H
#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#define AGV_AVX512 __attribute__((target("avx512f")))
#define AGV_AVX2 __attribute__((target("avx2,fma")))
#define AGV_INLINE static inline __attribute__((always_inline))

AGV_AVX512 static inline float agv_dot512(const float* a, const float* b, int64_t n) {
	__m512 acc = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
	}
	return _mm512_reduce_add_ps(acc);
}

// y += a*x, one fused multiply-add per element (the masked tail rounds
// exactly like fmaf).
AGV_AVX512 static inline void agv_axpy512(float* y, float a, const float* x, int64_t n) {
	__m512 va = _mm512_set1_ps(a);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		_mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
	}
}

AGV_AVX2 static inline float agv_hsum256(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AGV_AVX2 static inline float agv_dot256(const float* a, const float* b, int64_t n) {
	__m256 acc = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
	float s = agv_hsum256(acc);
	for (; i < n; i++) s = fmaf(a[i], b[i], s);
	return s;
}

AGV_AVX2 static inline void agv_axpy256(float* y, float a, const float* x, int64_t n) {
	__m256 va = _mm256_set1_ps(a);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

static inline float agv_dot_generic(const float* a, const float* b, int64_t n) {
	// Four partial sums: the generic build has no hardware FMA, and a single
	// dependent chain would be latency bound.
	float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
	int64_t i = 0;
	for (; i + 4 <= n; i += 4) {
		s0 += a[i] * b[i];
		s1 += a[i + 1] * b[i + 1];
		s2 += a[i + 2] * b[i + 2];
		s3 += a[i + 3] * b[i + 3];
	}
	for (; i < n; i++) s0 += a[i] * b[i];
	return (s0 + s1) + (s2 + s3);
}

static inline void agv_axpy_generic(float* y, float a, const float* x, int64_t n) {
	for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static inline float agv_dot(int level, const float* a, const float* b, int64_t n) {
	if (level >= 2) return agv_dot512(a, b, n);
	if (level == 1) return agv_dot256(a, b, n);
	return agv_dot_generic(a, b, n);
}

static inline void agv_axpy(int level, float* y, float a, const float* x, int64_t n) {
	if (level >= 2) agv_axpy512(y, a, x, n);
	else if (level == 1) agv_axpy256(y, a, x, n);
	else agv_axpy_generic(y, a, x, n);
}

// Rotary embedding, Hugging Face half-split convention, in place on
// x[t][stride] for heads [0, nheads) of hd at offset h*hd: for j < hd/2,
// (x_j, x_{j+hd/2}) is rotated by sign * pos * inv_freq[j]. sign -1 is the
// inverse rotation (the backward pass: a rotation's inverse is its
// transpose).
static inline void agv_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                            const int32_t* pos, const float* inv_freq, float sign) {
	int64_t half = hd / 2;
	float cs[512], sn[512];
	for (int64_t i = 0; i < t; i++) {
		for (int64_t j0 = 0; j0 < half; j0 += 512) {
			int64_t m = half - j0 < 512 ? half - j0 : 512;
			for (int64_t j = 0; j < m; j++) {
				// float32 angle like transformers and the PyTorch
				// references: one rounded product.
				float a = (float)pos[i] * inv_freq[j0 + j];
				cs[j] = cosf(a);
				sn[j] = sign * sinf(a);
			}
			for (int64_t h = 0; h < nheads; h++) {
				float* xh = x + i * stride + h * hd;
				for (int64_t j = 0; j < m; j++) {
					float a = xh[j0 + j], b = xh[j0 + j + half];
					float p1 = a * cs[j], p2 = b * sn[j];
					float p3 = b * cs[j], p4 = a * sn[j];
					xh[j0 + j] = p1 - p2;
					xh[j0 + j + half] = p3 + p4;
				}
			}
		}
	}
}
// Vector exp with Cephes' expf polynomial: range reduction by ln 2, a
// degree-6 polynomial, relative error ~1e-7 (like libm's expf); inputs are
// clamped so that the result saturates or underflows instead of wrapping.
#define AGV_EXP_HI 88.3762626647949f
#define AGV_EXP_LO -88.3762626647949f
#define AGV_LOG2E 1.44269504088896341f
#define AGV_LN2_HI 0.693359375f
#define AGV_LN2_LO -2.12194440e-4f

AGV_AVX512 static inline __m512 agv_exp512(__m512 x) {
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(AGV_EXP_LO)), _mm512_set1_ps(AGV_EXP_HI));
	__m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(AGV_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(AGV_LN2_HI), x);
	r = _mm512_fnmadd_ps(k, _mm512_set1_ps(AGV_LN2_LO), r);
	__m512 p = _mm512_set1_ps(1.9875691500E-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
	p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, k);
}

AGV_AVX2 static inline __m256 agv_exp256(__m256 x) {
	// Lower clamp -87: k >= -126 keeps the biased exponent below >= 0 (the
	// result then underflows to 0 instead of wrapping around).
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(AGV_EXP_HI));
	__m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(AGV_LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(AGV_LN2_HI), x);
	r = _mm256_fnmadd_ps(k, _mm256_set1_ps(AGV_LN2_LO), r);
	__m256 p = _mm256_set1_ps(1.9875691500E-4f);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507E-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073E-3f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894E-2f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459E-1f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201E-1f));
	p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
	// 2^k = 2 * 2^(k-1) through the exponent bits (k-1+127 in [0, 254]);
	// p in [0.7, 1.5] keeps the product finite.
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(k), _mm256_set1_epi32(126)), 23);
	return _mm256_mul_ps(_mm256_mul_ps(p, _mm256_castsi256_ps(e)), _mm256_set1_ps(2.0f));
}


AGV_INLINE float agv_sigmoid1(float g) { return 1.0f / (1.0f + expf(-g)); }

AGV_AVX512 AGV_INLINE __m512 agv_sigmoid512(__m512 g) {
	__m512 one = _mm512_set1_ps(1.0f);
	return _mm512_div_ps(one, _mm512_add_ps(one, agv_exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
}

AGV_AVX2 AGV_INLINE __m256 agv_sigmoid256(__m256 g) {
	__m256 one = _mm256_set1_ps(1.0f);
	return _mm256_div_ps(one, _mm256_add_ps(one, agv_exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

AGV_AVX512 static inline void agv_swiglu512(float* out, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 gv = _mm512_loadu_ps(g + i);
		_mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(gv, agv_sigmoid512(gv)), _mm512_loadu_ps(u + i)));
	}
	for (; i < n; i++) out[i] = g[i] * agv_sigmoid1(g[i]) * u[i];
}

AGV_AVX2 static inline void agv_swiglu256(float* out, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 gv = _mm256_loadu_ps(g + i);
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(gv, agv_sigmoid256(gv)), _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++) out[i] = g[i] * agv_sigmoid1(g[i]) * u[i];
}

// out[i] = silu(g[i]) * u[i] = g[i] * sigmoid(g[i]) * u[i].
static inline void agv_swiglu(int level, float* out, const float* g, const float* u, int64_t n) {
	if (level >= 2) {
		agv_swiglu512(out, g, u, n);
	} else if (level == 1) {
		agv_swiglu256(out, g, u, n);
	} else {
		for (int64_t i = 0; i < n; i++) {
			float s = g[i] / (1.0f + expf(-g[i]));
			out[i] = s * u[i];
		}
	}
}

// agv_tree512 sums the 16 lanes of v by the fixed tree ((i + i+8) +
// (i+4)) ... down to lane 0: the bf16 kernels' (bf16.c, bf16z.c) last step,
// one function so that both round the same way.
AGV_AVX512 AGV_INLINE float agv_tree512(__m512 v) {
	__m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
	__m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
	__m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
	__m128 s1 = _mm_add_ss(s2, _mm_movehdup_ps(s2));
	return _mm_cvtss_f32(s1);
}

#endif
