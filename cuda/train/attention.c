// Causal multi-head attention with grouped KV heads (GQA), within one
// sequence. Forward for query i of head h (kv head h / (nh/nkv)):
//   s_j = scale * q_i.k_j (j <= i), p = softmax(s), out_i = sum_j p_j v_j,
// saving p. Backward, with dp_j = dout_i.v_j:
//   dv_j += p_j dout_i,  ds_j = p_j (dp_j - sum_l p_l dp_l),
//   dq_i = scale sum_j ds_j k_j,  dk_j += scale ds_j q_i.
//
// The score-like products (q.k_j and dout.v_j for all j at once) run
// against transposed copies K^T, V^T [hd][t] of the kv head, so they are
// axpy's along j instead of one short dot product (and one horizontal
// reduction) per pair.
#include "train.h"
#include "vec.h"

// kvt[d][j] = x[j][kvh*hd + d] for j < t.
static void transpose_head(float* kvt, const float* x, int64_t t, int64_t ks, int64_t kvh, int64_t hd) {
	for (int64_t j = 0; j < t; j++)
		for (int64_t d = 0; d < hd; d++) kvt[d * t + j] = x[j * ks + kvh * hd + d];
}

// s[j] = sum_d x[d] * mt[d][j] for j < n.
static void scores(int level, float* s, const float* x, const float* mt, int64_t t, int64_t hd, int64_t n) {
	memset(s, 0, sizeof(float) * n);
	for (int64_t d = 0; d < hd; d++) agv_axpy(level, s, x[d], mt + d * t, n);
}

void agt_attention_forward(int level, float* out, float* att, const float* q, const float* k,
                           const float* v, int64_t t, int64_t nh, int64_t nkv, int64_t hd,
                           float scale, int64_t h_lo, int64_t h_hi, float* scratch) {
	int64_t group = nh / nkv, qs = nh * hd, ks = nkv * hd;
	float* kt = scratch; // [hd][t]
	int64_t cur = -1;
	for (int64_t h = h_lo; h < h_hi; h++) {
		int64_t kvh = h / group;
		if (kvh != cur) {
			transpose_head(kt, k, t, ks, kvh, hd);
			cur = kvh;
		}
		for (int64_t i = 0; i < t; i++) {
			const float* qi = q + i * qs + h * hd;
			float* p = att + (h * t + i) * t;
			scores(level, p, qi, kt, t, hd, i + 1);
			agt_softmax(level, p, i + 1, scale);
			float* oi = out + i * qs + h * hd;
			memset(oi, 0, sizeof(float) * hd);
			for (int64_t j = 0; j <= i; j++) agv_axpy(level, oi, p[j], v + j * ks + kvh * hd, hd);
		}
	}
}

void agt_attention_backward(int level, float* dq, float* dk, float* dv, const float* dout,
                            const float* att, const float* q, const float* k, const float* v,
                            int64_t t, int64_t nh, int64_t nkv, int64_t hd, float scale,
                            int64_t g_lo, int64_t g_hi, float* scratch) {
	int64_t group = nh / nkv, qs = nh * hd, ks = nkv * hd;
	float* dp = scratch;      // [t]
	float* vt = scratch + t;  // [hd][t]
	for (int64_t g = g_lo; g < g_hi; g++) {
		transpose_head(vt, v, t, ks, g, hd);
		for (int64_t j = 0; j < t; j++) {
			memset(dk + j * ks + g * hd, 0, sizeof(float) * hd);
			memset(dv + j * ks + g * hd, 0, sizeof(float) * hd);
		}
		for (int64_t h = g * group; h < (g + 1) * group; h++) {
			for (int64_t i = 0; i < t; i++) {
				const float* p = att + (h * t + i) * t;
				const float* doi = dout + i * qs + h * hd;
				const float* qi = q + i * qs + h * hd;
				float* dqi = dq + i * qs + h * hd;
				memset(dqi, 0, sizeof(float) * hd);
				scores(level, dp, doi, vt, t, hd, i + 1);
				double dot = 0;
				for (int64_t j = 0; j <= i; j++) {
					dot += (double)p[j] * dp[j];
					agv_axpy(level, dv + j * ks + g * hd, p[j], doi, hd);
				}
				float d = (float)dot;
				for (int64_t j = 0; j <= i; j++) {
					float ds = p[j] * (dp[j] - d) * scale;
					agv_axpy(level, dqi, ds, k + j * ks + g * hd, hd);
					agv_axpy(level, dk + j * ks + g * hd, ds, qi, hd);
				}
			}
		}
	}
}
