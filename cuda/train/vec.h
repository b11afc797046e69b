// Vector helpers of the training kernels: exp and softmax. The dot/axpy
// helpers, the target-attribute macros and the RoPE rotation are shared
// with the inference kernels (cuda/kernels/vecops.h, on the include path
// through this package's cgo CFLAGS). Each translation unit gets its own
// static copies; the AVX2/AVX-512 variants are picked at run time from the
// level the Go side detected (0 generic, 1 AVX2+FMA, 2 AVX-512F).
#ifndef AGT_VEC_H
#define AGT_VEC_H
#include <string.h>

#include "vecops.h"

// Vector exp with Cephes' expf polynomial: range reduction by ln 2, a
// degree-6 polynomial, relative error ~1e-7 (like libm's expf); inputs are
// clamped so that the result saturates or underflows instead of wrapping.
#define EXP_HI 88.3762626647949f
#define EXP_LO -88.3762626647949f
#define LOG2E 1.44269504088896341f
#define LN2_HI 0.693359375f
#define LN2_LO -2.12194440e-4f

AGV_AVX512 static inline __m512 agt_exp512(__m512 x) {
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

AGV_AVX2 static inline __m256 agt_exp256(__m256 x) {
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
AGV_AVX512 static inline void agt_softmax512(float* p, int64_t n, float scale) {
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
