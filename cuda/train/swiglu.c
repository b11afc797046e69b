// SwiGLU MLP activation: out = silu(g) * u, silu(g) = g * sigmoid(g).
// Backward: du = dout * silu(g), dg = dout * u * s * (1 + g * (1 - s))
// with s = sigmoid(g).
//
// The forward and the sigmoids are vecops.h's (shared with the inference
// kernels, so both round the same way): the vector paths use agv_exp512/
// agv_exp256, the generic path calls expf.
#include "train.h"
#include "vec.h"

void agt_swiglu_forward(int level, float* out, const float* g, const float* u, int64_t n) {
	agv_swiglu(level, out, g, u, n);
}

static inline void bwd1(float* dg, float* du, float dout, float g, float u) {
	float sig = agv_sigmoid1(g);
	*du = dout * (g * sig);
	*dg = dout * u * sig * (1.0f + g * (1.0f - sig));
}

AGV_AVX512 static void bwd512(float* dg, float* du, const float* dout, const float* g, const float* u, int64_t n) {
	int64_t i = 0;
	__m512 one = _mm512_set1_ps(1.0f);
	for (; i + 16 <= n; i += 16) {
		__m512 gv = _mm512_loadu_ps(g + i), d = _mm512_loadu_ps(dout + i);
		__m512 s = agv_sigmoid512(gv);
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
		__m256 s = agv_sigmoid256(gv);
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
