// Rotary embedding, Hugging Face half-split convention: for j < hd/2 with
// angle a = pos * inv_freq[j], (x_j, x_{j+hd/2}) is rotated by a. The
// backward pass rotates the gradient by -a (a rotation's inverse is its
// transpose). The rotation is the inference kernels' one (vecops.h), so
// training and inference compute the same angles and products.
#include "train.h"
#include "vec.h"

void agt_rope_forward(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                      const int32_t* pos, const float* inv_freq) {
	agv_rope(x, t, nheads, hd, stride, pos, inv_freq, 1.0f);
}

void agt_rope_backward(float* dx, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                       const int32_t* pos, const float* inv_freq) {
	agv_rope(dx, t, nheads, hd, stride, pos, inv_freq, -1.0f);
}
