// SwiGLU MLP activation: out = silu(g) * u, silu(g) = g * sigmoid(g).
// Backward: du = dout * silu(g), dg = dout * u * s * (1 + g * (1 - s))
// with s = sigmoid(g).
#include "train.h"
#include "vec.h"

void agt_swiglu_forward(float* out, const float* g, const float* u, int64_t n) {
	for (int64_t i = 0; i < n; i++) {
		float s = g[i] / (1.0f + expf(-g[i]));
		out[i] = s * u[i];
	}
}

void agt_swiglu_backward(float* dg, float* du, const float* dout, const float* g, const float* u,
                         int64_t n) {
	for (int64_t i = 0; i < n; i++) {
		float sig = 1.0f / (1.0f + expf(-g[i]));
		float silu = g[i] * sig;
		du[i] = dout[i] * silu;
		dg[i] = dout[i] * u[i] * sig * (1.0f + g[i] * (1.0f - sig));
	}
}
