// C interface of the CUDA kernels (kernels.cu). Pointers named x, y, w,
// q, k, v, kc, vc, gu, out, table, pos, ids, slots, bt, bt_off, scratch and
// bias are device pointers. Every function returns 0 or an error code
// (agl_gpu_error_string describes CUDA codes; 1000+n is cuBLAS status n).
#ifndef AGL_KERNELS_CUDA_H
#define AGL_KERNELS_CUDA_H
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
int agl_gpu_device_count(int* n);
const char* agl_gpu_error_string(int code);
int agl_gpu_malloc(void** p, size_t bytes);
int agl_gpu_free(void* p);
int agl_gpu_upload(void* dst, const void* src, size_t bytes);
int agl_gpu_download(void* dst, const void* src, size_t bytes);
int agl_gpu_sync(void);
// Strided device-to-device copy (dst and src device pointers; pitches and
// width in bytes), like cudaMemcpy2D.
int agl_gpu_copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows);
int agl_gpu_blas_create(void** h);
int agl_gpu_blas_destroy(void* h);
int agl_gpu_gemm(void* h, const float* x, int64_t t, int64_t k, const float* w, int64_t n, const float* bias,
                 float* y);
int agl_gpu_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps);
int agl_gpu_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride, const int32_t* pos,
                 const float* inv_freq);
int agl_gpu_swiglu(const float* gu, int64_t t, int64_t inter, float* out);
int agl_gpu_add(float* x, const float* y, int64_t n);
int agl_gpu_embed(const float* table, const int32_t* ids, int64_t t, int64_t h, float* out);
int agl_gpu_kv_store(const float* k, const float* v, const int32_t* slots, int64_t t, int64_t width, float* kc,
                     float* vc);
int agl_gpu_attention(const float* q, int64_t t, int64_t nh, int64_t nkv, int64_t hd, const float* kc,
                      const float* vc, const int32_t* pos, const int32_t* bt_off, const int32_t* bt, int64_t bs,
                      float scale, float* out, float* scratch, int64_t max_ctx);
#ifdef __cplusplus
}
#endif
#endif
