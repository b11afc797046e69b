// Parallel entry points of the kernels (par.c): each runs one kernel over
// work items with the pool (pool.h), the caller taking part, so that one
// cgo call covers a whole operation. helpers and chunk are as for
// agl_pool_run; the work items are those of the kernel named.
#ifndef AGL_PAR_H
#define AGL_PAR_H
#include <stdint.h>

#include "bf16z.h"
#include "kernels.h"
#include "pool.h"
#include "q8.h"

// Rows per work item of agl_par_gemm_bf16.
enum { AGL_PAR_BF16_ROWS = 8 };

// agl_gemm over groups of 4 panels.
void agl_par_gemm(agl_pool* p, int helpers, int64_t chunk, int level, const float* x, int64_t t, int64_t k,
                  const void* wp, int half, int64_t n, const float* bias, float* y);
// agl_gemm_bf16 over rows [0, rows) of w (row stride k), writing y[j·n + r]
// (bias[r]), in items of AGL_PAR_BF16_ROWS rows.
void agl_par_gemm_bf16(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* xb, int64_t t,
                       int64_t k, int64_t ldx, const uint16_t* w, int64_t rows, int64_t n, const float* bias,
                       float* y);
// agl_bf16_pack_act over its tiles of tokens.
void agl_par_bf16_pack_act(agl_pool* p, int helpers, int64_t chunk, const float* x, int64_t t, int64_t k,
                           uint32_t* xp);
// agl_gemm_bf16_many over rows [0, rows) of w in items (one at a time) of
// whole 16-row groups, item i the groups [G·i/items, G·(i+1)/items); pk
// holds pw words of panel scratch per worker (helpers + 1 of them).
void agl_par_gemm_bf16_many(agl_pool* p, int helpers, const uint32_t* xp, int64_t t, int64_t k, const uint16_t* w,
                            int64_t rows, int64_t n, const float* bias, float* y, int64_t items, uint32_t* pk,
                            int64_t pw);
// agl_gemm_bf16z over z's rows [0, rows), in items of AGL_PAR_BF16_ROWS
// rows; scratch holds AGL_BF16Z_SCRATCH_ROWS·k values per worker.
void agl_par_gemm_bf16z(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* xb, int64_t t,
                        int64_t ldx, const agl_bf16z* z, int64_t rows, const float* bias, float* y,
                        uint16_t* scratch);
// agl_gemm_bf16_many on z's rows, items as in agl_par_gemm_bf16_many, each
// item's rows decoded first (at level 3) into its worker's rw values of
// dec (at least agl_bf16_panel_rows()·k).
void agl_par_gemm_bf16z_many(agl_pool* p, int helpers, const uint32_t* xp, int64_t t, const agl_bf16z* z,
                             int64_t rows, const float* bias, float* y, int64_t items, uint32_t* pk, int64_t pw,
                             uint16_t* dec, int64_t rw);
// agl_bf16z_hist over blocks of rows: hist holds 256 counts per worker.
void agl_par_bf16z_hist(agl_pool* p, int helpers, int64_t chunk, const uint16_t* w, int64_t rows, int64_t k,
                        uint64_t* hist);
// agl_bf16z_count and then agl_bf16z_encode at level over rows (encode's
// eoff[r0] set by the caller between them, from the counts).
void agl_par_bf16z_count(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* w, int64_t rows,
                         int64_t k, const uint8_t* inv, uint32_t* cnt);
void agl_par_bf16z_encode(agl_pool* p, int helpers, int64_t chunk, int level, const uint16_t* w, int64_t rows,
                          int64_t k, const uint8_t* inv, uint8_t* data, uint8_t* esc, uint32_t* eoff, int64_t r0);
// agl_bf16z_decode at level over rows [r0, r1) into out (row stride k).
void agl_par_bf16z_decode(agl_pool* p, int helpers, int64_t chunk, int level, const agl_bf16z* z, int64_t r0,
                          int64_t r1, uint16_t* out);
// agl_gemm_q8 over groups of per panels.
void agl_par_gemm_q8(agl_pool* p, int helpers, int64_t chunk, int path, const int8_t* xq, const float* dx,
                     const int32_t* corr, int64_t t, int64_t nb, const uint8_t* q, const uint16_t* d, int64_t n,
                     const float* bias, float* y, int64_t per);
// agl_attention over its t·nh (token, head) items; scratch holds
// agl_attention_scratch_rows()·stride floats per worker (helpers + 1 of
// them).
void agl_par_attention(agl_pool* p, int helpers, int64_t chunk, int level, const float* q, int64_t t, int64_t nh,
                       int64_t nkv, int64_t hd, const void* kc, const void* vc, int kv_bf16, const int32_t* pos,
                       const int32_t* bt_off, const int32_t* bt, int64_t bs, float scale, float* out,
                       float* scratch, int64_t stride);
// agl_stream over blocks of block floats; returns the sum of the chunks'
// results' bits (a value the reads feed, so they cannot be left out).
uint32_t agl_par_stream(agl_pool* p, int helpers, int64_t chunk, int level, int pattern, const float* x,
                        int64_t blocks, int64_t block);
// The row ops over rows (tokens), as agl_rmsnorm, agl_rope (x in place,
// row stride stride) and agl_swiglu.
void agl_par_rmsnorm(agl_pool* p, int helpers, int64_t chunk, int level, const float* x, const float* w, float* y,
                     int64_t rows, int64_t d, float eps);
void agl_par_rope(agl_pool* p, int helpers, int64_t chunk, float* x, int64_t rows, int64_t heads, int64_t hd,
                  int64_t stride, const int32_t* pos, const float* inv_freq);
void agl_par_swiglu(agl_pool* p, int helpers, int64_t chunk, int level, const float* gu, int64_t rows,
                    int64_t inter, float* out);
#endif
