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

// TestMatMulBF16ManyRounding checks the rounding of the activations on the
// many-token path (vectorized, packed with the products' operands) with
// TestBF16Rounding's cases: with the identity as weights every output is
// its activation rounded to bf16 (the products by 1 and the sums with
// zeros are exact), and each token computed alone (the scalar rounding)
// gives the same bits. A value that rounds to infinity or NaN makes every
// other output of its token NaN (0·∞).
func TestMatMulBF16ManyRounding(t *testing.T) {
	finite := []uint32{0x3f800000, 0x3f808000, 0x3f818000, 0x3f808001, 0x80000001, 0xbf808000, 0x00000000,
		0x80000000, 0x477fe000, 0x3f7fffff, 0xc0c08000}
	nonFinite := []uint32{0x7f7fffff, 0xff800000, 0x7fc00001, 0x7f800001, 0x7f7f8000}
	const tt, k = 64, 37 // k: a partial chunk; tt: the many-token path at AVX512BF16
	r := rand.New(rand.NewPCG(7, 8))
	x := randSlice(r, tt*k)
	for i := range x {
		if i%3 == 0 {
			x[i] = math.Float32frombits(finite[(i/3)%len(finite)])
		}
	}
	for j := 0; j < tt; j += 4 {
		x[j*k+j%k] = math.Float32frombits(nonFinite[(j/4)%len(nonFinite)])
	}
	w := NewBF16(k, k)
	for i := 0; i < k; i++ {
		w.Data[i*k+i] = bf16Of(1)
	}
	for _, c := range bf16Levels(t) {
		y := make([]float32, tt*k)
		c.MatMulBF16(y, x, tt, w, nil)
		for j := 0; j < tt; j++ {
			yj := make([]float32, k)
			c.MatMulBF16(yj, x[j*k:(j+1)*k], 1, w, nil)
			for i := range yj {
				require.Equalf(t, math.Float32bits(yj[i]), math.Float32bits(y[j*k+i]), "level %v token %d alone, element %d", c.Level(), j, i)
				if j%4 == 0 && i != j%k {
					require.Truef(t, y[j*k+i] != y[j*k+i], "level %v token %d element %d: %v, want NaN", c.Level(), j, i, y[j*k+i])
					continue
				}
				want := float32(widen(bf16Of(x[j*k+i])))
				if want != want {
					require.Truef(t, y[j*k+i] != y[j*k+i], "level %v token %d element %d: %v, want NaN", c.Level(), j, i, y[j*k+i])
					continue
				}
				if want == 0 { // −0 + 0 (the other lanes) is +0
					want = 0
				}
				require.Equalf(t, math.Float32bits(want), math.Float32bits(y[j*k+i]), "level %v token %d element %d (%08x)",
					c.Level(), j, i, math.Float32bits(x[j*k+i]))
			}
		}
	}
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
		// Enough tokens for the many-token path at AVX512BF16: panels of
		// 80 rows cut short (n not a multiple of 16 or 80), odd k, a last
		// tile of fewer than 5 tokens, k below one chunk, many row ranges.
		{48, 1, 1}, {50, 49, 33}, {57, 100, 77}, {64, 16, 32}, {97, 145, 1024}, {130, 7, 3}, {60, 1003, 40},
	} {
		t.Run(fmt.Sprintf("t%d_n%d_k%d", sz.t, sz.n, sz.k), func(t *testing.T) {
			x := randSlice(r, sz.t*sz.k)
			w := &BF16{N: sz.n, K: sz.k, Data: randBF16(r, sz.n*sz.k)}
			bias := randSlice(r, sz.n)
			if sz.t%2 == 0 { // no bias: a different store in every path
				bias = nil
			}
			biasAt := func(j int) float64 {
				if bias == nil {
					return 0
				}
				return float64(bias[j])
			}
			var first []float32
			for _, c := range bf16Levels(t) {
				y := make([]float32, sz.t*sz.n)
				c.MatMulBF16(y, x, sz.t, w, bias)
				for i := 0; i < sz.t; i++ {
					for j := 0; j < sz.n; j++ {
						ref, mag := biasAt(j), math.Abs(biasAt(j))
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

// BenchmarkMatMulBF16Prefill runs the products of a 512-token prefill at
// the Qwen3-0.6B shapes (q|k|v, o, gate|up, down) on one and two threads
// at the best level.
func BenchmarkMatMulBF16Prefill(b *testing.B) {
	const t = 512
	for _, sz := range []struct {
		name string
		n, k int
	}{{"qkv", 4096, 1024}, {"o", 1024, 2048}, {"gateup", 6144, 1024}, {"down", 1024, 3072}} {
		r := rand.New(rand.NewPCG(1, 1))
		x := randSlice(r, t*sz.k)
		w := &BF16{N: sz.n, K: sz.k, Data: randBF16(r, sz.n*sz.k)}
		y := make([]float32, t*sz.n)
		for _, threads := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s_n%d_k%d/threads%d", sz.name, sz.n, sz.k, threads), func(b *testing.B) {
				c := NewCPU(threads)
				for b.Loop() {
					c.MatMulBF16(y, x, t, w, nil)
				}
				b.ReportMetric(float64(2*t*sz.n*sz.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
