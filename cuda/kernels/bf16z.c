// Losslessly compressed bf16 weights: the format is in bf16z.h. The
// products give the bits of agl_gemm_bf16 on the decoded matrix: the
// register-decoding kernel feeds vdpbf16ps exactly the registers the bf16
// kernel loads, in the same chunk order, and every other path decodes rows
// and runs the bf16 kernels on them.
#include "bf16z.h"

#include <immintrin.h>
#include <string.h>

#include "kernels.h"
#include "vecops.h"

#define AGZ_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
#define AGZ_BW __attribute__((target("avx512f,avx512bw")))

enum { G = AGL_BF16Z_GROUP, CH = 32 };

static inline int64_t kpad(int64_t k) { return (k + G - 1) / G * G; }

// Bytes of a row (kp values: codes and low bytes) and of a group.
enum { GB = G * 3 / 2 };
static inline int64_t row_bytes(int64_t k) { return kpad(k) / G * GB; }

// pos_of[i] is the stored position of weight i of a group (inverse of w(p)).
static int pos_of(int i) {
	if (i < 32) return 16 * (i / 8) + i % 8;
	i -= 32;
	return 16 * (i / 8) + 8 + i % 8;
}

// weight_of(p) is w(p): the weight of a group at stored position p.
static int weight_of(int p) { return p % 16 < 8 ? 8 * (p / 16) + p % 16 : 32 + 8 * (p / 16) + p % 16 - 8; }

void agl_bf16z_hist(const uint16_t* w, int64_t n, uint64_t hist[256]) {
	// Eight tables, four values per 8-byte load: consecutive values mostly
	// share a high byte, so increments of one table would wait on each
	// other's stores (four tables of 64-bit counts took 1.4× the time).
	// Each table counts one value in eight: 32 bits hold any call of fewer
	// than 2^35 values (a call is one chunk of rows; a count that wrapped
	// would only pick a worse table: any table encodes losslessly).
	uint32_t h[8][256];
	memset(h, 0, sizeof(h));
	int64_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t a, b;
		memcpy(&a, w + i, 8);
		memcpy(&b, w + i + 4, 8);
		h[0][(a >> 8) & 255]++;
		h[1][(a >> 24) & 255]++;
		h[2][(a >> 40) & 255]++;
		h[3][a >> 56]++;
		h[4][(b >> 8) & 255]++;
		h[5][(b >> 24) & 255]++;
		h[6][(b >> 40) & 255]++;
		h[7][b >> 56]++;
	}
	for (; i < n; i++) h[0][w[i] >> 8]++;
	for (int b = 0; b < 256; b++)
		for (int t = 0; t < 8; t++) hist[b] += h[t][b];
}

// count_generic and encode_generic are the scalar encoder: the format's
// reference, which the vector one (encode_512) matches byte for byte.
static void count_generic(const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint32_t* cnt) {
	for (int64_t r = 0; r < rows; r++) {
		uint32_t c = 0;
		const uint16_t* wr = w + r * k;
		for (int64_t i = 0; i < k; i++) c += inv[wr[i] >> 8] == AGL_BF16Z_ESC;
		cnt[r] = c;
	}
}

static void encode_generic(const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint8_t* data,
                           uint8_t* esc, uint32_t* eoff, int64_t r0) {
	const int64_t kp = kpad(k);
	int pos[G];
	for (int i = 0; i < G; i++) pos[i] = pos_of(i);
	for (int64_t r = 0; r < rows; r++) {
		const uint16_t* wr = w + r * k;
		uint8_t* dr = data + (r0 + r) * row_bytes(k);
		uint32_t e = eoff[r0 + r];
		memset(dr, 0, (size_t)row_bytes(k));
		for (int64_t g = 0; g < kp / G; g++) {
			uint8_t hib[G], lob[G], code[G];
			for (int i = 0; i < G; i++) {
				const int64_t j = g * G + i;
				const uint16_t v = j < k ? wr[j] : 0;
				const int p = pos[i];
				hib[p] = (uint8_t)(v >> 8);
				lob[p] = (uint8_t)v;
				code[p] = j < k ? inv[v >> 8] : 0;
			}
			memcpy(dr + g * GB + 32, lob, G);
			for (int p = 0; p < G; p++) {
				dr[g * GB + p % 32] |= (uint8_t)(code[p] << (p < 32 ? 0 : 4));
				if (code[p] == AGL_BF16Z_ESC) esc[e++] = hib[p];
			}
		}
		eoff[r0 + r + 1] = e;
	}
}

