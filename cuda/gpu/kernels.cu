// CUDA kernels of the in-process engine: the same operations as the CPU
// kernels in ../kernels (same layouts, same semantics), with cuBLAS for
// GEMM. Built into libaglcuda.a by the Makefile in this directory and linked
// by the Go package under the `cuda` build tag.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "kernels_cuda.h"

static int ok(cudaError_t e) { return e == cudaSuccess ? 0 : (int)e; }

extern "C" int agl_gpu_device_count(int* n) { return ok(cudaGetDeviceCount(n)); }

extern "C" const char* agl_gpu_error_string(int code) { return cudaGetErrorString((cudaError_t)code); }

extern "C" int agl_gpu_malloc(void** p, size_t bytes) { return ok(cudaMalloc(p, bytes)); }

extern "C" int agl_gpu_free(void* p) { return ok(cudaFree(p)); }

extern "C" int agl_gpu_upload(void* dst, const void* src, size_t bytes) {
	return ok(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice));
}

extern "C" int agl_gpu_download(void* dst, const void* src, size_t bytes) {
	return ok(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

extern "C" int agl_gpu_sync(void) { return ok(cudaDeviceSynchronize()); }

// Device-to-device strided copy, queued on the default stream after the
// kernels that produce src.
extern "C" int agl_gpu_copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows) {
	return ok(cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, 0));
}

extern "C" int agl_gpu_blas_create(void** h) {
	cublasHandle_t handle;
	cublasStatus_t s = cublasCreate(&handle);
	if (s != CUBLAS_STATUS_SUCCESS) return 1000 + (int)s;
	// Full fp32: no TF32 tensor-core shortcuts, so results match the CPU.
	cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
	*h = handle;
	return 0;
}

extern "C" int agl_gpu_blas_destroy(void* h) {
	cublasStatus_t s = cublasDestroy((cublasHandle_t)h);
	return s == CUBLAS_STATUS_SUCCESS ? 0 : 1000 + (int)s;
}

__global__ void add_bias(float* y, const float* bias, int64_t t, int64_t n) {
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < t * n) y[i] += bias[i % n];
}

// y[t][n] = x[t][k] · W[n][k]ᵀ (+ bias). Row-major y is column-major yᵀ
// (n × t) = W (column-major k × n, transposed) · xᵀ (column-major k × t).
extern "C" int agl_gpu_gemm(void* h, const float* x, int64_t t, int64_t k, const float* w, int64_t n,
                            const float* bias, float* y) {
	const float one = 1.0f, zero = 0.0f;
	cublasStatus_t s = cublasSgemm((cublasHandle_t)h, CUBLAS_OP_T, CUBLAS_OP_N, (int)n, (int)t, (int)k, &one, w,
	                               (int)k, x, (int)k, &zero, y, (int)n);
	if (s != CUBLAS_STATUS_SUCCESS) return 1000 + (int)s;
	if (bias) {
		int64_t total = t * n;
		add_bias<<<(unsigned)((total + 255) / 256), 256>>>(y, bias, t, n);
	}
	return ok(cudaGetLastError());
}

// Block-wide sum; blockDim.x is a multiple of 32 and at most 1024.
__device__ float block_sum(float v) {
	__shared__ float part[32];
	for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
	if (lane == 0) part[warp] = v;
	__syncthreads();
	int nw = (blockDim.x + 31) >> 5;
	v = threadIdx.x < nw ? part[threadIdx.x] : 0.0f;
	if (warp == 0)
		for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffff, v, o);
	__shared__ float total;
	if (threadIdx.x == 0) total = v;
	__syncthreads();
	return total;
}

__device__ float block_max(float v) {
	__shared__ float part[32];
	for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
	if (lane == 0) part[warp] = v;
	__syncthreads();
	int nw = (blockDim.x + 31) >> 5;
	v = threadIdx.x < nw ? part[threadIdx.x] : -INFINITY;
	if (warp == 0)
		for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_down_sync(0xffffffff, v, o));
	__shared__ float total;
	if (threadIdx.x == 0) total = v;
	__syncthreads();
	return total;
}

__global__ void rmsnorm_kernel(const float* x, const float* w, float* y, int64_t d, float eps) {
	const float* xr = x + blockIdx.x * d;
	float* yr = y + blockIdx.x * d;
	float ss = 0;
	for (int64_t i = threadIdx.x; i < d; i += blockDim.x) ss += xr[i] * xr[i];
	ss = block_sum(ss);
	float inv = 1.0f / sqrtf(ss / (float)d + eps);
	for (int64_t i = threadIdx.x; i < d; i += blockDim.x) yr[i] = w[i] * (xr[i] * inv);
}

extern "C" int agl_gpu_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps) {
	if (rows > 0) rmsnorm_kernel<<<(unsigned)rows, 256>>>(x, w, y, d, eps);
	return ok(cudaGetLastError());
}

__global__ void rope_kernel(float* x, int64_t nheads, int64_t hd, int64_t stride, const int32_t* pos,
                            const float* inv_freq) {
	int64_t i = blockIdx.x;  // token
	int64_t half = hd / 2;
	for (int64_t e = threadIdx.x; e < nheads * half; e += blockDim.x) {
		int64_t h = e / half, j = e % half;
		float a = (float)pos[i] * inv_freq[j];
		float c = cosf(a), s = sinf(a);
		float* xh = x + i * stride + h * hd;
		float u = xh[j], v = xh[j + half];
		xh[j] = __fsub_rn(__fmul_rn(u, c), __fmul_rn(v, s));
		xh[j + half] = __fadd_rn(__fmul_rn(v, c), __fmul_rn(u, s));
	}
}

