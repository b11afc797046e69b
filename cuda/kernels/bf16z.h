// Losslessly compressed bfloat16 weights (bf16z.c): every bf16 value of a
// matrix W[n][k] kept bit for bit in 12 bits and a few escapes, so that a
// memory-bound product reads three quarters of the bytes of bf16.
//
// A bf16 value is a high byte (sign and the exponent's upper 7 bits) and a
// low byte (the exponent's last bit and 7 mantissa bits). Weights of real
// and randomly initialised models use few high bytes: the exponents of
// normally distributed values cluster within a few octaves of their scale.
// So the low byte is stored as is, and the high byte as a 4-bit code into
// a per-matrix table of its 15 most frequent values; code 15 is an escape,
// whose high byte follows in the row's escape bytes.
//
// Rows are padded to kp = k rounded up to 64 and cut into groups of 64
// weights, each 96 bytes, so that a row is one stream of kp·3/2 bytes. In
// group g of row r, stored position p (0..63) holds weight 64g + w(p),
// w(p) = 8·(p/16) + p%16 for p%16 < 8 and 32 + 8·(p/16) + p%16 − 8
// otherwise: the order in which vpunpck{l,h}bw of the low and high bytes
// give the weights back as two 32-element chunks in memory order. With
// the group at d = data + r·kp·3/2 + 96g:
//   d[p%32]                     the code, in the low nibble for p < 32 and
//                               the high one otherwise (0 past k);
//   d[32 + p]                   the low byte (0 past k);
//   esc[eoff[r] .. eoff[r+1])   the high bytes of the row's escapes, in
//                               the order of (g, p).
// A weight past k decodes to 0 whatever its code (the kernels mask it).
#ifndef AGL_BF16Z_H
#define AGL_BF16Z_H
#include <stdint.h>

enum { AGL_BF16Z_GROUP = 64, AGL_BF16Z_ESC = 15 };

typedef struct {
	const uint8_t* data; // n·kp·3/2
	const uint8_t* esc;
	const uint32_t* eoff; // n+1 offsets into esc
	uint8_t table[16]; // the high bytes of codes 0–14 (entry 15, the escape's, 0)
	int64_t k;
} agl_bf16z;

// agl_bf16z_hist adds the count of each high byte of w[0..n) to hist.
void agl_bf16z_hist(const uint16_t* w, int64_t n, uint64_t hist[256]);
// agl_bf16z_encode writes rows [0, rows) of w (row stride k) as rows
// [r0, r0+rows) of z: data (writable, given as z's), esc from
// eoff[r0] on, counting the escapes of each row into eoff[r+1] − eoff[r]
// relative to eoff[r0] (eoff[r0] must be set; the rest are written).
// inv maps a high byte to its code (AGL_BF16Z_ESC when not in the table).
// level ≥ 2 with AVX512BW encodes 64 weights at a time (the same bytes).
void agl_bf16z_encode(int level, const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint8_t* data,
                      uint8_t* esc, uint32_t* eoff, int64_t r0);
// agl_bf16z_count writes the number of escapes of each of rows rows of w
// into cnt (level as for agl_bf16z_encode).
void agl_bf16z_count(int level, const uint16_t* w, int64_t rows, int64_t k, const uint8_t inv[256], uint32_t* cnt);
// agl_bf16z_decode writes rows [r0, r1) of z as bf16 rows of stride k
// (level ≥ 2 with AVX512BW: in registers, as the kernels; else scalar).
void agl_bf16z_decode(int level, const agl_bf16z* z, int64_t r0, int64_t r1, uint16_t* out);
// agl_bf16z_bad_row returns the first row of [0, n) whose escape count
// is not eoff[r+1] − eoff[r], or −1: the full check of untrusted data (the
// kernels read no escape byte outside a row's range either way).
int64_t agl_bf16z_bad_row(const agl_bf16z* z, int64_t n);

// agl_gemm_bf16z is agl_gemm_bf16 over rows [r_lo, r_hi) of z, the same
// bits. At level 3 with t ≤ 8 the weights are decoded in registers; else
// rows are decoded into scratch (AGL_BF16Z_SCRATCH_ROWS · k bf16 values)
// and agl_gemm_bf16 runs on them.
enum { AGL_BF16Z_SCRATCH_ROWS = 8 };
void agl_gemm_bf16z(int level, const uint16_t* xb, int64_t t, int64_t ldx, const agl_bf16z* z, int64_t n,
                    const float* bias, float* y, int64_t r_lo, int64_t r_hi, uint16_t* scratch);
#endif
