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
#endif
