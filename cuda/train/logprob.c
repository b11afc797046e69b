// Final log-softmax, gathered at the target ids: logp = z[target] - lse(z).
// Backward for a loss L with dL/dlogp given per row:
//   dz = dlogp * (onehot(target) - softmax(z)).
#include "train.h"
#include "vec.h"

void agt_logprob_forward(const float* logits, const int32_t* target, float* logp, float* lse,
                         int64_t v, int64_t r_lo, int64_t r_hi) {
	for (int64_t r = r_lo; r < r_hi; r++) {
		const float* z = logits + r * v;
		float mx = -INFINITY;
		for (int64_t i = 0; i < v; i++) mx = z[i] > mx ? z[i] : mx;
		double sum = 0;
		for (int64_t i = 0; i < v; i++) sum += exp((double)(z[i] - mx));
		float l = mx + (float)log(sum);
		lse[r] = l;
		logp[r] = target[r] >= 0 ? z[target[r]] - l : 0.0f;
	}
}

void agt_logprob_backward(float* dlogits, const float* dlogp, const float* logits,
                          const int32_t* target, const float* lse, int64_t v, int64_t r_lo,
                          int64_t r_hi) {
	for (int64_t r = r_lo; r < r_hi; r++) {
		float* dz = dlogits + r * v;
		float g = dlogp[r];
		if (g == 0 || target[r] < 0) {
			memset(dz, 0, sizeof(float) * v);
			continue;
		}
		const float* z = logits + r * v;
		float l = lse[r];
		for (int64_t i = 0; i < v; i++) dz[i] = -g * expf(z[i] - l);
		dz[target[r]] += g;
	}
}
