package train

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSwiGLUKernels checks every level's SwiGLU (the vector levels use
// their own exp) against float64 math over the whole float range of
// interest, including saturated inputs where a careless exp overflows.
func TestSwiGLUKernels(t *testing.T) {
	var g, u, dout []float32
	for x := -120.0; x <= 120; x += 0.37 {
		g = append(g, float32(x))
	}
	g = append(g, 0, -0, 1e-30, -1e-30, float32(math.MaxFloat32), -float32(math.MaxFloat32))
	for i := range g {
		u = append(u, float32(math.Sin(float64(i))))
		dout = append(dout, float32(math.Cos(float64(i))))
	}
	n := len(g)
	for _, lvl := range levels() {
		t.Run(lvl.String(), func(t *testing.T) {
			out, dg, du := make([]float32, n), make([]float32, n), make([]float32, n)
			cpu{level: lvl, threads: 1}.swiglu(out, dg, du, dout, g, u)
			for i := range g {
				x := float64(g[i])
				s := 1 / (1 + math.Exp(-x))
				want := []float64{x * s * float64(u[i]), float64(dout[i]) * x * s,
					float64(dout[i]) * float64(u[i]) * s * (1 + x*(1-s))}
				for k, got := range []float32{out[i], du[i], dg[i]} {
					if math.IsInf(want[k], 0) || math.Abs(want[k]) > 1e30 {
						continue // ±MaxFloat32 inputs: only finiteness of the rest matters
					}
					require.False(t, math.IsNaN(float64(got)), "g=%v output %d is NaN", g[i], k)
					require.InDelta(t, want[k], float64(got), 2e-6*math.Max(1, math.Abs(want[k])), "g=%v output %d", g[i], k)
				}
			}
		})
	}
}

// requireProduct checks got[r][c] (rows×cols) against base[r][c] (nil: 0)
// + Σ_p a(r,p)·b(p,c) over p < inner, summed in float64.
func requireProduct(t *testing.T, got, base []float32, rows, cols, inner int, a, b func(i, j int) float32,
	tol float64, msg string, args ...any) {
	t.Helper()
	want := make([]float64, rows*cols)
	for i := range min(len(base), len(want)) {
		want[i] = float64(base[i])
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			for p := 0; p < inner; p++ {
				want[r*cols+c] += float64(a(r, p)) * float64(b(p, c))
			}
			require.InDelta(t, want[r*cols+c], got[r*cols+c], tol, "%s [%d][%d]", fmt.Sprintf(msg, args...), r, c)
		}
	}
}

// TestGEMMKernels checks the NT (forward) and strided NN (backward) GEMMs
// against float64 sums on shapes that cross every blocking boundary (tiles
// of 4/6 rows, 16/32 columns, 64-row B blocks, 256-long reduction blocks,
// masked tails) at every level and thread count.
func TestGEMMKernels(t *testing.T) {
	fill := func(n int, seed float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(math.Sin(seed*float64(i+1)) * 0.5)
		}
		return v
	}
	shapes := []struct{ T, N, K int }{{1, 1, 1}, {5, 7, 3}, {13, 130, 17}, {37, 65, 300}, {300, 33, 70}, {7, 16, 1}}
	for _, lvl := range levels() {
		for _, threads := range []int{1, 2} {
			for _, s := range shapes {
				c := cpu{level: lvl, threads: threads}
				x, w, dy := fill(s.T*s.K, 1.3), fill(s.N*s.K, 0.7), fill(s.T*s.N, 2.1)
				tol := 1e-5 * math.Sqrt(float64(max(s.K, s.N, s.T)))
				// forward: y = x·Wᵀ, then accumulate once more
				y := fill(s.T*s.N, 3.3)
				c.gemmNT(y, x, w, s.T, s.N, s.K, false)
				requireProduct(t, y, nil, s.T, s.N, s.K, func(i, k int) float32 { return x[i*s.K+k] },
					func(k, n int) float32 { return w[n*s.K+k] }, tol, "%v %v forward", lvl, s)
				y0 := append([]float32(nil), y...)
				c.gemmNT(y, x, w, s.T, s.N, s.K, true)
				for i := range y {
					require.InDelta(t, 2*y0[i], y[i], tol, "%v %v forward accumulate", lvl, s)
				}
				// dx += dy·W on a non-zero start
				dx := fill(s.T*s.K, 4.1)
				dx0 := append([]float32(nil), dx...)
				c.gemmNNAcc(dx, dy, s.N, 1, w, s.T, s.K, s.N)
				requireProduct(t, dx, dx0, s.T, s.K, s.N, func(i, n int) float32 { return dy[i*s.N+n] },
					func(n, k int) float32 { return w[n*s.K+k] }, tol, "%v %v dx", lvl, s)
				// dW += dyᵀ·x
				dw := fill(s.N*s.K, 5.9)
				dw0 := append([]float32(nil), dw...)
				c.gemmNNAcc(dw, dy, 1, s.N, x, s.N, s.K, s.T)
				requireProduct(t, dw, dw0, s.N, s.K, s.T, func(n, i int) float32 { return dy[i*s.N+n] },
					func(i, k int) float32 { return x[i*s.K+k] }, tol, "%v %v dW", lvl, s)
			}
		}
	}
}
