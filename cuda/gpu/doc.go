// Package gpu holds the CUDA versions of the engine's kernels: cuBLAS
// SGEMM (full fp32, no TF32) and own kernels for embedding, RMSNorm, RoPE,
// SwiGLU, residual add, KV-cache writes and attention over a paged KV cache,
// with the same layouts and semantics as package kernels.
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
//	d, err := gpu.Open()
//	x, err := d.Upload(hostValues)
//	err = d.RMSNorm(y, x, w, 1e-6)
package gpu
