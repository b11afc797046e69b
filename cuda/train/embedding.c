// Token embedding lookup; its backward scatters row gradients into the
// table (repeated ids accumulate).
#include "train.h"
#include "vec.h"

void agt_embedding_forward(float* x, const float* table, const int32_t* ids, int64_t t, int64_t d) {
	for (int64_t i = 0; i < t; i++) memcpy(x + i * d, table + (int64_t)ids[i] * d, sizeof(float) * d);
}

void agt_embedding_backward(float* dtable, const float* dx, const int32_t* ids, int64_t t, int64_t d) {
	for (int64_t i = 0; i < t; i++) {
		float* row = dtable + (int64_t)ids[i] * d;
		const float* g = dx + i * d;
		for (int64_t j = 0; j < d; j++) row[j] += g[j];
	}
}
