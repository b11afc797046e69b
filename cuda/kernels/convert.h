// Conversions from checkpoint element types straight into the kernels'
// weight layouts, for loading: no widened float32 copy of a tensor is
// written to memory first. Every result is bit-identical to widening the
// source exactly (bf16 and f16 to float32 are exact; NaN payloads are
// kept, as safetensors.HalfToFloat32 and the bf16 shift keep them) and then
// calling agl_pack_rows or agl_q8_quantize_rows on the float32 values.
#ifndef AGL_CONVERT_H
#define AGL_CONVERT_H
#include <stdint.h>

// Source element types (little-endian).
enum { AGL_SRC_F32 = 0, AGL_SRC_F16 = 1, AGL_SRC_BF16 = 2 };

// dst[i] = src[i] widened to float32, for n elements. vec: AVX-512F may be
// used (the same bits).
void agl_cvt_f32(int vec, int src_type, const void* src, int64_t n, float* dst);

// As agl_pack_rows on the widened rows: writes rows [row0, row0+rows) of
// the packed matrix out (panels of AGL_PANEL rows, k columns) from src
// (rows × k elements of src_type, row-major). With half, out holds the
// panels as the upper 16 bits of each widened value (uint16_t), which the
// caller has made sure are bf16 values (agl_gemm's half panels).
void agl_cvt_pack_rows(int vec, int src_type, const void* src, int64_t rows, int64_t k, void* out, int half,
                       int64_t row0);

// As agl_q8_quantize_rows(vec, ...) on the widened rows, one row at a time
// through scratch (k floats, which stay in cache).
void agl_cvt_q8_rows(int vec, int src_type, const void* src, int64_t rows, int64_t k, int64_t row0,
                     int64_t nb, uint8_t* q, uint16_t* d, float* scratch);
#endif
