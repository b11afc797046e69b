package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// partTokens are the token counts the parted matrices are checked at:
// the decode rows paths (1–8), the tiles (9–47) and the many-token path at
// AVX512BF16 (48 on), each around its edges.
var partTokens = []int{1, 2, 3, 5, 8, 9, 17, 47, 48, 49, 64, 100}

// splitPartRows cuts data (rows of k) into parts of the given row counts.
func splitPartRows(data []uint16, k int, rows []int) [][]uint16 {
	var parts [][]uint16
	at := 0
	for _, r := range rows {
		parts = append(parts, data[at*k:(at+r)*k:(at+r)*k])
		at += r
	}
	return parts
}

// partsSentinel is a NaN that no product writes: outputs and the slack past
// them start as it, so a row not written (or written twice in the wrong
// place) shows in the bits.
var partsSentinel = math.Float32frombits(0x7fc0dead)

func partsFilled(n int) []float32 {
	y := make([]float32, n)
	for i := range y {
		y[i] = partsSentinel
	}
	return y
}

// checkPartedMatMul multiplies the contiguous matrix whole and as parts at
// every level, thread count and token count in partTokens, with and
// without bias, and requires the same bits, y's slack past t·N untouched.
func checkPartedMatMul(t *testing.T, r *rand.Rand, whole, parted *BF16) {
	t.Helper()
	n, k := whole.N, whole.K
	require.Equal(t, n, parted.N)
	require.Equal(t, k, parted.K)
	maxT := partTokens[len(partTokens)-1]
	x := randSlice(r, maxT*k)
	bias := randSlice(r, n)
	const slack = 7
	for _, c := range bf16Levels(t) {
		for _, tt := range partTokens {
			for _, b := range [][]float32{nil, bias} {
				want, got := partsFilled(tt*n+slack), partsFilled(tt*n+slack)
				c.MatMulBF16(want, x[:tt*k], tt, whole, b)
				c.MatMulBF16(got, x[:tt*k], tt, parted, b)
				requireSameBits(t, want, got, fmt.Sprintf("level %v threads %d t=%d bias %v", c.Level(), c.Threads(), tt, b != nil))
				for i, v := range got[tt*n:] {
					require.Equalf(t, math.Float32bits(partsSentinel), math.Float32bits(v), "level %v threads %d t=%d: slack %d written",
						c.Level(), c.Threads(), tt, i)
				}
				for i, v := range got[:tt*n] {
					if math.Float32bits(v) == math.Float32bits(partsSentinel) {
						require.Failf(t, "output not written", "level %v threads %d t=%d: element %d", c.Level(), c.Threads(), tt, i)
					}
				}
			}
		}
	}
}

// checkPartedReads requires Row, RowFloat32 and Bytes of the parted matrix
// to match the contiguous one.
func checkPartedReads(t *testing.T, whole, parted *BF16) {
	t.Helper()
	require.Equal(t, whole.Bytes(), parted.Bytes())
	require.Equal(t, int64(2*whole.N*whole.K), parted.Bytes())
	a, b := make([]float32, whole.K), make([]float32, whole.K)
	for i := 0; i < whole.N; i++ {
		require.Equalf(t, whole.Row(i), parted.Row(i), "row %d", i)
		whole.RowFloat32(a, i)
		parted.RowFloat32(b, i)
		requireSameBits(t, a, b, fmt.Sprintf("row %d widened", i))
	}
}

// TestBF16Parts checks that a matrix made of row blocks reads and
// multiplies exactly as the same rows in one block, for splits at and off
// every tile, group and panel boundary (8-row work items, 16-row groups,
// 80-row panels), parts of one row, an empty part and q|k|v-like parts.
func TestBF16Parts(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, sz := range []struct {
		k    int
		rows []int
	}{
		{64, []int{37}},                  // one part
		{100, []int{3, 5}},               // uneven, below one work item
		{33, []int{1, 7, 9, 1}},          // parts of one row, odd k
		{96, []int{13, 29, 6, 47}},       // no part a multiple of 8 or 16
		{257, []int{16, 0, 8, 80, 17}},   // on the boundaries, an empty part
		{96, []int{128, 64, 64}},         // q|k|v at 1/16 of Qwen3-0.6B
		{40, []int{81, 79, 1, 160}},      // around a panel
		{1024, []int{20, 12, 12}},        // whole chunks, small q|k|v
		{31, []int{2, 1, 1, 2, 1, 3, 5}}, // k below one chunk, many parts
	} {
		n := 0
		for _, rr := range sz.rows {
			n += rr
		}
		t.Run(fmt.Sprintf("k%d_rows%v", sz.k, sz.rows), func(t *testing.T) {
			whole := &BF16{N: n, K: sz.k, Data: randBF16(r, n*sz.k)}
			parted := NewBF16Parts(sz.k, splitPartRows(whole.Data, sz.k, sz.rows)...)
			require.True(t, parted.Parted())
			require.False(t, whole.Parted())
			require.Nil(t, parted.Data)
			checkPartedReads(t, whole, parted)
			checkPartedMatMul(t, r, whole, parted)

			parted.Own()
			require.False(t, parted.Parted())
			require.Equal(t, whole.Data, parted.Data)
			checkPartedReads(t, whole, parted)
			// Owned: its own memory, writable without touching the parts.
			parted.Data[0] ^= 0x8000
			require.NotEqual(t, whole.Data[0], parted.Data[0])
		})
	}
}