extern "C" int agl_gpu_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride, const int32_t* pos,
                            const float* inv_freq) {
	if (t > 0) rope_kernel<<<(unsigned)t, 128>>>(x, nheads, hd, stride, pos, inv_freq);
	return ok(cudaGetLastError());
}

__global__ void swiglu_kernel(const float* gu, int64_t t, int64_t inter, float* out) {
	int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (e >= t * inter) return;
	int64_t i = e / inter, j = e % inter;
	float g = gu[i * 2 * inter + j], u = gu[i * 2 * inter + inter + j];
	out[e] = g / (1.0f + expf(-g)) * u;
}

extern "C" int agl_gpu_swiglu(const float* gu, int64_t t, int64_t inter, float* out) {
	int64_t n = t * inter;
	if (n > 0) swiglu_kernel<<<(unsigned)((n + 255) / 256), 256>>>(gu, t, inter, out);
	return ok(cudaGetLastError());
}

__global__ void add_kernel(float* x, const float* y, int64_t n) {
	int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) x[i] += y[i];
}

extern "C" int agl_gpu_add(float* x, const float* y, int64_t n) {
	if (n > 0) add_kernel<<<(unsigned)((n + 255) / 256), 256>>>(x, y, n);
	return ok(cudaGetLastError());
}

__global__ void embed_kernel(const float* table, const int32_t* ids, int64_t h, float* out) {
	const float* row = table + (int64_t)ids[blockIdx.x] * h;
	for (int64_t j = threadIdx.x; j < h; j += blockDim.x) out[blockIdx.x * h + j] = row[j];
}

extern "C" int agl_gpu_embed(const float* table, const int32_t* ids, int64_t t, int64_t h, float* out) {
	if (t > 0) embed_kernel<<<(unsigned)t, 256>>>(table, ids, h, out);
	return ok(cudaGetLastError());
}

// Writes the chunk's K and V rows into their cache slots.
__global__ void kv_store_kernel(const float* k, const float* v, const int32_t* slots, int64_t width, float* kc,
                                float* vc) {
	int64_t i = blockIdx.x;
	int64_t s = slots[i];
	for (int64_t j = threadIdx.x; j < width; j += blockDim.x) {
		kc[s * width + j] = k[i * width + j];
		vc[s * width + j] = v[i * width + j];
	}
}

extern "C" int agl_gpu_kv_store(const float* k, const float* v, const int32_t* slots, int64_t t, int64_t width,
                                float* kc, float* vc) {
	if (t > 0) kv_store_kernel<<<(unsigned)t, 256>>>(k, v, slots, width, kc, vc);
	return ok(cudaGetLastError());
}

// One block per (token, head): scores into scratch (one row of max_ctx
// floats per block), softmax, then each thread owns output dimensions.
__global__ void attention_kernel(const float* q, int64_t nh, int64_t nkv, int64_t hd, const float* kc,
                                 const float* vc, const int32_t* pos, const int32_t* bt_off, const int32_t* bt,
                                 int64_t bs, float scale, float* out, float* scratch, int64_t max_ctx) {
	int64_t item = blockIdx.x;
	int64_t i = item / nh, h = item % nh, kvh = h / (nh / nkv);
	const float* qh = q + i * nh * hd + h * hd;
	const int32_t* table = bt + bt_off[i];
	int64_t n = (int64_t)pos[i] + 1;
	int64_t kvstride = nkv * hd;
	float* sc = scratch + item * max_ctx;
	float mx = -INFINITY;
	for (int64_t p = threadIdx.x; p < n; p += blockDim.x) {
		int64_t slot = (int64_t)table[p / bs] * bs + p % bs;
		const float* kr = kc + slot * kvstride + kvh * hd;
		float s = 0;
		for (int64_t d = 0; d < hd; d++) s = fmaf(qh[d], kr[d], s);
		s *= scale;
		sc[p] = s;
		mx = fmaxf(mx, s);
	}
	mx = block_max(mx);
	float sum = 0;
	for (int64_t p = threadIdx.x; p < n; p += blockDim.x) {
		float e = expf(sc[p] - mx);
		sc[p] = e;
		sum += e;
	}
	sum = block_sum(sum);  // also orders the scratch writes before the reads below
	float inv = 1.0f / sum;
	for (int64_t d = threadIdx.x; d < hd; d += blockDim.x) {
		float o = 0;
		for (int64_t p = 0; p < n; p++) {
			int64_t slot = (int64_t)table[p / bs] * bs + p % bs;
			o = fmaf(sc[p] * inv, vc[slot * kvstride + kvh * hd + d], o);
		}
		out[i * nh * hd + h * hd + d] = o;
	}
}

extern "C" int agl_gpu_attention(const float* q, int64_t t, int64_t nh, int64_t nkv, int64_t hd, const float* kc,
                                 const float* vc, const int32_t* pos, const int32_t* bt_off, const int32_t* bt,
                                 int64_t bs, float scale, float* out, float* scratch, int64_t max_ctx) {
	if (t > 0)
		attention_kernel<<<(unsigned)(t * nh), 128>>>(q, nh, nkv, hd, kc, vc, pos, bt_off, bt, bs, scale, out,
		                                               scratch, max_ctx);
	return ok(cudaGetLastError());
}
