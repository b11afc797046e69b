package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// halfValue is the exact value of an IEEE half, written from the format's
// definition independently of the C code.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	switch {
	case e == 0:
		return sign * math.Ldexp(m, -24)
	case e == 31 && m == 0:
		return sign * math.Inf(1)
	case e == 31:
		return math.NaN()
	}
	return sign * math.Ldexp(1024+m, e-25)
}

// halfOf rounds to the nearest half, ties to the even encoding, by search
// over the table of every finite half (independent of the C bit tricks).
func halfOf(f float32) uint16 {
	if f != f {
		return 0x7e00
	}
	a := math.Abs(float64(f))
	var sign uint16
	if math.Signbit(float64(f)) {
		sign = 0x8000
	}
	if a >= 65520 {
		return sign | 0x7c00
	}
	i := sort.Search(0x7c00, func(i int) bool { return halfValue(uint16(i)) > a }) - 1 // v[i] ≤ a < v[i+1]
	lo, hi := halfValue(uint16(i)), halfValue(uint16(i+1))
	switch {
	case a-lo < hi-a:
		return sign | uint16(i)
	case a-lo > hi-a:
		return sign | uint16(i+1)
	case i%2 == 0:
		return sign | uint16(i)
	}
	return sign | uint16(i+1)
}

// TestF16 checks the scale conversions: every half widens to its value,
// and float32s (random, halfway cases, boundaries) round to nearest even.
func TestF16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		v := halfValue(uint16(h))
		if v != v {
			require.True(t, math.IsNaN(float64(F16ToF32(uint16(h)))), "%04x", h)
			continue
		}
		require.Equal(t, float32(v), F16ToF32(uint16(h)), "%04x", h)
	}
	r := rand.New(rand.NewPCG(3, 4))
	cases := []float32{0, 1, -1, 65504, 65519.99, 65520, 1e9, float32(math.Inf(-1)), 6.103515625e-05, 5.960464477539063e-08,
		2.9802322387695312e-08, 2.98023259e-08, 8.940697e-08, 1.0009765625 + 0.00048828125/2, 1 + 3*0.00048828125}
	for i := 0; i < 20000; i++ {
		cases = append(cases, float32(r.NormFloat64()*math.Pow(2, float64(r.IntN(40)-25))))
	}
	for i := uint16(0); i < 0x7c00; i += 7 { // halfway between neighbours
		cases = append(cases, float32((halfValue(i)+halfValue(i+1))/2))
	}
	for _, f := range cases {
		require.Equal(t, halfOf(f), F32ToF16(f), "%g", f)
	}
	require.True(t, math.IsNaN(float64(F16ToF32(F32ToF16(float32(math.NaN()))))))
}

// q8Ref quantizes one block as ggml-quants.c quantize_row_q8_0_ref does
// (float32 arithmetic, roundf), written in Go.
func q8Ref(x []float32) (uint16, []int8) {
	var amax float32
	for _, v := range x {
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	d := amax / 127
	var id float32
	if d != 0 {
		id = 1 / d
	}
	q := make([]int8, len(x))
	for i, v := range x {
		q[i] = int8(math.Round(float64(v * id)))
	}
	return halfOf(d), q
}

// TestQ8Quantize checks the stored values against the reference
// quantizer, block by block, for a shape with a partial last block and a
// partial last panel, written by several disjoint QuantizeRows calls.
func TestQ8Quantize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, k = 37, 70
	src := make([]float32, n*k)
	for i := range src {
		src[i] = float32(r.NormFloat64() * 0.05)
	}
	src[3] = 0 // a block of any values with a zero
	for i := 2 * k; i < 2*k+32; i++ {
		src[i] = 0 // an all-zero block: d = 0, q = 0
	}
	w := NewQ8(n, k)
	for _, rr := range [][2]int{{0, 16}, {16, 33}, {33, 37}} {
		w.QuantizeRows(rr[0], src[rr[0]*k:rr[1]*k], rr[1]-rr[0])
	}
	for i := 0; i < n; i++ {
		row := w.RowQ8_0(nil, i)
		require.Len(t, row, w.Blocks()*34)
		deq := make([]float32, k)
		w.RowFloat32(deq, i)
		for b := 0; b < w.Blocks(); b++ {
			blk := make([]float32, Q8BlockSize)
			copy(blk, src[i*k+b*32:min(i*k+b*32+32, (i+1)*k)])
			d, q := q8Ref(blk)
			require.Equal(t, d, uint16(row[34*b])|uint16(row[34*b+1])<<8, "row %d block %d scale", i, b)
			for c := 0; c < Q8BlockSize; c++ {
				require.Equal(t, q[c], int8(row[34*b+2+c]), "row %d block %d value %d", i, b, c)
				if col := b*32 + c; col < k {
					require.Equal(t, float32(q[c])*F16ToF32(d), deq[col], "row %d col %d", i, col)
				}
			}
		}
	}
}

