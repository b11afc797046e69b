package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func levels(t *testing.T) []*CPU {
	var out []*CPU
	for l := Generic; l <= Detect(); l++ {
		for _, th := range []int{1, 2, 3} {
			c, err := NewCPU(th).WithLevel(l)
			require.NoError(t, err)
			out = append(out, c)
		}
	}
	return out
}

// TestMatMul checks every level against a float64 reference, and that all
// levels, thread counts and batch sizes give bitwise-identical rows.
func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, sz := range []struct{ t, n, k int }{
		{1, 1, 1}, {1, 16, 16}, {3, 17, 5}, {13, 33, 300}, {1, 100, 513}, {25, 64, 257}, {12, 48, 0},
		// many panel groups: several chunks per thread and a short last chunk
		{2, 1003, 33}, {7, 1000, 40},
	} {
		t.Run(fmt.Sprintf("t%d_n%d_k%d", sz.t, sz.n, sz.k), func(t *testing.T) {
			x := randSlice(r, sz.t*sz.k)
			w := randSlice(r, sz.n*sz.k)
			bias := randSlice(r, sz.n)
			var first []float32
			for _, c := range levels(t) {
				p := c.Pack(w, sz.n, sz.k)
				y := make([]float32, sz.t*sz.n)
				c.MatMul(y, x, sz.t, p, bias)
				for i := 0; i < sz.t; i++ {
					for j := 0; j < sz.n; j++ {
						ref := float64(bias[j])
						var mag float64
						for k := 0; k < sz.k; k++ {
							ref += float64(x[i*sz.k+k]) * float64(w[j*sz.k+k])
							mag += math.Abs(float64(x[i*sz.k+k]) * float64(w[j*sz.k+k]))
						}
						require.InDelta(t, ref, float64(y[i*sz.n+j]), 1e-5*(mag+1), "level %v row %d col %d", c.Level(), i, j)
					}
				}
				if first == nil {
					first = y
				} else {
					require.Equal(t, first, y, "level %v threads %d differs", c.Level(), c.Threads())
				}
				// Each row alone gives the same bits as in the batch.
				for i := 0; i < sz.t; i++ {
					yi := make([]float32, sz.n)
					c.MatMul(yi, x[i*sz.k:(i+1)*sz.k], 1, p, bias)
					require.Equal(t, y[i*sz.n:(i+1)*sz.n], yi)
				}
			}
		})
	}
}

func TestRMSNormSwiGLUAdd(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range levels(t) {
		x := randSlice(r, 3*37)
		w := randSlice(r, 37)
		y := make([]float32, len(x))
		c.RMSNorm(y, x, w, 1e-6)
		for row := 0; row < 3; row++ {
			var ss float64
			for _, v := range x[row*37 : (row+1)*37] {
				ss += float64(v) * float64(v)
			}
			inv := 1 / math.Sqrt(ss/37+1e-6)
			for i := 0; i < 37; i++ {
				require.InDelta(t, float64(w[i])*float64(x[row*37+i])*inv, float64(y[row*37+i]), 1e-5)
			}
		}
		gu := randSlice(r, 2*2*5)
		out := make([]float32, 2*5)
		c.SwiGLU(out, gu, 2, 5)
		for i := 0; i < 2; i++ {
			for j := 0; j < 5; j++ {
				g, u := float64(gu[i*10+j]), float64(gu[i*10+5+j])
				require.InDelta(t, g/(1+math.Exp(-g))*u, float64(out[i*5+j]), 1e-6)
			}
		}
		a, b := []float32{1, 2}, []float32{0.5, -3}
		c.Add(a, b)
		require.Equal(t, []float32{1.5, -1}, a)
	}
}

