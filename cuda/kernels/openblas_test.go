//go:build openblas

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// Run with the OpenBLAS development package installed and the CPU-type
// override the environment may set removed:
//
//	env -u OPENBLAS_CORETYPE go test -tags openblas -run '^$' -bench GEMMPeer -count 5 ./cuda/kernels
//
// It times the engine's GEMM kernel and OpenBLAS SGEMM on the same shapes
// and threads, alternating, so the ratio holds on a noisy machine.

func TestOpenBLASAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const m, n, k = 37, 70, 129
	w, x := randSlice(r, n*k), randSlice(r, m*k)
	c := NewCPU(2)
	got, want := make([]float32, m*n), make([]float32, m*n)
	c.MatMul(got, x, m, c.Pack(w, n, k), nil)
	openBLASMatMul(2, want, x, m, w, n, k)
	require.InDeltaSlice(t, want, got, 1e-4)
}

func BenchmarkGEMMPeer(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sz := range []struct{ t, n, k int }{{512, 5632, 768}, {512, 768, 2816}, {32, 5632, 768}} {
		w, x := randSlice(r, sz.n*sz.k), randSlice(r, sz.t*sz.k)
		y := make([]float32, sz.t*sz.n)
		for _, th := range []int{1, 2} {
			c := NewCPU(th)
			p := c.Pack(w, sz.n, sz.k)
			flop := 2 * float64(sz.t*sz.n*sz.k)
			for _, impl := range []string{"agentrl", "openblas"} {
				b.Run(fmt.Sprintf("%s/t%d_n%d_k%d_th%d", impl, sz.t, sz.n, sz.k, th), func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						if impl == "agentrl" {
							c.MatMul(y, x, sz.t, p, nil)
						} else {
							openBLASMatMul(th, y, x, sz.t, w, sz.n, sz.k)
						}
					}
					b.ReportMetric(flop*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}
