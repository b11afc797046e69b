// exp(x − m) in float64 for the sampler's and prompt logprobs' softmax
// normalizers (see expshift.h): one exp per vocabulary entry, 151,936 of
// them per sampled token at Qwen3's vocabulary, where a scalar exp takes
// about 6 ns each.
//
// exp(x) = 2^n · exp(r), n = nearbyint(x·log2 e), r = x − n·ln2 (Cody and
// Waite's two-part ln 2, each part an fma), exp(r) by its Taylor series to
// degree 13 in Horner form: |r| ≤ 0.347, so the series' remainder is below
// 5e-18, 0.04 ulp of the result. 2^n · p is one rounding (vscalefpd, or
// ldexp: the same correctly rounded product, subnormal results included),
// so every path computes the same bits. x is clamped to [−746, 710] first:
// below, exp rounds to 0; above, to infinity; a NaN stays NaN.
#include "expshift.h"
#include "vecops.h"

#include <immintrin.h>
#include <math.h>

#define XLO (-746.0)
#define XHI 710.0
static const double log2e = 1.4426950408889634;
// fdlibm's split of ln 2: ln2hi has 32 significant bits, so n·ln2hi is
// exact for every n here, and ln2hi + ln2lo is ln 2 to 2^-85.
static const double ln2hi = 6.93147180369123816490e-01, ln2lo = 1.90821492927058770002e-10;
// 1/k!, k = 0 … 13: the Taylor coefficients.
static const double coef[14] = {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, 1.0 / 5040,
                                1.0 / 40320, 1.0 / 362880, 1.0 / 3628800, 1.0 / 39916800, 1.0 / 479001600,
                                1.0 / 6227020800.0};

enum { PARTS = 32 };

static inline double exp_one(double x) {
	if (x != x) return x;
	x = x < XLO ? XLO : x > XHI ? XHI : x;
	double n = nearbyint(x * log2e);
	double r = fma(-n, ln2hi, x);
	r = fma(-n, ln2lo, r);
	double p = coef[13];
#pragma GCC unroll 13
	for (int k = 12; k >= 0; k--) p = fma(p, r, coef[k]);
	return ldexp(p, (int)n);
}

// The 32 partial sums in a fixed tree.
static double reduce(const double a[PARTS]) {
	double s[8];
	for (int l = 0; l < 8; l++) s[l] = (a[l] + a[l + 8]) + (a[l + 16] + a[l + 24]);
	for (int l = 0; l < 4; l++) s[l] += s[l + 4];
	return (s[0] + s[2]) + (s[1] + s[3]);
}

// x[i] as a double: x holds floats when f32.
static inline double at(const void* x, int f32, int64_t i) {
	return f32 ? (double)((const float*)x)[i] : ((const double*)x)[i];
}

// The elements from i on, one at a time into their partial sums.
static double tail(const void* x, int f32, int64_t i, int64_t n, double m, double* dst, double a[PARTS]) {
	for (; i < n; i++) {
		double e = exp_one(at(x, f32, i) - m);
		if (dst) dst[i] = e;
		a[i % PARTS] += e;
	}
	return reduce(a);
}

AGV_AVX512 static inline __m512d exp512(__m512d x) {
	// min/max return their second operand when either is NaN: x's.
	x = _mm512_max_pd(_mm512_set1_pd(XLO), _mm512_min_pd(_mm512_set1_pd(XHI), x));
	__m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(ln2hi), x);
	r = _mm512_fnmadd_pd(n, _mm512_set1_pd(ln2lo), r);
	__m512d p = _mm512_set1_pd(coef[13]);
#pragma GCC unroll 13
	for (int k = 12; k >= 0; k--) p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(coef[k]));
	return _mm512_scalef_pd(p, n);
}

AGV_AVX512 static inline __m512d load512(const void* x, int f32, int64_t i) {
	return f32 ? _mm512_cvtps_pd(_mm256_loadu_ps((const float*)x + i)) : _mm512_loadu_pd((const double*)x + i);
}