// generateData is llama.cpp's synthetic test data:
// ggml-org/llama.cpp:tests/test-quantize-fns.cpp:generate_data.
func generateData(offset float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(0.1 + 2*math.Cos(float64(float32(i)+offset)))
	}
	return out
}

// TestQ8LlamaCppBounds ports llama.cpp's Q8_0 checks
// (ggml-org/llama.cpp:tests/test-quantize-fns.cpp: total_quantization_error
// < MAX_QUANTIZATION_TOTAL_ERROR = 0.002 and dot_product_error <
// MAX_DOT_PRODUCT_ERROR = 0.02 on 32·128 values of generate_data(0) and
// generate_data(1), errors divided by the size as there) at every path.
func TestQ8LlamaCppBounds(t *testing.T) {
	const size = 32 * 128
	x1, x2 := generateData(0, size), generateData(1, size)
	w := NewQ8(1, size)
	w.QuantizeRows(0, x1, 1)
	deq := make([]float32, size)
	w.RowFloat32(deq, 0)
	var sum float64
	for i := range x1 {
		d := float64(x1[i]) - float64(deq[i])
		sum += d * d
	}
	rmse := float32(math.Sqrt(sum)) / size
	require.Less(t, rmse, float32(0.002))
	var ref float64
	for i := range x1 {
		ref += float64(x1[i]) * float64(x2[i])
	}
	for _, p := range q8Paths(t) {
		y := make([]float32, 1)
		NewCPU(1).matMulQ8(p, y, x2, 1, w, nil)
		e := math.Abs(float64(y[0])-ref) / size
		require.Less(t, e, 0.02, "path %d", p)
		t.Logf("path %d: rmse %.2g, dot error %.2g", p, rmse, e)
	}
}

// q8Paths lists the int8 kernel paths this CPU can run.
func q8Paths(t *testing.T) []int {
	paths := []int{q8Generic}
	if hasF16C {
		paths = append(paths, q8AVX2)
	} else {
		t.Logf("no AVX2+F16C: AVX2 int8 path not run")
	}
	if hasVNNI && Detect() >= AVX512 {
		paths = append(paths, q8VNNI)
	} else {
		t.Logf("no AVX-512 VNNI: vpdpbusd path not run")
	}
	return paths
}

// q8ActRef quantizes one token's activations as the kernels document:
// per block dx = max|x|/127, xq = nearest-even(x·(127/max|x|)).
func q8ActRef(x []float32, nb int) ([]int8, []float32) {
	xq := make([]int8, nb*32)
	dx := make([]float32, nb)
	for b := 0; b < nb; b++ {
		blk := x[b*32 : min(b*32+32, len(x))]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		for i, v := range blk {
			xq[b*32+i] = int8(math.RoundToEven(float64(v * id)))
		}
		dx[b] = amax / 127
	}
	return xq, dx
}