// group_hi decodes group g of row r's high bytes in stored order into hib,
// taking escapes from *e (below end; 0 once the row's escapes run out).
// Padding past k is 0 and takes no escape, whatever its code, as in zgroup.
static inline void group_hi(const agl_bf16z* z, int64_t r, int64_t g, const uint8_t** e, const uint8_t* end,
                            uint8_t hib[G]) {
	const uint8_t* cr = z->data + r * row_bytes(z->k) + g * GB;
	for (int p = 0; p < G; p++) {
		if (g * G + weight_of(p) >= z->k) {
			hib[p] = 0;
			continue;
		}
		const int c = p < 32 ? cr[p] & 15 : cr[p - 32] >> 4;
		if (c == AGL_BF16Z_ESC) hib[p] = *e < end ? *(*e)++ : 0;
		else hib[p] = z->table[c];
	}
}

static void decode_generic(const agl_bf16z* z, int64_t r0, int64_t r1, uint16_t* out) {
	const int64_t k = z->k, kp = kpad(k);
	int pos[G];
	for (int i = 0; i < G; i++) pos[i] = pos_of(i);
	for (int64_t r = r0; r < r1; r++) {
		const uint8_t* e = z->esc + z->eoff[r];
		const uint8_t* end = z->esc + z->eoff[r + 1];
		const uint8_t* lr = z->data + r * row_bytes(k);
		uint16_t* o = out + (r - r0) * k;
		for (int64_t g = 0; g < kp / G; g++) {
			uint8_t hib[G];
			group_hi(z, r, g, &e, end, hib);
			for (int i = 0; i < G && g * G + i < k; i++) {
				const int p = pos[i];
				o[g * G + i] = (uint16_t)(hib[p] << 8 | lr[g * GB + 32 + p]);
			}
		}
	}
}

int64_t agl_bf16z_bad_row(const agl_bf16z* z, int64_t n) {
	const int64_t kp = kpad(z->k);
	for (int64_t r = 0; r < n; r++) {
		const uint8_t* cr = z->data + r * row_bytes(z->k);
		uint64_t c = 0;
		for (int64_t g = 0; g < kp / G; g++)
			for (int p = 0; p < G; p++) {
				// Past k is padding, never an escape (the kernels mask it).
				if (g * G + weight_of(p) >= z->k) continue;
				c += (p < 32 ? cr[g * GB + p] & 15 : cr[g * GB + p - 32] >> 4) == AGL_BF16Z_ESC;
			}
		if (z->eoff[r + 1] < z->eoff[r] || c != (uint64_t)(z->eoff[r + 1] - z->eoff[r])) return r;
	}
	return -1;
}

// ---- Level 3: decode in registers.

// zgroup decodes one group into the two chunks w0, w1 (weights 0–31 and
// 32–63 of the group in memory order, as the bf16 kernel loads them).
// valid masks the stored positions that are weights (all but a last
// group's padding).
AGZ_BW AGV_INLINE void zgroup(const uint8_t* gp, __m512i tbl, __mmask64 valid, const uint8_t** e,
                                const uint8_t* end, __m512i* w0, __m512i* w1) {
	const uint8_t *cp = gp, *lp = gp + 32;
	const __m512i c = _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i*)cp));
	// Bytes 32–63 take the high nibbles: 16-bit lanes 16–31 shifted by 4.
	const __m512i idx = _mm512_and_si512(_mm512_mask_srli_epi16(c, (__mmask32)0xffff0000u, c, 4), _mm512_set1_epi8(15));
	__m512i hi = _mm512_shuffle_epi8(tbl, idx);
	// Escapes are looked for only while the row has some left (most rows
	// have none, and the rest stop at their last): a scalar compare instead
	// of a vector one for most groups. Codes of 15 past the row's last
	// escape (only in data not from the encoder) decode as table[15] = 0.
	if (*e < end) {
		const __mmask64 m = _mm512_mask_cmpeq_epi8_mask(valid, idx, _mm512_set1_epi8(AGL_BF16Z_ESC));
		if (__builtin_expect(m != 0, 0)) {
			uint8_t b[G] __attribute__((aligned(64)));
			_mm512_store_si512(b, hi);
			for (uint64_t mm = m; mm; mm &= mm - 1) b[__builtin_ctzll(mm)] = *e < end ? *(*e)++ : 0;
			hi = _mm512_load_si512(b);
		}
	}
	hi = _mm512_maskz_mov_epi8(valid, hi);
	const __m512i lo = _mm512_maskz_loadu_epi8(valid, lp);
	*w0 = _mm512_unpacklo_epi8(lo, hi);
	*w1 = _mm512_unpackhi_epi8(lo, hi);
}