func TestBF16PartsEdges(t *testing.T) {
	require.PanicsWithValue(t, "kernels: NewBF16Parts: part 1 has 5 values, not whole rows of k=2",
		func() { NewBF16Parts(2, []uint16{1, 2}, []uint16{1, 2, 3, 4, 5}) })
	require.Panics(t, func() { NewBF16Parts(0, []uint16{1}) })
	require.Panics(t, func() { NewBF16Parts(-1) })

	// k = 0 and no parts: a 0×0 matrix that multiplies to nothing.
	for _, w := range []*BF16{NewBF16Parts(0), NewBF16Parts(0, nil, []uint16{}), NewBF16Parts(4), NewBF16Parts(4, nil)} {
		require.Zero(t, w.N)
		require.Zero(t, w.Bytes())
		require.True(t, w.Parted())
		y := []float32{partsSentinel}
		NewCPU(2).MatMulBF16(y, []float32{1, 2, 3, 4}, 1, w, nil)
		require.Equal(t, math.Float32bits(partsSentinel), math.Float32bits(y[0]))
		w.Own()
		require.False(t, w.Parted())
		require.Zero(t, w.N)
	}

	w := NewBF16Parts(3, []uint16{1, 2, 3}, []uint16{4, 5, 6, 7, 8, 9})
	require.Equal(t, 3, w.N)
	require.Equal(t, []uint16{7, 8, 9}, w.Row(2))
	require.Panics(t, func() { w.Row(3) })
	require.Panics(t, func() { w.Row(-1) })
	require.Panics(t, func() { w.RowFloat32(make([]float32, 3), 3) })

	// A parted matrix whose fields no longer match its parts is refused,
	// as an owned one whose Data has the wrong length.
	c := NewCPU(1)
	bad := NewBF16Parts(3, []uint16{1, 2, 3}, []uint16{4, 5, 6})
	bad.N = 3
	require.Panics(t, func() { c.MatMulBF16(make([]float32, 3), make([]float32, 3), 1, bad, nil) })
	bad = NewBF16Parts(3, []uint16{1, 2, 3})
	bad.Data = make([]uint16, 3)
	require.Panics(t, func() { c.MatMulBF16(make([]float32, 1), make([]float32, 3), 1, bad, nil) })

	// Own of an owned matrix keeps its Data.
	o := NewBF16(2, 2)
	d := &o.Data[0]
	o.Own()
	require.Same(t, d, &o.Data[0])
}

// BenchmarkMatMulBF16Parts runs a q|k|v-shaped product (Qwen3-0.6B:
// 2048+1024+1024 rows × 1024) on one thread at the best level, the
// matrix contiguous and as three parts, at decode (1 token) and prefill
// (64) sizes.
func BenchmarkMatMulBF16Parts(b *testing.B) {
	const k = 1024
	rows := []int{2048, 1024, 1024}
	n := 4096
	r := rand.New(rand.NewPCG(1, 1))
	whole := &BF16{N: n, K: k, Data: randBF16(r, n*k)}
	var parts [][]uint16
	for _, p := range splitPartRows(whole.Data, k, rows) {
		parts = append(parts, append([]uint16(nil), p...)) // apart in memory, as tensors are
	}
	parted := NewBF16Parts(k, parts...)
	c := NewCPU(1)
	for _, tt := range []int{1, 64} {
		x := randSlice(r, tt*k)
		y := make([]float32, tt*n)
		for _, m := range []struct {
			name string
			w    *BF16
		}{{"contiguous", whole}, {"parts", parted}} {
			b.Run(fmt.Sprintf("t%d/%s", tt, m.name), func(b *testing.B) {
				b.SetBytes(m.w.Bytes())
				for b.Loop() {
					c.MatMulBF16(y, x, tt, m.w, nil)
				}
			})
		}
	}
}
