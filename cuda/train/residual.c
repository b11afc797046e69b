// Residual connection out = a + b. Its backward is the identity into both
// branches: the Go side keeps one gradient buffer for the residual stream,
// and each branch's first op (an RMSNorm) accumulates its input gradient
// into that buffer, so no separate backward kernel is needed.
#include "train.h"
#include "vec.h"

void agt_residual_forward(float* out, const float* a, const float* b, int64_t n) {
	for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

