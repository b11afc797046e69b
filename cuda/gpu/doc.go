// Package gpu holds the CUDA versions of the engine's kernels: cuBLAS
// SGEMM (full fp32, no TF32) and own kernels for embedding (also used as a
// row gather), RMSNorm, RoPE, SwiGLU, residual add, KV-cache writes and
// attention over a paged KV cache, with the same layouts and semantics as
// package kernels, plus device memory (buffers, views, copies at offsets,
// strided 2-D copies). cuda/model's GPU forward pass is built on it.
//
// It is built only with the `cuda` build tag, after compiling the kernels
// with nvcc (sm_80 and sm_90):
//
//	make -C cuda/gpu && go test -tags cuda ./cuda/gpu/
//
// Without the tag the package only reports Available() == false. The tests
// compare every kernel with the CPU kernels and skip when no GPU is
// present. The CUDA path is compile- and link-checked on GPU-less machines
// but has not been run here.
//
// With the tags `cuda cudaemu`, emulate.c — a single-threaded plain-C
// implementation of kernels_cuda.h over host memory — is linked instead of
// libaglcuda.a, cuBLAS and the CUDA runtime, and Available reports true:
// the host side of the CUDA path then runs on any machine, and the
// emulation counts allocations (EmulatedLiveBuffers) and fails them on
// demand (EmulateOutOfMemoryAfter) for leak tests. It checks the code
// around the kernels, not the CUDA kernels.
//
//	d, err := gpu.Open()
//	x, err := d.Upload(hostValues)
//	err = d.RMSNorm(y, x, w, 1e-6)
package gpu