func TestRoPE(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const hd, heads, stride = 8, 2, 20
	x := randSlice(r, 3*stride)
	orig := append([]float32(nil), x...)
	inv := []float32{1, 0.1, 0.01, 0.001}
	pos := []int32{0, 5, 1000}
	NewCPU(1).RoPE(x, stride, heads, hd, pos, inv)
	for i, p := range pos {
		for h := 0; h < heads; h++ {
			for j := 0; j < hd/2; j++ {
				a, b := float64(orig[i*stride+h*hd+j]), float64(orig[i*stride+h*hd+j+hd/2])
				ang := float64(float32(p) * inv[j])
				require.InDelta(t, a*math.Cos(ang)-b*math.Sin(ang), float64(x[i*stride+h*hd+j]), 1e-5)
				require.InDelta(t, b*math.Cos(ang)+a*math.Sin(ang), float64(x[i*stride+h*hd+j+hd/2]), 1e-5)
			}
		}
		// columns past heads*hd are untouched
		require.Equal(t, orig[i*stride+heads*hd:(i+1)*stride], x[i*stride+heads*hd:(i+1)*stride])
	}
}

// TestAttention compares paged attention with a dense float64 reference,
// using scrambled block tables. Head sizes that are multiples of 16 take the
// AVX-512 path (16 positions at a time, including partial last groups and
// groups that straddle cache blocks); 24 takes the scalar one.
func TestAttention(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ heads, kvHeads, hd, bs, n int }{
		{4, 2, 24, 4, 11}, {4, 2, 16, 4, 11}, {2, 1, 32, 5, 37}, {2, 2, 64, 16, 40}, {4, 1, 128, 3, 17}, {1, 1, 256, 16, 3},
	} {
		heads, kvHeads, hd, bs, n := tc.heads, tc.kvHeads, tc.hd, tc.bs, tc.n
		nb := (n + bs - 1) / bs
		table := r.Perm(nb + 3)[:nb]
		tab32 := make([]int32, nb)
		for i, b := range table {
			tab32[i] = int32(b)
		}
		slots := (nb + 3) * bs
		kc := randSlice(r, slots*kvHeads*hd)
		vc := randSlice(r, slots*kvHeads*hd)
		q := randSlice(r, n*heads*hd)
		for i := range q {
			q[i] *= 4 // peaked softmaxes too
		}
		pos := make([]int32, n)
		off := make([]int32, n)
		for i := range pos {
			pos[i] = int32(i)
		}
		scale := float32(1 / math.Sqrt(float64(hd)))
		for _, c := range levels(t) {
			out := make([]float32, n*heads*hd)
			c.Attend(out, q, &Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: scale,
				K: kc, V: vc, Pos: pos, TableOff: off, Tables: tab32})
			for i := 0; i < n; i++ {
				for h := 0; h < heads; h++ {
					want := attendFloat64(q[(i*heads+h)*hd:(i*heads+h+1)*hd], kc, vc, tab32, bs, i+1, kvHeads, h/(heads/kvHeads), scale)
					for d := 0; d < hd; d++ {
						require.InDelta(t, want[d], float64(out[(i*heads+h)*hd+d]), 1e-5, "%+v level %v tok %d head %d", tc, c.Level(), i, h)
					}
				}
			}
		}
	}
}

func BenchmarkMatMul(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, sz := range []struct{ t, n, k int }{{1, 2048, 768}, {32, 2048, 768}, {256, 2048, 768}} {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("t%d_n%d_k%d_th%d", sz.t, sz.n, sz.k, th), func(b *testing.B) {
				c := NewCPU(th)
				p := c.Pack(randSlice(r, sz.n*sz.k), sz.n, sz.k)
				x := randSlice(r, sz.t*sz.k)
				y := make([]float32, sz.t*sz.n)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c.MatMul(y, x, sz.t, p, nil)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*float64(sz.t*sz.n*sz.k)/sec/1e9, "GFLOP/s")
				b.ReportMetric(float64(4*sz.n*sz.k)/sec/1e9, "wGB/s")
			})
		}
	}
}

