// Loading conversions (see convert.h). The widening is done on the bits,
// as integers, so a signalling NaN stays exactly what it was (a float
// load and store could quiet it on some paths; an integer move never
// does).
#include "convert.h"

#include "kernels.h"
#include "q8.h"
#include "vecops.h"

#include <immintrin.h>
#include <string.h>

// The float32 bits of an f16 value, as safetensors.HalfToFloat32: Inf and
// NaN keep their payload, normals are rebiased, subnormals (mant·2^-24)
// become normal float32s, exactly.
static inline uint32_t f16_bits(uint16_t h) {
	uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
	if (exp == 0x1f) return sign | 0x7f800000u | mant << 13;
	if (exp != 0) return sign | (exp + 112) << 23 | mant << 13;
	if (mant == 0) return sign;
	// mant·2^-24 with 0 < mant < 2^10: shift the leading one to bit 10;
	// with it at bit p the value is 1.f·2^(p-24), exponent field p+103.
	uint32_t e = 113;
	while (!(mant & 0x400)) {
		mant <<= 1;
		e--;
	}
	return sign | e << 23 | (mant & 0x3ff) << 13;
}

static inline uint32_t elem_bits(int st, const void* src, int64_t i) {
	switch (st) {
	case AGL_SRC_BF16: {
		uint16_t h;
		memcpy(&h, (const char*)src + 2 * i, 2);
		return (uint32_t)h << 16;
	}
	case AGL_SRC_F16: {
		uint16_t h;
		memcpy(&h, (const char*)src + 2 * i, 2);
		return f16_bits(h);
	}
	default: {
		uint32_t u;
		memcpy(&u, (const char*)src + 4 * i, 4);
		return u;
	}
	}
}

static int src_size(int st) { return st == AGL_SRC_F32 ? 4 : 2; }

static void cvt_scalar(int st, const void* src, int64_t n, uint32_t* dst) {
	switch (st) {
	case AGL_SRC_BF16: {
		const uint16_t* s = src;
		for (int64_t i = 0; i < n; i++) dst[i] = (uint32_t)s[i] << 16;
		break;
	}
	case AGL_SRC_F16: {
		const uint16_t* s = src;
		for (int64_t i = 0; i < n; i++) dst[i] = f16_bits(s[i]);
		break;
	}
	default:
		memcpy(dst, src, 4 * n);
	}
}

// f16_bits for 16 halves (zero-extended to 32 bits) at once, case by case
// as the scalar code: normals rebiased (the 13-bit shift of exponent and
// mantissa plus 112 in the exponent field), Inf/NaN given exponent 255
// with the payload kept, subnormals converted as the exact float
// mant·2^-24, zeros left as the sign.
AGV_AVX512 static inline __m512i f16_bits512(__m512i h) {
	const __m512i sign = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x8000)), 16);
	const __m512i exp = _mm512_and_si512(h, _mm512_set1_epi32(0x7c00));
	const __m512i mant = _mm512_and_si512(h, _mm512_set1_epi32(0x3ff));
	const __m512i em = _mm512_slli_epi32(_mm512_and_si512(h, _mm512_set1_epi32(0x7fff)), 13);
	__m512i r = _mm512_add_epi32(em, _mm512_set1_epi32(112 << 23)); // normals
	const __mmask16 special = _mm512_cmpeq_epi32_mask(exp, _mm512_set1_epi32(0x7c00));
	r = _mm512_mask_or_epi32(r, special, _mm512_slli_epi32(mant, 13), _mm512_set1_epi32(0x7f800000));
	const __mmask16 tiny = _mm512_cmpeq_epi32_mask(exp, _mm512_setzero_si512()); // zeros and subnormals
	const __m512 sub = _mm512_mul_ps(_mm512_cvtepi32_ps(mant), _mm512_set1_ps(1.0f / (1 << 24)));
	r = _mm512_mask_mov_epi32(r, tiny, _mm512_castps_si512(sub)); // mant = 0 gives +0
	return _mm512_or_si512(r, sign);
}

// 16 elements from src at element i as float32 bits.
AGV_AVX512 static inline __m512i load16(int st, const void* src, int64_t i) {
	switch (st) {
	case AGL_SRC_BF16:
		return _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)((const uint16_t*)src + i))), 16);
	case AGL_SRC_F16:
		return f16_bits512(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i*)((const uint16_t*)src + i))));
	default:
		return _mm512_loadu_si512((const uint32_t*)src + i);
	}
}

AGV_AVX512 static void cvt512(int st, const void* src, int64_t n, uint32_t* dst) {
	int64_t i = 0;
	for (; i + 16 <= n; i += 16) _mm512_storeu_si512(dst + i, load16(st, src, i));
	for (; i < n; i++) dst[i] = elem_bits(st, src, i);
}

