// Rotary embedding, Hugging Face half-split convention: for j < hd/2 with
// angle a = pos * inv_freq[j], (x_j, x_{j+hd/2}) is rotated by a. The
// backward pass rotates the gradient by -a (a rotation's inverse is its
// transpose).
#include "train.h"
#include "vec.h"

static void rotate(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                   const int32_t* pos, const float* inv_freq, float sign) {
	int64_t half = hd / 2;
	float cs[512], sn[512];
	for (int64_t i = 0; i < t; i++) {
		for (int64_t j0 = 0; j0 < half; j0 += 512) {
			int64_t m = half - j0 < 512 ? half - j0 : 512;
			for (int64_t j = 0; j < m; j++) {
				// float32 angle, one rounded product, like transformers
				// and the inference kernels.
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

void agt_rope_forward(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                      const int32_t* pos, const float* inv_freq) {
	rotate(x, t, nheads, hd, stride, pos, inv_freq, 1.0f);
}

void agt_rope_backward(float* dx, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                       const int32_t* pos, const float* inv_freq) {
	rotate(dx, t, nheads, hd, stride, pos, inv_freq, -1.0f);
}
