// Vector helpers of the training kernels: softmax. The dot/axpy and exp
// helpers, SwiGLU's forward, the target-attribute macros and the RoPE rotation are shared
// with the inference kernels (cuda/kernels/vecops.h, on the include path
// through this package's cgo CFLAGS). Each translation unit gets its own
// static copies; the AVX2/AVX-512 variants are picked at run time from the
// level the Go side detected (0 generic, 1 AVX2+FMA, 2 AVX-512F).
#ifndef AGT_VEC_H
#define AGT_VEC_H
#include <string.h>

#include "vecops.h"

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
		__m512 e = agv_exp512(_mm512_sub_ps(_mm512_loadu_ps(p + i), vmx));
		_mm512_storeu_ps(p + i, e);
		sum = _mm512_add_ps(sum, e);
	}
	if (i < n) {
		__mmask16 m = (__mmask16)((1u << (n - i)) - 1);
		__m512 e = _mm512_maskz_mov_ps(m, agv_exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, p + i), vmx)));
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
