// RMSNorm: y = w * x * r with r = 1/sqrt(mean(x^2) + eps).
// Backward per row (d = width, g = w * dy):
//   dx = r * g - (r^3 / d) * x * sum(g * x),   dw += dy * x * r.
#include "train.h"
#include "vec.h"

void agt_rmsnorm_forward(int level, float* y, float* rstd, const float* x, const float* w,
                         int64_t rows, int64_t d, float eps) {
	for (int64_t r = 0; r < rows; r++) {
		const float* xr = x + r * d;
		float* yr = y + r * d;
		float ms = agv_dot(level, xr, xr, d) / (float)d;
		float inv = 1.0f / sqrtf(ms + eps);
		rstd[r] = inv;
		for (int64_t i = 0; i < d; i++) yr[i] = w[i] * (xr[i] * inv);
	}
}

void agt_rmsnorm_backward(int level, float* dx, float* dw, const float* dy, const float* x,
                          const float* w, const float* rstd, int64_t rows, int64_t d) {
	(void)level;
	for (int64_t r = 0; r < rows; r++) {
		const float* xr = x + r * d;
		const float* dyr = dy + r * d;
		float* dxr = dx + r * d;
		float inv = rstd[r];
		double dot = 0; // sum(w*dy*x): a short reduction, kept in double
		for (int64_t i = 0; i < d; i++) dot += (double)(w[i] * dyr[i]) * xr[i];
		float c = (float)(dot * inv * inv * inv / (double)d);
		for (int64_t i = 0; i < d; i++) {
			dxr[i] += inv * (w[i] * dyr[i]) - c * xr[i];
			dw[i] += dyr[i] * (xr[i] * inv);
		}
	}
}