void agl_cvt_f32(int vec, int src_type, const void* src, int64_t n, float* dst) {
	if (vec)
		cvt512(src_type, src, n, (uint32_t*)dst);
	else
		cvt_scalar(src_type, src, n, (uint32_t*)dst);
}

// Transposes r (16 rows of 16) in registers: r[j] becomes column j.
AGV_AVX512 static inline void transpose16(__m512i r[16]) {
	__m512i t[16], u[16];
	for (int i = 0; i < 8; i++) {
		t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
		t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
	}
	// Per 128-bit lane j, u[4i+c] holds rows 4i..4i+3 of column 4j+c.
	for (int i = 0; i < 4; i++) {
		u[4 * i + 0] = _mm512_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 1] = _mm512_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
		u[4 * i + 2] = _mm512_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
		u[4 * i + 3] = _mm512_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
	}
	for (int c = 0; c < 4; c++) {
		__m512i ab_lo = _mm512_shuffle_i32x4(u[c], u[4 + c], 0x44), ab_hi = _mm512_shuffle_i32x4(u[c], u[4 + c], 0xEE);
		__m512i cd_lo = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0x44), cd_hi = _mm512_shuffle_i32x4(u[8 + c], u[12 + c], 0xEE);
		r[0 + c] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0x88);
		r[4 + c] = _mm512_shuffle_i32x4(ab_lo, cd_lo, 0xDD);
		r[8 + c] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0x88);
		r[12 + c] = _mm512_shuffle_i32x4(ab_hi, cd_hi, 0xDD);
	}
}

// One whole panel: 16 source rows (row stride k elements) into the
// panel's k×16 values at element at of out (float32 bits, or with half
// their upper 16 bits).
AGV_AVX512 static void pack_panel512(int st, const void* src, int64_t k, void* out, int half, int64_t at) {
	const int es = src_size(st);
	uint32_t* dst = (uint32_t*)out + at;
	uint16_t* dh = (uint16_t*)out + at;
	int64_t kk = 0;
	for (; kk + 16 <= k; kk += 16) {
		__m512i r[16];
		for (int j = 0; j < 16; j++) r[j] = load16(st, (const char*)src + (int64_t)j * k * es, kk);
		transpose16(r);
		for (int j = 0; j < 16; j++) {
			if (half)
				_mm256_storeu_si256((__m256i*)(dh + (kk + j) * AGL_PANEL), _mm512_cvtepi32_epi16(_mm512_srli_epi32(r[j], 16)));
			else
				_mm512_storeu_si512(dst + (kk + j) * AGL_PANEL, r[j]);
		}
	}
	for (; kk < k; kk++)
		for (int j = 0; j < 16; j++) {
			uint32_t b = elem_bits(st, (const char*)src + (int64_t)j * k * es, kk);
			if (half) dh[kk * AGL_PANEL + j] = (uint16_t)(b >> 16);
			else dst[kk * AGL_PANEL + j] = b;
		}
}

void agl_cvt_pack_rows(int vec, int src_type, const void* src, int64_t rows, int64_t k, void* out, int half,
                       int64_t row0) {
	const int es = src_size(src_type);
	int64_t r = 0;
	while (r < rows) {
		int64_t row = row0 + r, lane = row % AGL_PANEL, n = AGL_PANEL - lane;
		if (n > rows - r) n = rows - r;
		int64_t at = (row / AGL_PANEL) * k * AGL_PANEL;
		const char* s = (const char*)src + r * k * es;
		if (vec && n == AGL_PANEL) {
			pack_panel512(src_type, s, k, out, half, at);
		} else if (half) {
			// A partial panel: column by column, so the writes are sequential.
			uint16_t* dst = (uint16_t*)out + at;
			for (int64_t kk = 0; kk < k; kk++)
				for (int64_t j = 0; j < n; j++)
					dst[kk * AGL_PANEL + lane + j] = (uint16_t)(elem_bits(src_type, s + j * k * es, kk) >> 16);
		} else {
			uint32_t* dst = (uint32_t*)out + at;
			for (int64_t kk = 0; kk < k; kk++)
				for (int64_t j = 0; j < n; j++) dst[kk * AGL_PANEL + lane + j] = elem_bits(src_type, s + j * k * es, kk);
		}
		r += n;
	}
}

void agl_cvt_q8_rows(int vec, int src_type, const void* src, int64_t rows, int64_t k, int64_t row0,
                     int64_t nb, uint8_t* q, uint16_t* d, float* scratch) {
	const int es = src_size(src_type);
	for (int64_t r = 0; r < rows; r++) {
		agl_cvt_f32(vec, src_type, (const char*)src + r * k * es, k, scratch);
		agl_q8_quantize_rows(vec, scratch, 1, k, row0 + r, nb, q, d);
	}
}