// last_valid is the stored positions of a last group that hold weights.
static __mmask64 last_valid(int64_t k) {
	if (k % G == 0) return ~(__mmask64)0;
	__mmask64 m = 0;
	for (int i = 0; i < k % G; i++) m |= (__mmask64)1 << pos_of(i);
	return m;
}

// decode_512 is decode_generic with zgroup: each group's two chunks
// stored as they come out of the registers.
AGZ_BW static void decode_512(const agl_bf16z* z, int64_t r0, int64_t r1, uint16_t* out) {
	const int64_t k = z->k, rb = row_bytes(k), nfullg = k / G;
	const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)z->table));
	const __mmask64 last = last_valid(k);
	for (int64_t r = r0; r < r1; r++) {
		const uint8_t* e = z->esc + z->eoff[r];
		const uint8_t* end = z->esc + z->eoff[r + 1];
		const uint8_t* dp = z->data + r * rb;
		uint16_t* o = out + (r - r0) * k;
		__m512i w0, w1;
		for (int64_t g = 0; g < nfullg; g++) {
			zgroup(dp + g * GB, tbl, ~(__mmask64)0, &e, end, &w0, &w1);
			_mm512_storeu_si512(o + g * G, w0);
			_mm512_storeu_si512(o + g * G + CH, w1);
		}
		if (nfullg * G < k) {
			const int left = (int)(k - nfullg * G); // 1–63 weights
			zgroup(dp + nfullg * GB, tbl, last, &e, end, &w0, &w1);
			const __mmask32 m0 = left >= CH ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1);
			const __mmask32 m1 = left > CH ? (__mmask32)((1u << (left - CH)) - 1) : 0;
			_mm512_mask_storeu_epi16(o + nfullg * G, m0, w0);
			_mm512_mask_storeu_epi16(o + nfullg * G + CH, m1, w1);
		}
	}
}

