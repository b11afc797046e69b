package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bf16Of rounds like PyTorch's float32 → bfloat16 (nearest even), written
// independently of the C code.
func bf16Of(f float32) uint16 {
	u := math.Float32bits(f)
	if f != f {
		return uint16(u>>16) | 0x40
	}
	return uint16((u + 0x7fff + (u>>16)&1) >> 16)
}

func widen(h uint16) float64 { return float64(math.Float32frombits(uint32(h) << 16)) }

// TestBF16Rounding checks ToBF16 on values whose rounding is known:
// halfway cases go to even, NaN stays NaN, overflow goes to infinity.
func TestBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1
		{0x3f808000, 0x3f80}, // 1 + 2^-8: halfway, to even (down)
		{0x3f818000, 0x3f82}, // halfway, to even (up)
		{0x3f808001, 0x3f81}, // just above halfway
		{0x7f7fffff, 0x7f80}, // max float rounds to +inf
		{0xff800000, 0xff80}, // -inf
		{0x7fc00001, 0x7fc0}, // NaN stays NaN
		{0x7f800001, 0x7fc0}, // signalling NaN becomes quiet
		{0x80000001, 0x8000}, // tiny negative denormal → -0
	}
	src := make([]float32, len(cases))
	for i, c := range cases {
		src[i] = math.Float32frombits(c.in)
	}
	dst := make([]uint16, len(cases))
	ToBF16(dst, src)
	for i, c := range cases {
		require.Equalf(t, c.want, dst[i], "%08x", c.in)
		if src[i] == src[i] {
			require.Equal(t, c.want, bf16Of(src[i]))
		}
	}
	back := make([]float32, len(dst))
	FromBF16(back, dst)
	require.Equal(t, float32(1), back[0])
}

func randBF16(r *rand.Rand, n int) []uint16 {
	out := make([]uint16, n)
	for i := range out {
		out[i] = bf16Of(float32(r.NormFloat64()))
	}
	return out
}

// bf16Levels forces every level this CPU has, AVX512BF16 (vdpbf16ps)
// included, at several thread counts.
func bf16Levels(t *testing.T) []*CPU {
	cpus := levels(t)
	if Detect() < AVX512BF16 {
		t.Logf("no AVX512_BF16 on this CPU: vdpbf16ps path not run (emulating levels only)")
	}
	return cpus
}

// TestMatMulBF16 checks every level against a float64 reference of the
// same rounded operands (bf16 weights × bf16-rounded activations; only the
// float32 accumulation differs), that all levels, thread counts and batch
// sizes give bitwise-identical results, and that each token alone gives
// the bits it gets in a batch.
func TestMatMulBF16(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, sz := range []struct{ t, n, k int }{
		{1, 1, 1}, {1, 8, 32}, {3, 17, 5}, {2, 9, 64}, {7, 13, 100}, {13, 33, 300}, {1, 100, 513},
		{25, 20, 257}, {12, 48, 0}, {6, 5, 31}, {100, 11, 96}, {1, 1003, 64}, {200, 9, 40},
		{8, 19, 70}, {5, 40, 1024}, {9, 24, 65}, {4, 7, 2048},
		{3, 203, 77}, {8, 150, 96}, {1, 611, 1000},
	} {
		t.Run(fmt.Sprintf("t%d_n%d_k%d", sz.t, sz.n, sz.k), func(t *testing.T) {
			x := randSlice(r, sz.t*sz.k)
			w := &BF16{N: sz.n, K: sz.k, Data: randBF16(r, sz.n*sz.k)}
			bias := randSlice(r, sz.n)
			var first []float32
			for _, c := range bf16Levels(t) {
				y := make([]float32, sz.t*sz.n)
				c.MatMulBF16(y, x, sz.t, w, bias)
				for i := 0; i < sz.t; i++ {
					for j := 0; j < sz.n; j++ {
						ref, mag := float64(bias[j]), math.Abs(float64(bias[j]))
						for k := 0; k < sz.k; k++ {
							p := widen(bf16Of(x[i*sz.k+k])) * widen(w.Data[j*sz.k+k])
							ref += p
							mag += math.Abs(p)
						}
						require.InDelta(t, ref, float64(y[i*sz.n+j]), 1e-6*(mag+1), "level %v token %d row %d", c.Level(), i, j)
					}
				}
				if first == nil {
					first = y
				} else {
					require.Equal(t, first, y, "level %v threads %d differs", c.Level(), c.Threads())
				}
				for i := 0; i < sz.t; i++ {
					yi := make([]float32, sz.n)
					c.MatMulBF16(yi, x[i*sz.k:(i+1)*sz.k], 1, w, bias)
					require.Equal(t, y[i*sz.n:(i+1)*sz.n], yi, "level %v token %d alone", c.Level(), i)
				}
			}
		})
	}
}

// TestMatMulBF16VsFloat32 bounds the error of bf16 compute against the
// float32 kernel on the same (bf16-representable) weights: only the
// activations' rounding to bf16 differs, a relative 2^-9 per product.
func TestMatMulBF16VsFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const tt, n, k = 4, 64, 1024
	x := randSlice(r, tt*k)
	w := &BF16{N: n, K: k, Data: randBF16(r, n*k)}
	wf := make([]float32, n*k)
	FromBF16(wf, w.Data)
	c := NewCPU(2)
	y := make([]float32, tt*n)
	c.MatMulBF16(y, x, tt, w, nil)
	yf := make([]float32, tt*n)
	c.MatMul(yf, x, tt, c.Pack(wf, n, k), nil)
	for i := range y {
		// Rounding errors of k products of N(0,1) values, 2^-9 relative
		// each, random in sign: about 2^-9·sqrt(k) in all; 6σ.
		require.InDelta(t, yf[i], y[i], 6*math.Sqrt(k)/512, "element %d", i)
	}
}

func TestMatMulBF16Shapes(t *testing.T) {
	c := NewCPU(1)
	w := NewBF16(2, 3)
	require.Panics(t, func() { c.MatMulBF16(make([]float32, 2), make([]float32, 2), 1, w, nil) })
	require.Panics(t, func() { c.MatMulBF16(make([]float32, 2), make([]float32, 3), 1, w, make([]float32, 1)) })
	dst := make([]float32, 3)
	w.Data[3], w.Data[5] = bf16Of(2), bf16Of(-0.5)
	w.RowFloat32(dst, 1)
	require.Equal(t, []float32{2, 0, -0.5}, dst)
	require.Panics(t, func() { w.RowFloat32(dst, 2) })
}

func BenchmarkMatMulBF16(b *testing.B) {
	for _, sz := range []struct{ t, n, k int }{{1, 4096, 1024}, {32, 4096, 1024}, {256, 3072, 1024}} {
		b.Run(fmt.Sprintf("t%d_n%d_k%d", sz.t, sz.n, sz.k), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 1))
			x := randSlice(r, sz.t*sz.k)
			w := &BF16{N: sz.n, K: sz.k, Data: randBF16(r, sz.n*sz.k)}
			y := make([]float32, sz.t*sz.n)
			for _, l := range []Level{AVX2, AVX512, AVX512BF16} {
				if l > Detect() {
					continue
				}
				c, _ := NewCPU(1).WithLevel(l)
				b.Run(l.String(), func(b *testing.B) {
					b.SetBytes(int64(2 * len(w.Data)))
					for b.Loop() {
						c.MatMulBF16(y, x, sz.t, w, nil)
					}
					b.ReportMetric(float64(2*sz.t*sz.n*sz.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		})
	}
}
