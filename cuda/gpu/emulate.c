//go:build cuda && cudaemu

// A plain-C, single-threaded emulation of kernels_cuda.h for machines with
// no GPU: "device" memory is host memory and every kernel is a loop with the
// semantics documented for kernels.cu. Built instead of libaglcuda.a, cuBLAS
// and the CUDA runtime under the tags `cuda cudaemu`, it lets the host side
// of the CUDA path (package gpu's wrappers, model's GPU forward, the engine
// on the device) run and be tested here. It says nothing about the CUDA
// kernels themselves: only a GPU runs those.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels_cuda.h"

enum { EMU_OK = 0, EMU_OOM = 2, EMU_RANGE = 3 };

int agl_gpu_device_count(int* n) {
	*n = 1;
	return EMU_OK;
}

const char* agl_gpu_error_string(int code) {
	switch (code) {
	case EMU_OOM:
		return "out of memory (emulated)";
	case EMU_RANGE:
		return "attention position past max_ctx (emulated)";
	}
	return "error (emulated)";
}

// Live allocations, and how many more may succeed (negative: no limit),
// so tests can check that every path frees what it allocated, including
// the paths where an allocation fails. Atomic: several models may
// allocate at once.
static long live, budget = -1;

long agl_gpu_emu_live(void) { return __atomic_load_n(&live, __ATOMIC_SEQ_CST); }

void agl_gpu_emu_fail_after(long n) { __atomic_store_n(&budget, n, __ATOMIC_SEQ_CST); }

