// Linear layers. Forward y = x W^T (+ b); backward dx = dy W,
// dW += dy^T x and db += sum_t dy.
//
// The forward is the NT GEMM C = A B^T with both operands contiguous along
// k, vectorized as a tile of dot products: MR rows of A times NR rows of B,
// MR*NR vector accumulators, one horizontal reduction per output. The two
// backward products are one strided NN GEMM (agt_gemm_nn_acc below), an
// outer-product kernel vectorized along the output columns.
#include "train.h"
#include "vec.h"

enum { MR = 4, NR = 4 };

// One k block of 16 of an AVX-512 tile: s[i][j] += a[i][kk..) * b[j][kk..)
// on the lanes of m (all-ones for whole blocks: GCC then emits plain loads).
AGV_AVX512 AGV_INLINE void step512(const int MR_, const int NR_, __mmask16 m, const float* a,
                                   int64_t lda, const float* b, int64_t ldb, int64_t kk,
                                   __m512 s[MR][NR]) {
	__m512 va[MR], vb[NR];
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++) va[i] = _mm512_maskz_loadu_ps(m, a + i * lda + kk);
#pragma GCC unroll 4
	for (int j = 0; j < NR_; j++) vb[j] = _mm512_maskz_loadu_ps(m, b + j * ldb + kk);
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) s[i][j] = _mm512_fmadd_ps(va[i], vb[j], s[i][j]);
}

// Tile kernels: c[i][j] (ldc) = (acc ? c : 0) + dot(a[i], b[j]) for i < mr,
// j < nr. MR_/NR_ are compile-time constants after inlining.
AGV_AVX512 AGV_INLINE void tile512(const int MR_, const int NR_, const float* a, int64_t lda,
                                   const float* b, int64_t ldb, int64_t k, float* c, int64_t ldc,
                                   int acc) {
	__m512 s[MR][NR];
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) s[i][j] = _mm512_setzero_ps();
	int64_t kk = 0;
	for (; kk + 16 <= k; kk += 16) step512(MR_, NR_, (__mmask16)0xffff, a, lda, b, ldb, kk, s);
	if (kk < k) step512(MR_, NR_, (__mmask16)((1u << (k - kk)) - 1), a, lda, b, ldb, kk, s);
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) {
			float r = _mm512_reduce_add_ps(s[i][j]);
			c[i * ldc + j] = acc ? c[i * ldc + j] + r : r;
		}
}

// AVX2 has 16 vector registers: 3x4 accumulators plus 4 operands fit.
AGV_AVX2 AGV_INLINE void tile256(const int MR_, const int NR_, const float* a, int64_t lda,
                                 const float* b, int64_t ldb, int64_t k, float* c, int64_t ldc,
                                 int acc) {
	__m256 s[MR][NR];
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) s[i][j] = _mm256_setzero_ps();
	int64_t kk = 0;
	for (; kk + 8 <= k; kk += 8) {
		__m256 vb[NR];
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) vb[j] = _mm256_loadu_ps(b + j * ldb + kk);
#pragma GCC unroll 4
		for (int i = 0; i < MR_; i++) {
			__m256 va = _mm256_loadu_ps(a + i * lda + kk);
#pragma GCC unroll 4
			for (int j = 0; j < NR_; j++) s[i][j] = _mm256_fmadd_ps(va, vb[j], s[i][j]);
		}
	}
#pragma GCC unroll 4
	for (int i = 0; i < MR_; i++)
#pragma GCC unroll 4
		for (int j = 0; j < NR_; j++) {
			float r = agv_hsum256(s[i][j]);
			for (int64_t t = kk; t < k; t++) r = fmaf(a[i * lda + t], b[j * ldb + t], r);
			c[i * ldc + j] = acc ? c[i * ldc + j] + r : r;
		}
}