static int has_bw(void) {
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

// use_bw is level ≥ 2 on a CPU with AVX512BW (found once; any thread may
// find it first: the same value).
static int use_bw(int level) {
	static int bw = -1;
	int b = __atomic_load_n(&bw, __ATOMIC_RELAXED);
	if (b < 0) {
		b = has_bw();
		__atomic_store_n(&bw, b, __ATOMIC_RELAXED);
	}
	return level >= 2 && b;
}

// zcodes is the encoder's inverse of zgroup, for the vector encoder and
// counter: the high and low bytes of 64 weights in stored order (vpackuswb
// of each 128-bit lane's eight words of the two chunks is the order
// vpunpck{l,h}bw takes them back in) and their codes, by comparing the
// high bytes with each table entry. Positions outside valid get code 0 and
// low byte 0 (their weights are loaded as 0 by the caller).
typedef struct {
	__m512i tv[AGL_BF16Z_ESC]; // the high byte of code c, broadcast
	int nt;                    // codes 0..nt-1 are in use
} zenc;

// zenc_init reads the table from inv. It reports false when the codes in
// use are not 0..nt-1 (CompressBF16 numbers the table's bytes 0, 1, …, so
// they are), for the caller to encode with the scalar loop instead. (A
// list of the codes in use, each beside its byte, took 10–20 % longer.)
AGZ_BW static int zenc_init(zenc* t, const uint8_t inv[256]) {
	int seen = 0;
	t->nt = 0;
	for (int h = 0; h < 256; h++)
		if (inv[h] < AGL_BF16Z_ESC) {
			if (seen >> inv[h] & 1) return 0;
			seen |= 1 << inv[h];
			t->tv[inv[h]] = _mm512_set1_epi8((char)h);
			if (inv[h] + 1 > t->nt) t->nt = inv[h] + 1;
		}
	return seen == (1 << t->nt) - 1;
}

AGZ_BW AGV_INLINE __m512i zcodes(const zenc* t, __m512i w0, __m512i w1, __mmask64 valid, __m512i* hi, __m512i* lo) {
	const __m512i lomask = _mm512_set1_epi16(0xff);
	*lo = _mm512_packus_epi16(_mm512_and_si512(w0, lomask), _mm512_and_si512(w1, lomask));
	*hi = _mm512_packus_epi16(_mm512_srli_epi16(w0, 8), _mm512_srli_epi16(w1, 8));
	__m512i code = _mm512_set1_epi8(AGL_BF16Z_ESC);
	for (int c = 0; c < t->nt; c++)
		code = _mm512_mask_mov_epi8(code, _mm512_cmpeq_epi8_mask(*hi, t->tv[c]), _mm512_set1_epi8((char)c));
	return _mm512_maskz_mov_epi8(valid, code);
}

// zload loads group g of a row (k weights) as its two chunks, 0 past k,
// and sets *valid to the stored positions that hold weights.
AGZ_BW AGV_INLINE void zload(const uint16_t* wr, int64_t k, int64_t g, __mmask64 last, __m512i* w0, __m512i* w1,
                             __mmask64* valid) {
	const int64_t left = k - g * G;
	if (left >= G) {
		*w0 = _mm512_loadu_si512(wr + g * G);
		*w1 = _mm512_loadu_si512(wr + g * G + CH);
		*valid = ~(__mmask64)0;
		return;
	}
	const __mmask32 m0 = left >= CH ? ~(__mmask32)0 : (__mmask32)((1u << left) - 1);
	const __mmask32 m1 = left > CH ? (__mmask32)((1u << (left - CH)) - 1) : 0;
	*w0 = _mm512_maskz_loadu_epi16(m0, wr + g * G);
	*w1 = _mm512_maskz_loadu_epi16(m1, wr + g * G + CH);
	*valid = last;
}

AGZ_BW static void encode_512(const zenc* t, const uint16_t* w, int64_t rows, int64_t k, uint8_t* data, uint8_t* esc,
                              uint32_t* eoff, int64_t r0) {
	const int64_t ng = kpad(k) / G, rb = row_bytes(k);
	const __mmask64 last = last_valid(k);
	const __m512i escv = _mm512_set1_epi8(AGL_BF16Z_ESC);
	for (int64_t r = 0; r < rows; r++) {
		const uint16_t* wr = w + r * k;
		uint8_t* dr = data + (r0 + r) * rb;
		uint32_t e = eoff[r0 + r];
		for (int64_t g = 0; g < ng; g++) {
			__m512i w0, w1, hi, lo;
			__mmask64 valid;
			zload(wr, k, g, last, &w0, &w1, &valid);
			const __m512i code = zcodes(t, w0, w1, valid, &hi, &lo);
			// Codes of positions 0–31 in the low nibbles, 32–63 in the high.
			const __m256i packed = _mm256_or_si256(_mm512_castsi512_si256(code),
			                                       _mm256_slli_epi16(_mm512_extracti64x4_epi64(code, 1), 4));
			_mm256_storeu_si256((__m256i*)(dr + g * GB), packed);
			_mm512_storeu_si512(dr + g * GB + 32, lo);
			const __mmask64 m = _mm512_cmpeq_epi8_mask(code, escv);
			if (__builtin_expect(m != 0, 0)) {
				uint8_t b[G] __attribute__((aligned(64)));
				_mm512_store_si512(b, hi);
				for (uint64_t mm = m; mm; mm &= mm - 1) esc[e++] = b[__builtin_ctzll(mm)];
			}
		}
		eoff[r0 + r + 1] = e;
	}
}

AGZ_BW static void count_512(const zenc* t, const uint16_t* w, int64_t rows, int64_t k, uint32_t* cnt) {
	const int64_t ng = kpad(k) / G;
	const __mmask64 last = last_valid(k);
	const __m512i escv = _mm512_set1_epi8(AGL_BF16Z_ESC);
	for (int64_t r = 0; r < rows; r++) {
		uint32_t c = 0;
		for (int64_t g = 0; g < ng; g++) {
			__m512i w0, w1, hi, lo;
			__mmask64 valid;
			zload(w + r * k, k, g, last, &w0, &w1, &valid);
			c += (uint32_t)__builtin_popcountll(_mm512_cmpeq_epi8_mask(zcodes(t, w0, w1, valid, &hi, &lo), escv));
		}
		cnt[r] = c;
	}
}

void agl_bf16z_encode(int level, const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint8_t* data,
                      uint8_t* esc, uint32_t* eoff, int64_t r0) {
	zenc t;
	if (use_bw(level) && zenc_init(&t, inv)) encode_512(&t, w, rows, k, data, esc, eoff, r0);
	else encode_generic(w, rows, k, inv, data, esc, eoff, r0);
}

void agl_bf16z_count(int level, const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint32_t* cnt) {
	zenc t;
	if (use_bw(level) && zenc_init(&t, inv)) count_512(&t, w, rows, k, cnt);
	else count_generic(w, rows, k, inv, cnt);
}

void agl_bf16z_decode(int level, const agl_bf16z* z, int64_t r0, int64_t r1, uint16_t* out) {
	if (use_bw(level)) decode_512(z, r0, r1, out);
	else decode_generic(z, r0, r1, out);
}

// Prefetch distance in a row's stream, bytes (0 for none), and the cache
// level it fetches into. Measured at the Qwen3-4B shape, whole batch-1
// decode steps of two engines side by side (interleave.mjs, A B B A rounds
// seconds apart, medians of 6–8 per-round ratios), against 1 KB: on this
// host's slow minutes (the bf16z steps reading ~44 GB/s) 2 KB +1 % (twice),
// 3 KB −2 %, 4 KB −3 %, 2 KB into L2 (_MM_HINT_T1) −3 %, 1 KB into L2 −4 %,
// 2 rows side by side instead of 4 +1 %; on its fast ones (~58 GB/s) 1.5 KB
// +9 %, 2 KB +12 %, no prefetch +3 %: 1 KB ahead of each of a thread's 4
// streams no longer covers the latency there. At 1.7B (slow minutes) 2 KB
// is −1 %.
#ifndef AGL_BF16Z_PF
#define AGL_BF16Z_PF 2048
#endif
#ifndef AGL_BF16Z_PF_HINT
#define AGL_BF16Z_PF_HINT _MM_HINT_T0
#endif

// rowsz_t is rowsn_bf16_t (bf16.c) on compressed rows: NR rows from NR
// equal parts of [r_lo, r_hi) side by side (the rows past NR·part are
// left to the caller). Each row's chunks go through vdpbf16ps in order 0, 1, …,
// ceil(k/32) − 1, chunk c against the activations' chunk c, then the
// agv_tree512: the bf16 kernel's computation on the same values.
AGZ_BF16 AGV_INLINE void rowsz_t(const int NR, const agl_bf16z* z, const uint16_t* x, int64_t ldx, float* y,
                                 int64_t n, const float* bias, int64_t r_lo, int64_t r_hi, const int T) {
	const int64_t k = z->k, rb = row_bytes(k), ng = kpad(k) / G, nch = (k + CH - 1) / CH;
	const int64_t part = (r_hi - r_lo) / NR;
	const __m512i tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i*)z->table));
	const __mmask64 last = last_valid(k);
	for (int64_t i = 0; i < part; i++) {
		int64_t row[4];
		const uint8_t *dp[4], *e[4], *end[4];
		__m512 acc[4][8];
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++) {
			row[s] = r_lo + s * part + i;
			dp[s] = z->data + row[s] * rb;
			e[s] = z->esc + z->eoff[row[s]];
			end[s] = z->esc + z->eoff[row[s] + 1];
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) acc[s][j] = _mm512_setzero_ps();
		}
		const int64_t nfullg = k / G; // groups with no padding
		for (int64_t g = 0; g < nfullg; g++) {
			__m512i w0[4], w1[4];
#pragma GCC unroll 4
			for (int s = 0; s < NR; s++) {
#if AGL_BF16Z_PF
				_mm_prefetch((const char*)(dp[s] + g * GB + AGL_BF16Z_PF), AGL_BF16Z_PF_HINT);
				_mm_prefetch((const char*)(dp[s] + g * GB + AGL_BF16Z_PF + 64), AGL_BF16Z_PF_HINT);
#endif
				zgroup(dp[s] + g * GB, tbl, ~(__mmask64)0, &e[s], end[s], &w0[s], &w1[s]);
			}
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + j * ldx + (2 * g) * CH);
				const __m512bh x1 = (__m512bh)_mm512_loadu_si512(x + j * ldx + (2 * g + 1) * CH);
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) {
					acc[s][j] = _mm512_dpbf16_ps(acc[s][j], (__m512bh)w0[s], x0);
					acc[s][j] = _mm512_dpbf16_ps(acc[s][j], (__m512bh)w1[s], x1);
				}
			}
		}
		if (nfullg < ng) {
			const int64_t g = nfullg;
			const int second = 2 * g + 1 < nch; // the group's second chunk holds weights
			__m512i w0[4], w1[4];
#pragma GCC unroll 4
			for (int s = 0; s < NR; s++) zgroup(dp[s] + g * GB, tbl, last, &e[s], end[s], &w0[s], &w1[s]);
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				const __m512bh x0 = (__m512bh)_mm512_loadu_si512(x + j * ldx + (2 * g) * CH);
#pragma GCC unroll 4
				for (int s = 0; s < NR; s++) acc[s][j] = _mm512_dpbf16_ps(acc[s][j], (__m512bh)w0[s], x0);
				if (second) {
					const __m512bh x1 = (__m512bh)_mm512_loadu_si512(x + j * ldx + (2 * g + 1) * CH);
#pragma GCC unroll 4
					for (int s = 0; s < NR; s++) acc[s][j] = _mm512_dpbf16_ps(acc[s][j], (__m512bh)w1[s], x1);
				}
			}
		}