int agl_gpu_malloc(void** p, size_t bytes) {
	long b = __atomic_load_n(&budget, __ATOMIC_SEQ_CST);
	for (;;) {
		if (b == 0) return EMU_OOM;
		if (b < 0 || __atomic_compare_exchange_n(&budget, &b, b - 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) break;
	}
	*p = malloc(bytes ? bytes : 1);
	if (!*p) return EMU_OOM;
	__atomic_add_fetch(&live, 1, __ATOMIC_SEQ_CST);
	return EMU_OK;
}

int agl_gpu_free(void* p) {
	if (p) __atomic_sub_fetch(&live, 1, __ATOMIC_SEQ_CST);
	free(p);
	return EMU_OK;
}

int agl_gpu_upload(void* dst, const void* src, size_t bytes) {
	memcpy(dst, src, bytes);
	return EMU_OK;
}

int agl_gpu_download(void* dst, const void* src, size_t bytes) {
	memcpy(dst, src, bytes);
	return EMU_OK;
}

int agl_gpu_sync(void) { return EMU_OK; }

int agl_gpu_copy2d(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows) {
	for (size_t r = 0; r < rows; r++) memcpy((char*)dst + r * dpitch, (const char*)src + r * spitch, width);
	return EMU_OK;
}

static int handle;

int agl_gpu_blas_create(void** h) {
	*h = &handle;
	return EMU_OK;
}

int agl_gpu_blas_destroy(void* h) {
	(void)h;
	return EMU_OK;
}

int agl_gpu_gemm(void* h, const float* x, int64_t t, int64_t k, const float* w, int64_t n, const float* bias,
                 float* y) {
	(void)h;
	for (int64_t i = 0; i < t; i++)
		for (int64_t j = 0; j < n; j++) {
			float s = 0;
			for (int64_t l = 0; l < k; l++) s += x[i * k + l] * w[j * k + l];
			y[i * n + j] = bias ? s + bias[j] : s;
		}
	return EMU_OK;
}

int agl_gpu_rmsnorm(const float* x, const float* w, float* y, int64_t rows, int64_t d, float eps) {
	for (int64_t r = 0; r < rows; r++) {
		float ss = 0;
		for (int64_t i = 0; i < d; i++) ss += x[r * d + i] * x[r * d + i];
		float inv = 1.0f / sqrtf(ss / (float)d + eps);
		for (int64_t i = 0; i < d; i++) y[r * d + i] = w[i] * (x[r * d + i] * inv);
	}
	return EMU_OK;
}

int agl_gpu_rope(float* x, int64_t t, int64_t nheads, int64_t hd, int64_t stride, const int32_t* pos,
                 const float* inv_freq) {
	int64_t half = hd / 2;
	for (int64_t i = 0; i < t; i++)
		for (int64_t h = 0; h < nheads; h++)
			for (int64_t j = 0; j < half; j++) {
				float a = (float)pos[i] * inv_freq[j], c = cosf(a), s = sinf(a);
				float* xh = x + i * stride + h * hd;
				float u = xh[j], v = xh[j + half];
				xh[j] = u * c - v * s;
				xh[j + half] = v * c + u * s;
			}
	return EMU_OK;
}

int agl_gpu_swiglu(const float* gu, int64_t t, int64_t inter, float* out) {
	for (int64_t i = 0; i < t; i++)
		for (int64_t j = 0; j < inter; j++) {
			float g = gu[i * 2 * inter + j], u = gu[i * 2 * inter + inter + j];
			out[i * inter + j] = g / (1.0f + expf(-g)) * u;
		}
	return EMU_OK;
}

int agl_gpu_add(float* x, const float* y, int64_t n) {
	for (int64_t i = 0; i < n; i++) x[i] += y[i];
	return EMU_OK;
}

int agl_gpu_embed(const float* table, const int32_t* ids, int64_t t, int64_t h, float* out) {
	for (int64_t i = 0; i < t; i++) memcpy(out + i * h, table + (int64_t)ids[i] * h, (size_t)h * sizeof(float));
	return EMU_OK;
}

int agl_gpu_kv_store(const float* k, const float* v, const int32_t* slots, int64_t t, int64_t width, float* kc,
                     float* vc) {
	for (int64_t i = 0; i < t; i++) {
		memcpy(kc + (int64_t)slots[i] * width, k + i * width, (size_t)width * sizeof(float));
		memcpy(vc + (int64_t)slots[i] * width, v + i * width, (size_t)width * sizeof(float));
	}
	return EMU_OK;
}

// Like kernels.cu: scratch holds one row of max_ctx scores per (token,
// head); a position past max_ctx, which would write out of it on the GPU,
// is an error here.
int agl_gpu_attention(const float* q, int64_t t, int64_t nh, int64_t nkv, int64_t hd, const float* kc,
                      const float* vc, const int32_t* pos, const int32_t* bt_off, const int32_t* bt, int64_t bs,
                      float scale, float* out, float* scratch, int64_t max_ctx) {
	int64_t kvstride = nkv * hd;
	for (int64_t item = 0; item < t * nh; item++) {
		int64_t i = item / nh, h = item % nh, kvh = h / (nh / nkv);
		const float* qh = q + i * nh * hd + h * hd;
		const int32_t* table = bt + bt_off[i];
		int64_t n = (int64_t)pos[i] + 1;
		if (n > max_ctx) return EMU_RANGE;
		float* sc = scratch + item * max_ctx;
		float mx = -INFINITY;
		for (int64_t p = 0; p < n; p++) {
			const float* kr = kc + ((int64_t)table[p / bs] * bs + p % bs) * kvstride + kvh * hd;
			float s = 0;
			for (int64_t d = 0; d < hd; d++) s = fmaf(qh[d], kr[d], s);
			sc[p] = s * scale;
			mx = fmaxf(mx, sc[p]);
		}
		float sum = 0;
		for (int64_t p = 0; p < n; p++) {
			sc[p] = expf(sc[p] - mx);
			sum += sc[p];
		}
		for (int64_t d = 0; d < hd; d++) {
			float o = 0;
			for (int64_t p = 0; p < n; p++)
				o = fmaf(sc[p] / sum, vc[((int64_t)table[p / bs] * bs + p % bs) * kvstride + kvh * hd + d], o);
			out[i * nh * hd + h * hd + d] = o;
		}
	}
	return EMU_OK;
}