#define TILE_CASES(fn)                                                       \
	switch (mr * 8 + nr) {                                                   \
	case 8 + 1: fn(1, 1, a, lda, b, ldb, k, c, ldc, acc); break;             \
	case 8 + 2: fn(1, 2, a, lda, b, ldb, k, c, ldc, acc); break;             \
	case 8 + 3: fn(1, 3, a, lda, b, ldb, k, c, ldc, acc); break;             \
	case 8 + 4: fn(1, 4, a, lda, b, ldb, k, c, ldc, acc); break;             \
	case 16 + 1: fn(2, 1, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 16 + 2: fn(2, 2, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 16 + 3: fn(2, 3, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 16 + 4: fn(2, 4, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 24 + 1: fn(3, 1, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 24 + 2: fn(3, 2, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 24 + 3: fn(3, 3, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 24 + 4: fn(3, 4, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 32 + 1: fn(4, 1, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 32 + 2: fn(4, 2, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 32 + 3: fn(4, 3, a, lda, b, ldb, k, c, ldc, acc); break;            \
	case 32 + 4: fn(4, 4, a, lda, b, ldb, k, c, ldc, acc); break;            \
	}

AGV_AVX512 static void tile_avx512(int mr, int nr, const float* a, int64_t lda, const float* b,
                                   int64_t ldb, int64_t k, float* c, int64_t ldc, int acc) {
	TILE_CASES(tile512)
}

AGV_AVX2 static void tile_avx2(int mr, int nr, const float* a, int64_t lda, const float* b,
                               int64_t ldb, int64_t k, float* c, int64_t ldc, int acc) {
	// 3 rows at a time keeps the accumulators in registers.
	for (int i0 = 0; i0 < mr; i0 += 3) {
		int m = mr - i0 < 3 ? mr - i0 : 3;
		const float* ai = a + i0 * lda;
		float* ci = c + i0 * ldc;
		switch (m * 8 + nr) {
		case 8 + 1: tile256(1, 1, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 8 + 2: tile256(1, 2, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 8 + 3: tile256(1, 3, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 8 + 4: tile256(1, 4, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 16 + 1: tile256(2, 1, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 16 + 2: tile256(2, 2, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 16 + 3: tile256(2, 3, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 16 + 4: tile256(2, 4, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 24 + 1: tile256(3, 1, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 24 + 2: tile256(3, 2, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 24 + 3: tile256(3, 3, ai, lda, b, ldb, k, ci, ldc, acc); break;
		case 24 + 4: tile256(3, 4, ai, lda, b, ldb, k, ci, ldc, acc); break;
		}
	}
}

static void tile_generic(int mr, int nr, const float* a, int64_t lda, const float* b, int64_t ldb,
                         int64_t k, float* c, int64_t ldc, int acc) {
	for (int i = 0; i < mr; i++)
		for (int j = 0; j < nr; j++) {
			float r = agv_dot_generic(a + i * lda, b + j * ldb, k);
			c[i * ldc + j] = acc ? c[i * ldc + j] + r : r;
		}
}

// B rows are visited in blocks that stay in L2 while every A row of the
// range streams past them.
enum { NB = 64 };

void agt_gemm_nt(int level, const float* a, const float* b, float* c, int64_t m, int64_t n,
                 int64_t k, int accumulate, int64_t m_lo, int64_t m_hi) {
	(void)m;
	void (*tile)(int, int, const float*, int64_t, const float*, int64_t, int64_t, float*, int64_t,
	             int) = level >= 2 ? tile_avx512 : level == 1 ? tile_avx2 : tile_generic;
	if (k == 0) {
		if (!accumulate)
			for (int64_t i = m_lo; i < m_hi; i++) memset(c + i * n, 0, sizeof(float) * n);
		return;
	}
	for (int64_t n0 = 0; n0 < n; n0 += NB) {
		int64_t n1 = n0 + NB < n ? n0 + NB : n;
		for (int64_t i = m_lo; i < m_hi; i += MR) {
			int mr = m_hi - i < MR ? (int)(m_hi - i) : MR;
			for (int64_t j = n0; j < n1; j += NR) {
				int nr = n1 - j < NR ? (int)(n1 - j) : NR;
				tile(mr, nr, a + i * k, k, b + j * k, k, k, c + i * n + j, n, accumulate);
			}
		}
	}
}

void agt_bias_forward(float* y, const float* bias, int64_t t, int64_t n) {
	for (int64_t i = 0; i < t; i++)
		for (int64_t j = 0; j < n; j++) y[i * n + j] += bias[j];
}

void agt_bias_backward(float* dbias, const float* dy, int64_t t, int64_t n) {
	for (int64_t i = 0; i < t; i++)
		for (int64_t j = 0; j < n; j++) dbias[j] += dy[i * n + j];
}

// ---------------------------------------------------------------- NN GEMM
//
// C[m][j] += sum_p A(m, p) * B[p][j], A(m, p) = a[m*sam + p*sap], B
// row-major with ldb = jn. With sam = N, sap = 1 this is dx = dy W; with
// sam = 1, sap = N it is dW = dy^T x: the backward products need no
// transposed copies. A tile of 6 rows of C by 2 vectors of columns stays in
// registers while p runs over a block of PB; the B block (PB rows) stays in
// L2 across all row tiles.
enum { NN_MR = 6, PB = 256 };

AGV_AVX512 AGV_INLINE void nn512(const int MR_, const float* a, int64_t sam, int64_t sap,
                                 const float* b, int64_t ldb, int64_t pn, float* c, int64_t ldc,
                                 __mmask16 m0, __mmask16 m1) {
	__m512 acc[NN_MR][2];
#pragma GCC unroll 6
	for (int i = 0; i < MR_; i++) {
		acc[i][0] = _mm512_maskz_loadu_ps(m0, c + i * ldc);
		acc[i][1] = _mm512_maskz_loadu_ps(m1, c + i * ldc + 16);
	}
	for (int64_t p = 0; p < pn; p++) {
		__m512 b0 = _mm512_maskz_loadu_ps(m0, b + p * ldb);
		__m512 b1 = _mm512_maskz_loadu_ps(m1, b + p * ldb + 16);
		const float* ap = a + p * sap;
#pragma GCC unroll 6
		for (int i = 0; i < MR_; i++) {
			__m512 av = _mm512_set1_ps(ap[i * sam]);
			acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
			acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < MR_; i++) {
		_mm512_mask_storeu_ps(c + i * ldc, m0, acc[i][0]);
		_mm512_mask_storeu_ps(c + i * ldc + 16, m1, acc[i][1]);
	}
}

AGV_AVX512 static void nn_avx512(int mr, const float* a, int64_t sam, int64_t sap, const float* b,
                                 int64_t ldb, int64_t pn, float* c, int64_t ldc, int64_t w) {
	__mmask16 m0 = w >= 16 ? 0xffff : (__mmask16)((1u << w) - 1);
	__mmask16 m1 = w >= 32 ? 0xffff : w <= 16 ? 0 : (__mmask16)((1u << (w - 16)) - 1);
	switch (mr) {
	case 1: nn512(1, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	case 2: nn512(2, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	case 3: nn512(3, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	case 4: nn512(4, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	case 5: nn512(5, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	default: nn512(6, a, sam, sap, b, ldb, pn, c, ldc, m0, m1); break;
	}
}

AGV_AVX2 AGV_INLINE void nn256(const int MR_, const float* a, int64_t sam, int64_t sap,
                               const float* b, int64_t ldb, int64_t pn, float* c, int64_t ldc) {
	__m256 acc[NN_MR][2];
#pragma GCC unroll 6
	for (int i = 0; i < MR_; i++) {
		acc[i][0] = _mm256_loadu_ps(c + i * ldc);
		acc[i][1] = _mm256_loadu_ps(c + i * ldc + 8);
	}
	for (int64_t p = 0; p < pn; p++) {
		__m256 b0 = _mm256_loadu_ps(b + p * ldb);
		__m256 b1 = _mm256_loadu_ps(b + p * ldb + 8);
		const float* ap = a + p * sap;
#pragma GCC unroll 6
		for (int i = 0; i < MR_; i++) {
			__m256 av = _mm256_broadcast_ss(ap + i * sam);
			acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
			acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
		}
	}
#pragma GCC unroll 6
	for (int i = 0; i < MR_; i++) {
		_mm256_storeu_ps(c + i * ldc, acc[i][0]);
		_mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
	}
}

static void nn_scalar(int mr, const float* a, int64_t sam, int64_t sap, const float* b, int64_t ldb,
                      int64_t pn, float* c, int64_t ldc, int64_t w) {
	for (int i = 0; i < mr; i++)
		for (int64_t p = 0; p < pn; p++) {
			float av = a[i * sam + p * sap];
			const float* bp = b + p * ldb;
			float* ci = c + i * ldc;
			for (int64_t j = 0; j < w; j++) ci[j] += av * bp[j];
		}
}

AGV_AVX2 static void nn_avx2(int mr, const float* a, int64_t sam, int64_t sap, const float* b,
                             int64_t ldb, int64_t pn, float* c, int64_t ldc, int64_t w) {
	if (w < 16) { // partial column tile: no masked loads in AVX2
		nn_scalar(mr, a, sam, sap, b, ldb, pn, c, ldc, w);
		return;
	}
	switch (mr) {
	case 1: nn256(1, a, sam, sap, b, ldb, pn, c, ldc); break;
	case 2: nn256(2, a, sam, sap, b, ldb, pn, c, ldc); break;
	case 3: nn256(3, a, sam, sap, b, ldb, pn, c, ldc); break;
	case 4: nn256(4, a, sam, sap, b, ldb, pn, c, ldc); break;
	case 5: nn256(5, a, sam, sap, b, ldb, pn, c, ldc); break;
	default: nn256(6, a, sam, sap, b, ldb, pn, c, ldc); break;
	}
}

void agt_gemm_nn_acc(int level, const float* a, int64_t sam, int64_t sap, const float* b,
                     float* c, int64_t jn, int64_t pn, int64_t m_lo, int64_t m_hi) {
	int64_t tw = level >= 2 ? 32 : 16; // columns per tile
	for (int64_t p0 = 0; p0 < pn; p0 += PB) {
		int64_t pc = pn - p0 < PB ? pn - p0 : PB;
		for (int64_t j0 = 0; j0 < jn; j0 += tw) {
			int64_t w = jn - j0 < tw ? jn - j0 : tw;
			for (int64_t m = m_lo; m < m_hi; m += NN_MR) {
				int mr = m_hi - m < NN_MR ? (int)(m_hi - m) : NN_MR;
				const float* am = a + m * sam + p0 * sap;
				const float* bp = b + p0 * jn + j0;
				float* cm = c + m * jn + j0;
				if (level >= 2) nn_avx512(mr, am, sam, sap, bp, jn, pc, cm, jn, w);
				else if (level == 1) nn_avx2(mr, am, sam, sap, bp, jn, pc, cm, jn, w);
				else nn_scalar(mr, am, sam, sap, bp, jn, pc, cm, jn, w);
			}
		}
	}
}
