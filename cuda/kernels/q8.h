// int8 weights in llama.cpp's Q8_0 numerics (q8.c): blocks of 32 weights
// along k, each with one fp16 scale d and int8 values q = round(w/d) in
// [-127, 127], d = max|w|/127 (ggml-quants.c quantize_row_q8_0_ref).
//
// Layout: rows are grouped in panels of 16 (the last zero-padded), k is
// padded with zeros to whole blocks. For panel p and block b (nb blocks a
// row) the 512 bytes at q + (p*nb + b)*512 hold, at g*64 + lane*4 + e,
// q+128 (an unsigned byte) of row 16p+lane, column 32b + 4g + e: one
// 64-byte load is four columns of sixteen rows, the operand vpdpbusd
// multiplies with four broadcast activation bytes. The 16 fp16 scales of
// (p, b) are at d + (p*nb + b)*16.
#ifndef AGL_Q8_H
#define AGL_Q8_H
#include <stdint.h>

enum { AGL_Q8_BLOCK = 32, AGL_Q8_PANEL = 16 };

int agl_cpu_has_vnni(void); // AVX-512F, BW and VNNI
int agl_cpu_has_f16c(void);

uint16_t agl_f32_to_f16(float f); // round to nearest even (as F16C, ggml)
float agl_f16_to_f32(uint16_t h);

// Quantizes rows [row0, row0+rows) of the matrix from src (rows × k
// floats, row-major) into q/d, as quantize_row_q8_0_ref (roundf: half
// away from zero), padding k to whole blocks with zeros. vec: whole blocks
// of finite values with AVX-512F (the same bytes).
void agl_q8_quantize_rows(int vec, const float* src, int64_t rows, int64_t k, int64_t row0, int64_t nb,
                          uint8_t* q, uint16_t* d);

// Dequantizes row r (k values, q*d in float32) into dst.
void agl_q8_row_f32(const uint8_t* q, const uint16_t* d, int64_t nb, int64_t r, int64_t k, float* dst);

// Quantizes activations for the matrix product: per token and block of 32,
// dx = max|x|/127 (float32, not rounded to fp16), xq = nearbyint(x*127/max|x|)
// (nearest even, as llama.cpp's AVX quantize_row_q8_0), and
// corr = -128*Σxq (the offset of the +128 weight bytes). xq rows have
// stride nb*32, zero-padded; dx and corr rows stride nb. A block holding
// Inf or NaN gets dx = NaN, so the outputs it touches are NaN.
// vec: whole blocks of finite values with AVX-512F (the same bytes).
void agl_q8_quantize_act(int vec, const float* x, int64_t t, int64_t k, int64_t nb, int8_t* xq, float* dx,
                         int32_t* corr);

// y[j][r] = Σ_b fl(dw[r][b]·dx[j][b]) · isum[j][r][b] (+ bias[r]) for the
// panels [p_lo, p_hi), isum the exact integer dot product of the block.
// The float part is one fmaf chain per output over the blocks in order,
// starting at 0, then + bias: every path (0 generic, 1 AVX2+F16C,
// 2 AVX-512 VNNI) computes the same bits, whatever t or the panel range.
void agl_gemm_q8(int path, const int8_t* xq, const float* dx, const int32_t* corr, int64_t t, int64_t nb,
                 const uint8_t* q, const uint16_t* d, int64_t n, const float* bias, float* y, int64_t p_lo,
                 int64_t p_hi);
#endif
