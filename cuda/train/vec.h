// Vector helpers shared by the training kernels. Each translation unit gets
// its own static copies; the AVX2/AVX-512 variants are compiled with
// per-function target attributes and picked at run time from the level the
// Go side detected (0 generic, 1 AVX2+FMA, 2 AVX-512F), so the library runs
// on any x86-64 without -march flags.
#ifndef AGT_VEC_H
#define AGT_VEC_H
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define AGT_AVX512 __attribute__((target("avx512f")))
#define AGT_AVX2 __attribute__((target("avx2,fma")))
#define AGT_INLINE static inline __attribute__((always_inline))

AGT_AVX512 static inline float agt_dot512(const float* a, const float* b, int64_t n) {
	__m512 acc = _mm512_setzero_ps();
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
	}
	return _mm512_reduce_add_ps(acc);
}

AGT_AVX512 static inline void agt_axpy512(float* y, float a, const float* x, int64_t n) {
	__m512 va = _mm512_set1_ps(a);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm512_storeu_ps(y + i, _mm512_fmadd_ps(va, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		_mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(va, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
	}
}

AGT_AVX2 static inline float agt_hsum256(__m256 v) {
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

AGT_AVX2 static inline float agt_dot256(const float* a, const float* b, int64_t n) {
	__m256 acc = _mm256_setzero_ps();
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
	float s = agt_hsum256(acc);
	for (; i < n; i++) s = fmaf(a[i], b[i], s);
	return s;
}

AGT_AVX2 static inline void agt_axpy256(float* y, float a, const float* x, int64_t n) {
	__m256 va = _mm256_set1_ps(a);
	int64_t i = 0;
	for (; i + 8 <= n; i += 8)
		_mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
	for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

static inline float agt_dot_generic(const float* a, const float* b, int64_t n) {
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

static inline void agt_axpy_generic(float* y, float a, const float* x, int64_t n) {
	for (int64_t i = 0; i < n; i++) y[i] += a * x[i];
}

static inline float agt_dot(int level, const float* a, const float* b, int64_t n) {
	if (level >= 2) return agt_dot512(a, b, n);
	if (level == 1) return agt_dot256(a, b, n);
	return agt_dot_generic(a, b, n);
}

static inline void agt_axpy(int level, float* y, float a, const float* x, int64_t n) {
	if (level >= 2) agt_axpy512(y, a, x, n);
	else if (level == 1) agt_axpy256(y, a, x, n);
	else agt_axpy_generic(y, a, x, n);
}
// Vector exp with Cephes' expf polynomial: range reduction by ln 2, a
// degree-6 polynomial, relative error ~1e-7 (like libm's expf); inputs are
// clamped so that the result saturates or underflows instead of wrapping.
#define EXP_HI 88.3762626647949f
#define EXP_LO -88.3762626647949f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f

AGT_AVX512 static inline __m512 agt_exp512(__m512 x) {
	x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(EXP_LO)), _mm512_set1_ps(EXP_HI));
	__m512 k = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(k, _mm512_set1_ps(LN2_HI), x);
	r = _mm512_fnmadd_ps(k, _mm512_set1_ps(LN2_LO), r);
	__m512 p = _mm512_set1_ps(1.9875691500E-4f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
	p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
	return _mm512_scalef_ps(p, k);
}

AGT_AVX2 static inline __m256 agt_exp256(__m256 x) {
	// Lower clamp -87: k >= -126 keeps the biased exponent below >= 0 (the
	// result then underflows to 0 instead of wrapping around).
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(EXP_HI));
	__m256 k = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(LOG2E)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(k, _mm256_set1_ps(LN2_HI), x);
	r = _mm256_fnmadd_ps(k, _mm256_set1_ps(LN2_LO), r);
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


// p[0..n) = softmax(scale * p[0..n)) in place.
AGT_AVX512 static inline void agt_softmax512(float* p, int64_t n, float scale) {
	__m512 vs = _mm512_set1_ps(scale), mx = _mm512_set1_ps(-INFINITY);
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 x = _mm512_mul_ps(_mm512_loadu_ps(p + i), vs);
		_mm512_storeu_ps(p + i, x);
		mx = _mm512_max_ps(mx, x);
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + i), vs);
		_mm512_mask_storeu_ps(p + i, m, x);
		mx = _mm512_mask_max_ps(mx, m, mx, x);
	}
	__m512 vmx = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), sum = _mm512_setzero_ps();
	for (i = 0; i + 16 <= n; i += 16) {
		__m512 e = agt_exp512(_mm512_sub_ps(_mm512_loadu_ps(p + i), vmx));
		_mm512_storeu_ps(p + i, e);
		sum = _mm512_add_ps(sum, e);
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512 e = _mm512_maskz_mov_ps(m, agt_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, p + i), vmx)));
		_mm512_mask_storeu_ps(p + i, m, e);
		sum = _mm512_add_ps(sum, e);
	}
	__m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
	for (i = 0; i + 16 <= n; i += 16) _mm512_storeu_ps(p + i, _mm512_mul_ps(_mm512_loadu_ps(p + i), inv));
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		_mm512_mask_storeu_ps(p + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, p + i), inv));
	}
}

static inline void agt_softmax_generic(float* p, int64_t n, float scale) {
	float mx = -INFINITY;
	for (int64_t j = 0; j < n; j++) {
		p[j] *= scale;
		if (p[j] > mx) mx = p[j];
	}
	float sum = 0;
	for (int64_t j = 0; j < n; j++) {
		float e = expf(p[j] - mx);
		p[j] = e;
		sum += e;
	}
	float inv = 1.0f / sum;
	for (int64_t j = 0; j < n; j++) p[j] *= inv;
}

static inline void agt_softmax(int level, float* p, int64_t n, float scale) {
	if (level >= 2) agt_softmax512(p, n, scale);
	else agt_softmax_generic(p, n, scale);
}
#endif