// TestMatMulQ8 checks every path against a float64 reference computed from
// the same quantized weights and activations (only the float32
// accumulation of the block sums differs), and that paths, thread counts,
// batch sizes and each token alone give bitwise-identical results.
func TestMatMulQ8(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sh := range []struct{ n, k, tok int }{{1, 1, 1}, {16, 32, 1}, {37, 70, 5}, {130, 256, 1}, {67, 96, 13}, {200, 1024, 2}, {45, 300, 70}} {
		t.Run(fmt.Sprintf("n%d_k%d_t%d", sh.n, sh.k, sh.tok), func(t *testing.T) {
			wf := make([]float32, sh.n*sh.k)
			for i := range wf {
				wf[i] = float32(r.NormFloat64() * 0.05)
			}
			w := NewQ8(sh.n, sh.k)
			w.QuantizeRows(0, wf, sh.n)
			x := make([]float32, sh.tok*sh.k)
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			bias := make([]float32, sh.n)
			for i := range bias {
				bias[i] = float32(r.NormFloat64())
			}
			nb := w.Blocks()
			// float64 reference of the quantized operands
			want := make([]float64, sh.tok*sh.n)
			scale := make([]float64, sh.tok*sh.n) // Σ|terms|: the accumulation error bound's scale
			for j := 0; j < sh.tok; j++ {
				xq, dx := q8ActRef(x[j*sh.k:(j+1)*sh.k], nb)
				for i := 0; i < sh.n; i++ {
					row := w.RowQ8_0(nil, i)
					var s, a float64
					for b := 0; b < nb; b++ {
						var isum int64
						for c := 0; c < 32; c++ {
							isum += int64(int8(row[34*b+2+c])) * int64(xq[b*32+c])
						}
						term := float64(F16ToF32(uint16(row[34*b])|uint16(row[34*b+1])<<8)) * float64(dx[b]) * float64(isum)
						s += term
						a += math.Abs(term)
					}
					want[j*sh.n+i] = s + float64(bias[i])
					scale[j*sh.n+i] = a + math.Abs(float64(bias[i]))
				}
			}
			var first []float32
			for _, p := range q8Paths(t) {
				for _, threads := range []int{1, 3} {
					y := make([]float32, sh.tok*sh.n)
					NewCPU(threads).matMulQ8(p, y, x, sh.tok, w, bias)
					for i, v := range y {
						tol := 4*float64(nb+1)*float64(math.Nextafter32(1, 2)-1)*scale[i] + 1e-30
						require.InDelta(t, want[i], float64(v), tol, "path %d threads %d out %d", p, threads, i)
					}
					if first == nil {
						first = y
					} else {
						require.Equal(t, first, y, "path %d threads %d differs from generic", p, threads)
					}
					// each token alone gives the bits it gets in the batch
					for j := 0; j < sh.tok; j++ {
						one := make([]float32, sh.n)
						NewCPU(threads).matMulQ8(p, one, x[j*sh.k:(j+1)*sh.k], 1, w, bias)
						require.Equal(t, y[j*sh.n:(j+1)*sh.n], one, "path %d token %d alone", p, j)
					}
				}
			}
		})
	}
}

// TestMatMulQ8NaN: a NaN activation makes the outputs it touches NaN (a
// quantized block must not hide it), at every path.
func TestMatMulQ8NaN(t *testing.T) {
	w := NewQ8(20, 64)
	wf := make([]float32, 20*64)
	for i := range wf {
		wf[i] = float32(i%7) - 3
	}
	w.QuantizeRows(0, wf, 20)
	x := make([]float32, 2*64)
	for i := range x {
		x[i] = 1
	}
	x[64+40] = float32(math.NaN())
	for _, p := range q8Paths(t) {
		y := make([]float32, 2*20)
		NewCPU(1).matMulQ8(p, y, x, 2, w, nil)
		for i := 0; i < 20; i++ {
			require.False(t, math.IsNaN(float64(y[i])), "path %d token 0", p)
			require.True(t, math.IsNaN(float64(y[20+i])), "path %d token 1", p)
		}
	}
}

// BenchmarkMatVec compares one decode-shaped product (t tokens against a
// 6144×1024 matrix: Qwen3-0.6B's gate|up) with fp32, bf16 and int8 weights.
func BenchmarkMatVec(b *testing.B) {
	const n, k = 6144, 1024
	r := rand.New(rand.NewPCG(1, 2))
	wf := make([]float32, n*k)
	for i := range wf {
		wf[i] = float32(r.NormFloat64() * 0.05)
	}
	c := NewCPU(0)
	p := c.Pack(wf, n, k)
	bf := NewBF16(n, k)
	ToBF16(bf.Data, wf)
	q := NewQ8(n, k)
	q.QuantizeRows(0, wf, n)
	for _, tok := range []int{1, 32, 128} {
		x := make([]float32, tok*k)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		y := make([]float32, tok*n)
		b.Run(fmt.Sprintf("fp32_t%d", tok), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.MatMul(y, x, tok, p, nil)
			}
		})
		b.Run(fmt.Sprintf("bf16_t%d", tok), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.MatMulBF16(y, x, tok, bf, nil)
			}
		})
		b.Run(fmt.Sprintf("q8_t%d", tok), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.MatMulQ8(y, x, tok, q, nil)
			}
		})
	}
}

