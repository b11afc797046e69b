// Training kernels for the reference trainer: the forward pass of a
// Llama-family decoder over whole sequences and its backward pass, one C
// file per layer kind with forward and backward side by side (llm.c style).
//
// Layout conventions: activations are row-major [tokens][width]; weights are
// Hugging Face's [out][in]; every backward function ACCUMULATES (+=) into
// its parameter gradients and into the input gradient unless it says it
// writes. level: 0 generic, 1 AVX2+FMA, 2 AVX-512F, as detected by
// cuda/kernels (kernels.Detect).
#ifndef AGT_TRAIN_H
#define AGT_TRAIN_H
#include <stdint.h>

// matmul.c ------------------------------------------------------------
// C[m][n] = (accumulate ? C[m][n] : 0) + sum_k A[m][k] * B[n][k] for the
// rows m in [m_lo, m_hi): a linear layer's forward y = x W^T.
void agt_gemm_nt(int level, const float* a, const float* b, float* c, int64_t m, int64_t n,
                 int64_t k, int accumulate, int64_t m_lo, int64_t m_hi);
// C[m][j] += sum_p A(m,p) * B[p][j] for rows m in [m_lo, m_hi), with
// A(m,p) = a[m*sam + p*sap] and B row-major [pn][jn]: dx = dy W (sam = N,
// sap = 1) and dW += dy^T x (sam = 1, sap = N) without transposed copies.
void agt_gemm_nn_acc(int level, const float* a, int64_t sam, int64_t sap, const float* b,
                     float* c, int64_t jn, int64_t pn, int64_t m_lo, int64_t m_hi);
// y[t][n] += bias[n]
void agt_bias_forward(float* y, const float* bias, int64_t t, int64_t n);
// dbias[n] += sum_t dy[t][n]
void agt_bias_backward(float* dbias, const float* dy, int64_t t, int64_t n);

// rmsnorm.c -----------------------------------------------------------
// y[r] = w * x[r] * rstd[r], rstd[r] = 1/sqrt(mean(x[r]^2) + eps); saves rstd.
void agt_rmsnorm_forward(int level, float* y, float* rstd, const float* x, const float* w,
                         int64_t rows, int64_t d, float eps);
void agt_rmsnorm_backward(int level, float* dx, float* dw, const float* dy, const float* x,
                          const float* w, const float* rstd, int64_t rows, int64_t d);

// rope.c --------------------------------------------------------------
// In-place rotation of heads [0, nheads) of hd in rows of stride floats,
// Hugging Face half-split convention; backward applies the inverse rotation
// to the gradient.
void agt_rope_forward(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                      const int32_t* pos, const float* inv_freq);
void agt_rope_backward(float* dx, int64_t t, int64_t nheads, int64_t hd, int64_t stride,
                       const int32_t* pos, const float* inv_freq);

// attention.c ---------------------------------------------------------
// Causal attention within one sequence of t tokens. q [t][nh*hd], k and v
// [t][nkv*hd]; out [t][nh*hd]; att [nh][t][t] saves the softmax
// probabilities (upper triangle left untouched). Forward covers heads
// [h_lo, h_hi). Backward covers kv heads [g_lo, g_hi) and every query head
// of their group, so parallel calls on disjoint kv-head ranges write
// disjoint parts of dq, dk and dv, which it WRITES (not accumulates).
// scratch holds t*hd floats (forward) or t*(hd+1) floats (backward).
void agt_attention_forward(int level, float* out, float* att, const float* q, const float* k,
                           const float* v, int64_t t, int64_t nh, int64_t nkv, int64_t hd,
                           float scale, int64_t h_lo, int64_t h_hi, float* scratch);
void agt_attention_backward(int level, float* dq, float* dk, float* dv, const float* dout,
                            const float* att, const float* q, const float* k, const float* v,
                            int64_t t, int64_t nh, int64_t nkv, int64_t hd, float scale,
                            int64_t g_lo, int64_t g_hi, float* scratch);

// swiglu.c ------------------------------------------------------------
// out[t][j] = silu(g[t][j]) * u[t][j]; backward WRITES dg and du.
void agt_swiglu_forward(int level, float* out, const float* g, const float* u, int64_t n);
void agt_swiglu_backward(int level, float* dg, float* du, const float* dout, const float* g,
                         const float* u, int64_t n);

// embedding.c ---------------------------------------------------------
// x[t] = table[ids[t]]; backward: dtable[ids[t]] += dx[t].
void agt_embedding_forward(float* x, const float* table, const int32_t* ids, int64_t t, int64_t d);
void agt_embedding_backward(float* dtable, const float* dx, const int32_t* ids, int64_t t, int64_t d);

// residual.c ----------------------------------------------------------
// out = a + b. The backward of a residual is the identity on both inputs;
// the Go side realizes it by accumulating every branch's input gradient
// into one residual-stream gradient buffer (see residual.c).
void agt_residual_forward(float* out, const float* a, const float* b, int64_t n);

// logprob.c -----------------------------------------------------------
// For rows [r_lo, r_hi) of logits [t][v]: lse[r] = logsumexp(logits[r]),
// logp[r] = logits[r][target[r]] - lse[r] (target < 0: logp 0).
void agt_logprob_forward(const float* logits, const int32_t* target, float* logp, float* lse,
                         int64_t v, int64_t r_lo, int64_t r_hi);
// dlogits[r] = dlogp[r] * (onehot(target[r]) - softmax(logits[r])) (WRITES).
void agt_logprob_backward(float* dlogits, const float* dlogp, const float* logits,
                          const int32_t* target, const float* lse, int64_t v, int64_t r_lo,
                          int64_t r_hi);
#endif