// TestRowOpsThreadInvariant: row-wise ops split over threads (large
// inputs) give the same bits as on one thread.
func TestRowOpsThreadInvariant(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	one, two := NewCPU(1), NewCPU(2)
	const rows, d = 300, 128
	x, w := randSlice(r, rows*d), randSlice(r, d)
	y1, y2 := make([]float32, rows*d), make([]float32, rows*d)
	one.RMSNorm(y1, x, w, 1e-5)
	two.RMSNorm(y2, x, w, 1e-5)
	require.Equal(t, y1, y2)

	pos := make([]int32, rows)
	for i := range pos {
		pos[i] = int32(r.IntN(4000))
	}
	inv := randSlice(r, 16)
	a, b := append([]float32(nil), x...), append([]float32(nil), x...)
	one.RoPE(a, d, 4, 32, pos, inv)
	two.RoPE(b, d, 4, 32, pos, inv)
	require.Equal(t, a, b)
	require.NotEqual(t, x, a)

	gu := randSlice(r, rows*2*d)
	s1, s2 := make([]float32, rows*d), make([]float32, rows*d)
	one.SwiGLU(s1, gu, rows, d)
	two.SwiGLU(s2, gu, rows, d)
	require.Equal(t, s1, s2)
	require.InDelta(t, float64(gu[5])/(1+math.Exp(-float64(gu[5])))*float64(gu[d+5]), float64(s1[5]), 1e-6)
}

// BenchmarkAttention: 12 heads of 64 over a paged cache (blocks of 16) for
// a prefill of 512 tokens and for a decode step of 32 sequences at
// position 79, at every level (avx2 runs the scalar-score path the AVX-512
// one replaced, as a side-by-side reference). One thread.
func BenchmarkAttention(b *testing.B) {
	const heads, hd, bs = 12, 64, 16
	r := rand.New(rand.NewPCG(5, 6))
	for _, sh := range []struct {
		name     string
		seqs, n  int // sequences; tokens of each in the cache
		lastOnly bool
	}{{"prefill512", 1, 512, false}, {"decode32x80", 32, 80, true}} {
		nb := (sh.n + bs - 1) / bs
		slots := sh.seqs * nb * bs
		kc, vc := randSlice(r, slots*heads*hd), randSlice(r, slots*heads*hd)
		var pos, off, tables []int32
		for s := 0; s < sh.seqs; s++ {
			base := int32(len(tables))
			for j := 0; j < nb; j++ {
				tables = append(tables, int32(s*nb+j))
			}
			first := 0
			if sh.lastOnly {
				first = sh.n - 1
			}
			for p := first; p < sh.n; p++ {
				pos = append(pos, int32(p))
				off = append(off, base)
			}
		}
		q := randSlice(r, len(pos)*heads*hd)
		out := make([]float32, len(q))
		a := &Attention{Heads: heads, KVHeads: heads, HeadDim: hd, BlockSize: bs, Scale: 0.125, K: kc, V: vc,
			Pos: pos, TableOff: off, Tables: tables}
		for l := AVX2; l <= Detect(); l++ {
			c, err := NewCPU(1).WithLevel(l)
			require.NoError(b, err)
			b.Run(fmt.Sprintf("%s/%v", sh.name, l), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					c.Attend(out, q, a)
				}
				var scores float64
				for _, p := range pos {
					scores += float64(p+1) * heads
				}
				b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/scores*1e9, "ns/score")
			})
		}
	}
}

// BenchmarkMatMulStream: the decode shapes of the 156M Llama at 32 rows,
// cycling over enough distinct weight matrices (≥ 256 MB) that every call
// streams its weights from memory, as in a decode step.
func BenchmarkMatMulStream(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, sz := range []struct{ t, n, k int }{{32, 2304, 768}, {32, 768, 768}, {32, 5632, 768}, {32, 768, 2816}} {
		mats := max(2, (256<<20)/(4*sz.n*sz.k))
		ws := make([]*Packed, mats)
		c := NewCPU(1)
		for i := range ws {
			ws[i] = c.Pack(randSlice(r, sz.n*sz.k), sz.n, sz.k)
		}
		x := randSlice(r, sz.t*sz.k)
		y := make([]float32, sz.t*sz.n)
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("t%d_n%d_k%d_th%d", sz.t, sz.n, sz.k, th), func(b *testing.B) {
				c := NewCPU(th)
				for i := 0; i < b.N; i++ {
					c.MatMul(y, x, sz.t, ws[i%mats], nil)
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(2*float64(sz.t*sz.n*sz.k)/sec/1e9, "GFLOP/s")
			})
		}
	}
}