AGV_AVX512 static double expshift512(const void* x, int f32, int64_t n, double m, double* dst) {
	__m512d acc[4] = {_mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd(), _mm512_setzero_pd()};
	const __m512d vm = _mm512_set1_pd(m);
	int64_t i = 0;
	for (; i + PARTS <= n; i += PARTS) {
		for (int v = 0; v < 4; v++) {
			__m512d e = exp512(_mm512_sub_pd(load512(x, f32, i + 8 * v), vm));
			if (dst) _mm512_storeu_pd(dst + i + 8 * v, e);
			acc[v] = _mm512_add_pd(acc[v], e);
		}
	}
	double a[PARTS];
	for (int v = 0; v < 4; v++) _mm512_storeu_pd(a + 8 * v, acc[v]);
	return tail(x, f32, i, n, m, dst, a);
}

// AVX2 has no vscalefpd: 2^n is built from its bits when every n of the
// vector is a normal exponent, and the rare vector with one that is not
// (x below −708 or above 709) goes through exp_one.
AGV_AVX2 static inline __m256d exp256(__m256d x) {
	x = _mm256_max_pd(_mm256_set1_pd(XLO), _mm256_min_pd(_mm256_set1_pd(XHI), x));
	__m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(log2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	// !(−1022 ≤ n ≤ 1023) catches a NaN too.
	__m256d ok = _mm256_and_pd(_mm256_cmp_pd(n, _mm256_set1_pd(-1022.0), _CMP_GE_OQ),
	                           _mm256_cmp_pd(n, _mm256_set1_pd(1023.0), _CMP_LE_OQ));
	if (_mm256_movemask_pd(ok) != 0xf) {
		double e[4];
		_mm256_storeu_pd(e, x); // clamped as exp_one clamps: the same values
		for (int l = 0; l < 4; l++) e[l] = exp_one(e[l]);
		return _mm256_loadu_pd(e);
	}
	__m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(ln2hi), x);
	r = _mm256_fnmadd_pd(n, _mm256_set1_pd(ln2lo), r);
	__m256d p = _mm256_set1_pd(coef[13]);
#pragma GCC unroll 13
	for (int k = 12; k >= 0; k--) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(coef[k]));
	// n + 1023 in the exponent field: 2^n exactly, and p·2^n is exact
	// (a normal result, no rounding), as ldexp's.
	__m128i ni = _mm256_cvtpd_epi32(n);
	__m256i bits = _mm256_slli_epi64(_mm256_add_epi64(_mm256_cvtepi32_epi64(ni), _mm256_set1_epi64x(1023)), 52);
	return _mm256_mul_pd(p, _mm256_castsi256_pd(bits));
}

AGV_AVX2 static inline __m256d load256(const void* x, int f32, int64_t i) {
	return f32 ? _mm256_cvtps_pd(_mm_loadu_ps((const float*)x + i)) : _mm256_loadu_pd((const double*)x + i);
}

AGV_AVX2 static double expshift256(const void* x, int f32, int64_t n, double m, double* dst) {
	__m256d acc[8];
	for (int v = 0; v < 8; v++) acc[v] = _mm256_setzero_pd();
	const __m256d vm = _mm256_set1_pd(m);
	int64_t i = 0;
	for (; i + PARTS <= n; i += PARTS) {
		for (int v = 0; v < 8; v++) {
			__m256d e = exp256(_mm256_sub_pd(load256(x, f32, i + 4 * v), vm));
			if (dst) _mm256_storeu_pd(dst + i + 4 * v, e);
			acc[v] = _mm256_add_pd(acc[v], e);
		}
	}
	double a[PARTS];
	for (int v = 0; v < 8; v++) _mm256_storeu_pd(a + 4 * v, acc[v]);
	return tail(x, f32, i, n, m, dst, a);
}

static double expshift(int level, const void* x, int f32, int64_t n, double m, double* dst) {
	if (level >= 2) return expshift512(x, f32, n, m, dst);
	if (level >= 1) return expshift256(x, f32, n, m, dst);
	double a[PARTS] = {0};
	return tail(x, f32, 0, n, m, dst, a);
}

double agl_expshift(int level, const double* x, int64_t n, double m, double* dst) {
	return expshift(level, x, 0, n, m, dst);
}

double agl_expshift_sum_f32(int level, const float* x, int64_t n, double m) {
	return expshift(level, x, 1, n, m, NULL);
}