#pragma GCC unroll 4
		for (int s = 0; s < NR; s++)
#pragma GCC unroll 8
			for (int j = 0; j < T; j++) {
				float v = agv_tree512(acc[s][j]);
				if (bias) v += bias[row[s]];
				y[j * n + row[s]] = v;
			}
	}
}

#ifndef AGL_BF16Z_ROWS
#define AGL_BF16Z_ROWS 4 // rows side by side for up to 4 tokens (2 for 5–8)
#endif

AGZ_BF16 static void rowsz(const agl_bf16z* z, const uint16_t* x, int64_t ldx, float* y, int64_t n,
                           const float* bias, int64_t r_lo, int64_t r_hi, int T) {
	// NR rows side by side over NR·part rows, then the rest one by one.
#define RZ(NR, TT)                                                                                  \
	do {                                                                                            \
		const int64_t done = r_lo + (r_hi - r_lo) / NR * NR;                                        \
		rowsz_t(NR, z, x, ldx, y, n, bias, r_lo, done, TT);                                         \
		if (done < r_hi) rowsz_t(1, z, x, ldx, y, n, bias, done, r_hi, TT);                         \
	} while (0)
	if (T <= 4) {
		switch (T) {
		case 1: RZ(AGL_BF16Z_ROWS, 1); break;
		case 2: RZ(AGL_BF16Z_ROWS, 2); break;
		case 3: RZ(AGL_BF16Z_ROWS, 3); break;
		case 4: RZ(AGL_BF16Z_ROWS, 4); break;
		}
		return;
	}
	switch (T) {
	case 5: RZ(2, 5); break;
	case 6: RZ(2, 6); break;
	case 7: RZ(2, 7); break;
	case 8: RZ(2, 8); break;
	}
#undef RZ
}

void agl_gemm_bf16z(int level, const uint16_t* xb, int64_t t, int64_t ldx, const agl_bf16z* z, int64_t n,
                    const float* bias, float* y, int64_t r_lo, int64_t r_hi, uint16_t* scratch) {
	if (level >= 3 && t <= 8) {
		rowsz(z, xb, ldx, y, n, bias, r_lo, r_hi, (int)t);
		return;
	}
	for (int64_t r0 = r_lo; r0 < r_hi; r0 += AGL_BF16Z_SCRATCH_ROWS) {
		const int64_t r1 = r0 + AGL_BF16Z_SCRATCH_ROWS < r_hi ? r0 + AGL_BF16Z_SCRATCH_ROWS : r_hi;
		agl_bf16z_decode(level, z, r0, r1, scratch);
		agl_gemm_bf16(level, xb, t, z->k, ldx, scratch, n, bias ? bias + r0 : NULL, y + r0, 0, r1 - r0);
	}
}
