//go:build cuda

package gpu

// The link flags are in link_cuda.go (nvcc's libaglcuda.a, cuBLAS, the
// CUDA runtime) or, with the cudaemu tag, emulate.c replaces all three.

/*
#include "kernels_cuda.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrNoDevice is returned by Open when no CUDA device is present.
var ErrNoDevice = errors.New("gpu: no CUDA device")

func check(op string, code C.int) error {
	if code == 0 {
		return nil
	}
	if code >= 1000 {
		return fmt.Errorf("gpu: %s: cuBLAS status %d", op, int(code)-1000)
	}
	return fmt.Errorf("gpu: %s: %s", op, C.GoString(C.agl_gpu_error_string(code)))
}

// Available reports whether a CUDA device is present.
func Available() bool {
	var n C.int
	return C.agl_gpu_device_count(&n) == 0 && n > 0
}

// Device is the current CUDA device with a cuBLAS handle. Its methods
// enqueue work on the default stream; Download waits for it.
type Device struct {
	blas unsafe.Pointer
}

// Open returns the current device.
func Open() (*Device, error) {
	if !Available() {
		return nil, ErrNoDevice
	}
	d := &Device{}
	if err := check("cublasCreate", C.agl_gpu_blas_create(&d.blas)); err != nil {
		return nil, err
	}
	return d, nil
}

// Close releases the cuBLAS handle.
func (d *Device) Close() error {
	if d.blas == nil {
		return nil
	}
	err := check("cublasDestroy", C.agl_gpu_blas_destroy(d.blas))
	d.blas = nil
	return err
}

// Buffer is device memory holding N float32 (or int32) values, or a view
// of part of another buffer (Slice).
type Buffer struct {
	ptr  unsafe.Pointer
	N    int
	view bool
}

// Slice returns a view of values [off, off+n) of b, sharing its memory: the
// forward pass keeps buffers sized for the largest batch so far and hands
// the kernels views of the current batch's size. A view is not freed on
// its own. Like slicing, an out-of-range view is a programming error and
// panics.
func (b *Buffer) Slice(off, n int) *Buffer {
	if off < 0 || n < 0 || off+n > b.N {
		panic(fmt.Sprintf("gpu: Slice [%d,%d) of a buffer of %d", off, off+n, b.N))
	}
	return &Buffer{ptr: unsafe.Add(b.ptr, 4*off), N: n, view: true}
}

func (b *Buffer) f() *C.float   { return (*C.float)(b.ptr) }
func (b *Buffer) i() *C.int32_t { return (*C.int32_t)(b.ptr) }
func optional(b *Buffer) *C.float {
	if b == nil {
		return nil
	}
	return b.f()
}

// Alloc allocates n values of device memory.
func (d *Device) Alloc(n int) (*Buffer, error) {
	b := &Buffer{N: n}
	if n == 0 {
		return b, nil
	}
	if err := check("cudaMalloc", C.agl_gpu_malloc(&b.ptr, C.size_t(4*n))); err != nil {
		return nil, err
	}
	return b, nil
}

// Free releases the buffer (not a view: free the buffer it came from).
func (d *Device) Free(b *Buffer) error {
	if b == nil || b.ptr == nil {
		return nil
	}
	if b.view {
		return errors.New("gpu: Free of a view")
	}
	err := check("cudaFree", C.agl_gpu_free(b.ptr))
	b.ptr, b.N = nil, 0
	return err
}

// Upload copies host float32 values to a new buffer.
func (d *Device) Upload(v []float32) (*Buffer, error) {
	b, err := d.Alloc(len(v))
	if err != nil || len(v) == 0 {
		return b, err
	}
	if err := check("upload", C.agl_gpu_upload(b.ptr, unsafe.Pointer(&v[0]), C.size_t(4*len(v)))); err != nil {
		return nil, errors.Join(err, d.Free(b))
	}
	return b, nil
}

// UploadInts copies host int32 values to a new buffer.
func (d *Device) UploadInts(v []int32) (*Buffer, error) {
	b, err := d.Alloc(len(v))
	if err != nil || len(v) == 0 {
		return b, err
	}
	if err := check("upload", C.agl_gpu_upload(b.ptr, unsafe.Pointer(&v[0]), C.size_t(4*len(v)))); err != nil {
		return nil, errors.Join(err, d.Free(b))
	}
	return b, nil
}

// Write copies host float32 values into b starting at value off.
func (d *Device) Write(b *Buffer, off int, v []float32) error {
	if off < 0 || off+len(v) > b.N {
		return fmt.Errorf("gpu: Write: %d values at %d into a buffer of %d", len(v), off, b.N)
	}
	if len(v) == 0 {
		return nil
	}
	return check("upload", C.agl_gpu_upload(unsafe.Add(b.ptr, 4*off), unsafe.Pointer(&v[0]), C.size_t(4*len(v))))
}

// WriteInts copies host int32 values into b starting at value off.
func (d *Device) WriteInts(b *Buffer, off int, v []int32) error {
	if off < 0 || off+len(v) > b.N {
		return fmt.Errorf("gpu: WriteInts: %d values at %d into a buffer of %d", len(v), off, b.N)
	}
	if len(v) == 0 {
		return nil
	}
	return check("upload", C.agl_gpu_upload(unsafe.Add(b.ptr, 4*off), unsafe.Pointer(&v[0]), C.size_t(4*len(v))))
}

// Read copies the first len(dst) values of b into dst after all queued
// work finished: unlike Download it reuses the caller's memory.
func (d *Device) Read(dst []float32, b *Buffer) error {
	if len(dst) > b.N {
		return fmt.Errorf("gpu: Read: %d values from a buffer of %d", len(dst), b.N)
	}
	if err := check("sync", C.agl_gpu_sync()); err != nil {
		return err
	}
	if len(dst) == 0 {
		return nil
	}
	return check("download", C.agl_gpu_download(unsafe.Pointer(&dst[0]), b.ptr, C.size_t(4*len(dst))))
}

// Copy2D copies rows of width values: row r of dst (at r*dstStride) gets
// row r of src (at r*srcStride). With views it cuts column blocks out of
// a matrix, e.g. q, k and v out of the fused q|k|v projection.
func (d *Device) Copy2D(dst *Buffer, dstStride int, src *Buffer, srcStride, width, rows int) error {
	if rows == 0 || width == 0 {
		return nil
	}
	if width < 0 || rows < 0 || dstStride < width || srcStride < width ||
		dst.N < (rows-1)*dstStride+width || src.N < (rows-1)*srcStride+width {
		return fmt.Errorf("gpu: Copy2D: %d rows of %d (strides %d, %d) between buffers of %d and %d", rows, width, dstStride, srcStride, dst.N, src.N)
	}
	return check("copy2d", C.agl_gpu_copy2d(dst.ptr, C.size_t(4*dstStride), src.ptr, C.size_t(4*srcStride), C.size_t(4*width), C.size_t(rows)))
}

// Download copies a buffer to the host after all queued work finished.
func (d *Device) Download(b *Buffer) ([]float32, error) {
	if err := check("sync", C.agl_gpu_sync()); err != nil {
		return nil, err
	}
	out := make([]float32, b.N)
	if b.N == 0 {
		return out, nil
	}
	return out, check("download", C.agl_gpu_download(unsafe.Pointer(&out[0]), b.ptr, C.size_t(4*b.N)))
}

// MatMul computes y[t][n] = x[t][k]·W[n][k]ᵀ + bias (bias may be nil).
func (d *Device) MatMul(y, x *Buffer, t int, w *Buffer, n, k int, bias *Buffer) error {
	if x.N < t*k || w.N != n*k || y.N < t*n || (bias != nil && bias.N != n) {
		return fmt.Errorf("gpu: MatMul: inconsistent sizes")
	}
	return check("gemm", C.agl_gpu_gemm(d.blas, x.f(), C.int64_t(t), C.int64_t(k), w.f(), C.int64_t(n), optional(bias), y.f()))
}

// RMSNorm normalizes rows of w.N values (y may be x).
func (d *Device) RMSNorm(y, x, w *Buffer, eps float32) error {
	if w.N == 0 || x.N%w.N != 0 || y.N != x.N {
		return fmt.Errorf("gpu: RMSNorm: inconsistent sizes")
	}
	return check("rmsnorm", C.agl_gpu_rmsnorm(x.f(), w.f(), y.f(), C.int64_t(x.N/w.N), C.int64_t(w.N), C.float(eps)))
}

// RoPE rotates heads of hd in each of pos.N rows of x (row stride stride).
func (d *Device) RoPE(x *Buffer, stride, heads, hd int, pos, invFreq *Buffer) error {
	if invFreq.N != hd/2 || x.N < pos.N*stride {
		return fmt.Errorf("gpu: RoPE: inconsistent sizes")
	}
	return check("rope", C.agl_gpu_rope(x.f(), C.int64_t(pos.N), C.int64_t(heads), C.int64_t(hd), C.int64_t(stride), pos.i(), invFreq.f()))
}

// SwiGLU computes out[t][j] = silu(gu[t][j])·gu[t][inter+j].
func (d *Device) SwiGLU(out, gu *Buffer, t, inter int) error {
	if gu.N < 2*t*inter || out.N < t*inter {
		return fmt.Errorf("gpu: SwiGLU: inconsistent sizes")
	}
	return check("swiglu", C.agl_gpu_swiglu(gu.f(), C.int64_t(t), C.int64_t(inter), out.f()))
}

// Add computes x += y.
func (d *Device) Add(x, y *Buffer) error {
	if x.N != y.N {
		return fmt.Errorf("gpu: Add: inconsistent sizes")
	}
	return check("add", C.agl_gpu_add(x.f(), y.f(), C.int64_t(x.N)))
}

// Embed gathers rows of table (h wide) for ids into out.
func (d *Device) Embed(out, table, ids *Buffer, h int) error {
	if out.N < ids.N*h {
		return fmt.Errorf("gpu: Embed: inconsistent sizes")
	}
	return check("embed", C.agl_gpu_embed(table.f(), ids.i(), C.int64_t(ids.N), C.int64_t(h), out.f()))
}

// StoreKV writes rows of k and v (width values each) to cache slots.
func (d *Device) StoreKV(kc, vc, k, v, slots *Buffer, width int) error {
	return check("kv_store", C.agl_gpu_kv_store(k.f(), v.f(), slots.i(), C.int64_t(slots.N), C.int64_t(width), kc.f(), vc.f()))
}

// Attention is the device version of kernels.Attention.
type Attention struct {
	Heads, KVHeads, HeadDim, BlockSize int
	Scale                              float32
	K, V                               *Buffer
	Pos, TableOff, Tables              *Buffer // int32
	Scratch                            *Buffer // ≥ len(Pos)*Heads*MaxContext floats
	MaxContext                         int
}

// Attend computes causal paged attention for Pos.N tokens.
func (d *Device) Attend(out, q *Buffer, a *Attention) error {
	t := a.Pos.N
	if a.KVHeads <= 0 || a.Heads%a.KVHeads != 0 || a.Scratch.N < t*a.Heads*a.MaxContext {
		return fmt.Errorf("gpu: Attend: inconsistent sizes")
	}
	return check("attention", C.agl_gpu_attention(q.f(), C.int64_t(t), C.int64_t(a.Heads), C.int64_t(a.KVHeads), C.int64_t(a.HeadDim),
		a.K.f(), a.V.f(), a.Pos.i(), a.TableOff.i(), a.Tables.i(), C.int64_t(a.BlockSize), C.float(a.Scale), out.f(), a.Scratch.f(), C.int64_t(a.MaxContext)))
}
