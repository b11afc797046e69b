// SwiGLU MLP activation: out = silu(g) * u, silu(g) = g * sigmoid(g).
// Backward: du = dout * silu(g), dg = dout * u * s * (1 + g * (1 - s))
// with s = sigmoid(g).
//
// The vector paths use agt_exp512/agt_exp256 (vec.h) through sigmoid512/
// sigmoid256; the generic path calls expf.
#include "train.h"
#include "vec.h"

static inline float sigmoid1(float g) { return 1.0f / (1.0f + expf(-g)); }

AGV_AVX512 AGV_INLINE __m512 sigmoid512(__m512 g) {
	__m512 one = _mm512_set1_ps(1.0f);
	return _mm512_div_ps(one, _mm512_add_ps(one, agt_exp512(_mm512_sub_ps(_mm512_setzero_ps(), g))));
}

AGV_AVX2 AGV_INLINE __m256 sigmoid256(__m256 g) {
	__m256 one = _mm256_set1_ps(1.0f);
	return _mm256_div_ps(one, _mm256_add_ps(one, agt_exp256(_mm256_sub_ps(_mm256_setzero_ps(), g))));
}

AGV_AVX512 static void fwd512(float* out, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 gv = _mm512_loadu_ps(g + i);
		_mm512_storeu_ps(out + i, _mm512_mul_ps(_mm512_mul_ps(gv, sigmoid512(gv)), _mm512_loadu_ps(u + i)));
	}
	for (; i < n; i++) out[i] = g[i] * sigmoid1(g[i]) * u[i];
}

AGV_AVX2 static void fwd256(float* out, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 gv = _mm256_loadu_ps(g + i);
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(gv, sigmoid256(gv)), _mm256_loadu_ps(u + i)));
	}
	for (; i < n; i++) out[i] = g[i] * sigmoid1(g[i]) * u[i];
}

void agt_swiglu_forward(int level, float* out, const float* g, const float* u, int64_t n) {
	if (level >= 2) {
		fwd512(out, g, u, n);
	} else if (level == 1) {
		fwd256(out, g, u, n);
	} else {
		for (int64_t i = 0; i < n; i++) {
			float s = g[i] / (1.0f + expf(-g[i]));
			out[i] = s * u[i];
		}
	}
}

static inline void bwd1(float* dg, float* du, float dout, float g, float u) {
	float sig = sigmoid1(g);
	*du = dout * (g * sig);
	*dg = dout * u * sig * (1.0f + g * (1.0f - sig));
}

AGV_AVX512 static void bwd512(float* dg, float* du, const float* dout, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	__m512 one = _mm512_set1_ps(1.0f);
	for (; i + 16 <= n; i += 16) {
		__m512 gv = _mm512_loadu_ps(g + i), d = _mm512_loadu_ps(dout + i);
		__m512 s = sigmoid512(gv);
		_mm512_storeu_ps(du + i, _mm512_mul_ps(d, _mm512_mul_ps(gv, s)));
		__m512 t = _mm512_add_ps(one, _mm512_mul_ps(gv, _mm512_sub_ps(one, s)));
		_mm512_storeu_ps(dg + i, _mm512_mul_ps(_mm512_mul_ps(_mm512_mul_ps(d, _mm512_loadu_ps(u + i)), s), t));
	}
	for (; i < n; i++) bwd1(dg + i, du + i, dout[i], g[i], u[i]);
}

AGV_AVX2 static void bwd256(float* dg, float* du, const float* dout, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	__m256 one = _mm256_set1_ps(1.0f);
	for (; i + 8 <= n; i += 8) {
		__m256 gv = _mm256_loadu_ps(g + i), d = _mm256_loadu_ps(dout + i);
		__m256 s = sigmoid256(gv);
		_mm256_storeu_ps(du + i, _mm256_mul_ps(d, _mm256_mul_ps(gv, s)));
		__m256 t = _mm256_add_ps(one, _mm256_mul_ps(gv, _mm256_sub_ps(one, s)));
		_mm256_storeu_ps(dg + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(d, _mm256_loadu_ps(u + i)), s), t));
	}
	for (; i < n; i++) bwd1(dg + i, du + i, dout[i], g[i], u[i]);
}

void agt_swiglu_backward(int level, float* dg, float* du, const float* dout, const float* g,
                         const float* u, int64_t n) {
	if (level >= 2) {
		bwd512(dg, du, dout, g, u, n);
	} else if (level == 1) {
		bwd256(dg, du, dout, g, u, n);
	} else {
		for (int64_t i = 0; i < n; i++) bwd1(dg + i, du + i, dout[i], g[i], u[i]);
	}
}
