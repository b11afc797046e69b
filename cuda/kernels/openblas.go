//go:build openblas

package kernels

/*
#cgo LDFLAGS: -lopenblas
#include <cblas.h>
void openblas_set_num_threads(int);
*/
import "C"

// openBLASMatMul computes y[t][n] = Σ_k x[t][k]·w[n][k] with OpenBLAS's
// SGEMM on threads threads: the peer the GEMM kernel is measured against
// (build tag openblas; the library is never linked otherwise).
func openBLASMatMul(threads int, y, x []float32, t int, w []float32, n, k int) {
	C.openblas_set_num_threads(C.int(threads))
	C.cblas_sgemm(C.CblasRowMajor, C.CblasNoTrans, C.CblasTrans, C.blasint(t), C.blasint(n), C.blasint(k), 1,
		fptr(x), C.blasint(k), fptr(w), C.blasint(k), 0, fptr(y), C.blasint(n))
}
