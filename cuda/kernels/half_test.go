package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// bf16Values is n bf16 values as float32: mostly weight-like, with zeros,
// denormals, infinities, NaNs and random bit patterns among them
// (convertSource's BF16 mix, widened).
func bf16Values(r *rand.Rand, n int) []float32 {
	return widenRef(convertSource(r, SourceBF16, n), SourceBF16)
}

// TestMatMulHalf: a matrix held in Half gives the bits the same matrix in
// float32 panels gives, at every level, thread count, batch size (the
// decode tile, the small tiles and the prefill tiles with their k blocks
// and prefetching), with and without bias, with N not a multiple of 16.
func TestMatMulHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, sz := range []struct{ n, k int }{{1, 1}, {16, 16}, {17, 5}, {33, 300}, {100, 513}, {64, 2100}, {1003, 33}, {48, 0}} {
		w := bf16Values(r, sz.n*sz.k)
		bias := randSlice(r, sz.n)
		for _, tok := range []int{1, 2, 5, 6, 7, 13, 25, 40} {
			x := randSlice(r, tok*sz.k)
			for _, c := range levels(t) {
				half, full := NewPackedHalf(sz.n, sz.k), NewPacked(sz.n, sz.k)
				c.PackRows(half, 0, w, sz.n)
				c.PackRows(full, 0, w, sz.n)
				require.NotNil(t, half.Half, "bf16 values stay in Half")
				require.Nil(t, half.Data)
				for _, b := range [][]float32{nil, bias} {
					want, got := make([]float32, tok*sz.n), make([]float32, tok*sz.n)
					c.MatMul(want, x, tok, full, b)
					c.MatMul(got, x, tok, half, b)
					requireSameBits(t, want, got, fmt.Sprintf("n=%d k=%d t=%d level %v threads %d bias %v", sz.n, sz.k, tok, c.Level(), c.Threads(), b != nil))
				}
			}
		}
	}
}

// TestPackedHalf: how a matrix comes to be held in Half and leaves it.
func TestPackedHalf(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	c := NewCPU(2)
	const n, k = 37, 45
	w := bf16Values(r, n*k)

	// Pack picks Half for bf16 values, float32 panels otherwise.
	p := c.Pack(w, n, k)
	require.NotNil(t, p.Half)
	require.Len(t, p.Half, 48*k)
	full := randSlice(r, n*k)
	require.NotNil(t, c.Pack(full, n, k).Data)
	require.Nil(t, c.Pack(full, n, k).Half)
	require.True(t, BF16Exact(w))
	require.True(t, BF16Exact(nil))
	require.False(t, BF16Exact([]float32{1, math.Float32frombits(0x3f800001)}))

	// Rows read back from Half are the values packed.
	for i := range n {
		got := make([]float32, k)
		p.RowFloat32(got, i)
		requireSameBits(t, w[i*k:(i+1)*k], got, fmt.Sprintf("row %d", i))
	}

	// PackRowsFrom of BF16 rows into Half is PackRows of their values.
	src := convertSource(r, SourceBF16, 20*k)
	want := c.Pack(w, n, k)
	c.PackRows(want, 9, widenRef(src, SourceBF16), 20)
	for _, vec := range vecModes() {
		got := c.Pack(w, n, k)
		packRowsFrom(vec, got, 9, src, SourceBF16, 20)
		require.Equal(t, want.Half, got.Half, "vec=%v", vec)
	}
	require.PanicsWithValue(t, "kernels: PackRowsFrom: F32 rows into a matrix held in Half (BF16 only; PackRows moves it to Data)", func() {
		c.PackRowsFrom(want, 0, make([]byte, 4*k), SourceF32, 1)
	})

	// A row that is not bf16 values moves the matrix to float32 panels,
	// keeping every other row's values.
	q := c.Pack(w, n, k)
	row := randSlice(r, k)
	c.PackRows(q, 30, row, 1)
	require.Nil(t, q.Half)
	require.NotNil(t, q.Data)
	for i := range n {
		got := make([]float32, k)
		q.RowFloat32(got, i)
		if i == 30 {
			requireSameBits(t, row, got, "the new row")
		} else {
			requireSameBits(t, w[i*k:(i+1)*k], got, fmt.Sprintf("row %d", i))
		}
	}

	// ToFloat32 keeps the values, and products, exactly.
	h := c.Pack(w, n, k)
	x := randSlice(r, 3*k)
	before := make([]float32, 3*n)
	c.MatMul(before, x, 3, h, nil)
	h.ToFloat32()
	require.Nil(t, h.Half)
	after := make([]float32, 3*n)
	c.MatMul(after, x, 3, h, nil)
	requireSameBits(t, before, after, "after ToFloat32")

	// A matrix whose arrays do not match its shape is a programming error.
	bad := &Packed{N: 16, K: 4, Half: make([]uint16, 63)}
	require.PanicsWithValue(t, "kernels: Packed 16×4 holds 0 float32 and 63 bf16 values, want 64 of one", func() {
		c.MatMul(make([]float32, 16), make([]float32, 4), 1, bad, nil)
	})
}

// ExampleNewPackedHalf: a matrix of bf16 values (a bf16 checkpoint's
// weights) computes in float32 from half the bytes.
func ExampleNewPackedHalf() {
	cpu := NewCPU(1)
	w := []float32{1, 2, 0.5, -3} // 2×2, each a bf16 value
	p := cpu.Pack(w, 2, 2)
	y := make([]float32, 2)
	cpu.MatMul(y, []float32{1, 1.0 / 3}, 1, p, nil)
	fmt.Println(p.Half != nil, y)
	// Output: true [1.6666667 -0.5]
}