// TestQ8QuantizeTies: with max|w| = 127 the scale is 1, so halfway values
// show the rounding: away from zero, as roundf in quantize_row_q8_0_ref.
func TestQ8QuantizeTies(t *testing.T) {
	src := []float32{127, 0.5, 1.5, -2.5, 126.5, -0.49999997, 0.49999997, -126.5, 2.5000002, -0.5}
	want := []int8{127, 1, 2, -3, 127, 0, 0, -127, 3, -1}
	w := NewQ8(1, len(src))
	w.QuantizeRows(0, src, 1)
	row := w.RowQ8_0(nil, 0)
	require.Equal(t, uint16(0x3c00), uint16(row[0])|uint16(row[1])<<8) // d = 1
	for i, q := range want {
		require.Equal(t, q, int8(row[2+i]), "%g", src[i])
	}
	for i := len(want); i < Q8BlockSize; i++ {
		require.Zero(t, row[2+i], "padding")
	}
}

// TestQ8QuantizeVector: the AVX-512 quantizer writes the scalar one's
// bytes, on random blocks of many magnitudes, exact ties of the rounding,
// zero blocks and blocks with NaN, infinities or subnormals (which it
// leaves to the scalar path).
func TestQ8QuantizeVector(t *testing.T) {
	if Detect() < AVX512 {
		t.Skip("no AVX-512F")
	}
	r := rand.New(rand.NewPCG(9, 10))
	const n, k = 40, 32 * 24
	src := make([]float32, n*k)
	edgeBlocks(src, k, r)
	vec, sc := NewQ8(n, k), NewQ8(n, k)
	vec.quantizeRows(true, 0, src, n)
	sc.quantizeRows(false, 0, src, n)
	require.Equal(t, sc.D, vec.D)
	require.Equal(t, sc.Q, vec.Q)
	row := sc.RowQ8_0(nil, 1)
	for i := 1; i < 32; i++ {
		require.Equal(t, int8(math.Round(float64(i)-15.5)), int8(row[2+i]), "tie %d", i)
	}
}

// TestQ8QuantizeActVector checks the AVX-512 activation quantizer against
// the scalar loop, byte for byte, on blocks of every kind: wide magnitude
// ranges, ties, zeros, NaN and infinities, tiny values whose 127/max
// overflows, and a partial last block.
func TestQ8QuantizeActVector(t *testing.T) {
	if Detect() < AVX512 {
		t.Skip("no AVX-512F")
	}
	r := rand.New(rand.NewPCG(11, 12))
	const tok, k = 9, 32*12 + 7
	nb := (k + 31) / 32
	x := make([]float32, tok*k)
	edgeBlocks(x, k, r)
	x[7*k+4*32+3] = float32(math.Copysign(0, -1))
	run := func(vec bool) ([]int8, []float32, []int32) {
		xq, dx, corr := make([]int8, tok*nb*32), make([]float32, tok*nb), make([]int32, tok*nb)
		quantizeAct(vec, x, tok, k, xq, dx, corr)
		return xq, dx, corr
	}
	sq, sd, sc := run(false)
	vq, vd, vc := run(true)
	require.Equal(t, sq, vq)
	require.Equal(t, len(sd), len(vd))
	for i := range sd { // NaN-aware bitwise comparison
		require.Equal(t, math.Float32bits(sd[i]), math.Float32bits(vd[i]), "dx %d", i)
	}
	require.Equal(t, sc, vc)
	for i := 1; i < 32; i++ { // nearest even, unlike the weights' roundf
		require.Equal(t, int8(math.RoundToEven(float64(i)-15.5)), sq[1*nb*32+i], "tie %d", i)
	}
}

// edgeBlocks fills x (rows of k values: at least 7 rows, k ≥ 4·32) with
// values of widely spread magnitudes drawn from r, then gives six 32-value
// blocks the cases a vector quantizer must round as the scalar loop does:
// ties (block 0 of row 1: max 127, so the scale is 1 and x.5 values round
// away from zero), all zeros (row 2, block 3), NaN (row 3, block 1), +Inf
// (row 4, block 2), −Inf (row 5, block 0), and subnormals whose reciprocal
// scale overflows (row 6, block 0).
func edgeBlocks(x []float32, k int, r *rand.Rand) {
	for i := range x {
		x[i] = float32(r.NormFloat64() * math.Pow(2, float64(r.IntN(60)-30)))
	}
	block := func(row, b int) []float32 { return x[row*k+b*32 : row*k+b*32+32] }
	for i := range block(1, 0) {
		block(1, 0)[i] = float32(i) - 15.5
	}
	block(1, 0)[0] = 127
	clear(block(2, 3))
	block(3, 1)[5] = float32(math.NaN())
	block(4, 2)[7] = float32(math.Inf(1))
	block(5, 0)[2] = float32(math.Inf(-1))
	for i := range block(6, 0) {
		block(6, 0)[i] = float32(i) * 1e-44
	}
}
