package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/safetensors"
)

// widenRef is the reference widening, per element in Go: the bf16 shift,
// safetensors.HalfToFloat32 for f16, the bits themselves for f32.
func widenRef(src []byte, s Source) []float32 {
	out := make([]float32, len(src)/s.Size())
	for i := range out {
		switch s {
		case SourceBF16:
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		case SourceF16:
			out[i] = safetensors.HalfToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		default:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	}
	return out
}

// convertSource draws n elements of s: mostly values of a real weight's
// magnitude, with NaNs (quiet and signalling, with payloads), infinities,
// signed zeros, denormals of the source type and huge values mixed in, and
// whole blocks of zeros (the q8 scale 0 case).
func convertSource(r *rand.Rand, s Source, n int) []byte {
	b := make([]byte, n*s.Size())
	put := func(i int, f32bits uint32, h16 uint16) {
		switch s {
		case SourceF32:
			binary.LittleEndian.PutUint32(b[4*i:], f32bits)
		case SourceBF16:
			binary.LittleEndian.PutUint16(b[2*i:], uint16(f32bits>>16))
		default:
			binary.LittleEndian.PutUint16(b[2*i:], h16)
		}
	}
	for i := 0; i < n; i++ {
		if i%96 == 32 { // a zero block (when K is a multiple of 32)
			for j := i; j < min(n, i+32); j++ {
				put(j, 0, 0)
			}
			i += 31
			continue
		}
		v := float32(r.NormFloat64() * 0.05)
		f, h := math.Float32bits(v), uint16(r.Uint32())&0x3fff|uint16(r.IntN(2))<<15 // |h| < 2
		switch r.IntN(40) {
		case 0:
			f, h = 0x7fc00000|r.Uint32()&0x3fffff, 0x7e00|uint16(r.Uint32())&0x1ff // quiet NaN
		case 1:
			f, h = 0x7f800001|r.Uint32()&0x3fffff|0x10000, 0x7c01|uint16(r.Uint32())&0x1ff // signalling NaN
		case 2:
			f, h = 0xff800000, 0xfc00 // -Inf
		case 3:
			f, h = 0x7f800000, 0x7c00
		case 4:
			f, h = 0x80000000, 0x8000 // -0
		case 5:
			f, h = r.Uint32()&0x807fffff|0x10000, uint16(r.Uint32())&0x83ff|1 // denormal
		case 6:
			f, h = 0x7f7fffff, 0x7bff // largest finite
		}
		put(i, f, h)
	}
	return b
}

var convertSources = []Source{SourceF32, SourceF16, SourceBF16}

func vecModes() []bool {
	if Detect() >= AVX512 {
		return []bool{false, true}
	}
	return []bool{false}
}

// TestHalfWidenAll: every one of the 65536 halves widens to the bits
// safetensors.HalfToFloat32 gives, on every path.
func TestHalfWidenAll(t *testing.T) {
	src := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	want := widenRef(src, SourceF16)
	for _, vec := range vecModes() {
		got := make([]float32, 1<<16)
		widenFrom(vec, got, src, SourceF16)
		for i := range got {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(got[i]), "half %#04x vec=%v", i, vec)
		}
	}
}

func requireSameBits(t *testing.T, want, got []float32, msg string) {
	t.Helper()
	for i := range want {
		if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
			require.Failf(t, "bits differ", "%s: value %d: want %#08x got %#08x", msg, i, math.Float32bits(want[i]), math.Float32bits(got[i]))
		}
	}
}

// TestWiden: Widen gives the reference bits for every source type, at
// lengths around the 16-lane vector width.
func TestWiden(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, s := range convertSources {
		for _, n := range []int{0, 1, 15, 16, 17, 33, 1000} {
			src := convertSource(r, s, n)
			want := widenRef(src, s)
			for _, vec := range vecModes() {
				got := make([]float32, n)
				widenFrom(vec, got, src, s)
				requireSameBits(t, want, got, fmt.Sprintf("%v n=%d vec=%v", s, n, vec))
			}
			got := make([]float32, n)
			Widen(got, src, s)
			requireSameBits(t, want, got, fmt.Sprintf("%v n=%d", s, n))
		}
	}
}

// TestPackRowsFrom: packing raw rows is bit-identical to PackRows on the
// widened rows, for whole and partial panels, row ranges starting inside
// a panel (a fused matrix's second tensor), K not a multiple of 16, and N
// not a multiple of 16; rows outside the range are left alone.
func TestPackRowsFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := NewCPU(1)
	for _, s := range convertSources {
		for _, sh := range []struct{ n, k, row0, rows int }{
			{16, 16, 0, 16}, {32, 64, 0, 32}, {37, 33, 0, 37}, {37, 33, 5, 30}, {48, 7, 16, 32},
			{20, 1, 3, 17}, {64, 100, 13, 40}, {5, 0, 0, 5}, {16, 32, 4, 0},
		} {
			src := convertSource(r, s, sh.rows*sh.k)
			want := NewPacked(sh.n, sh.k)
			for i := range want.Data {
				want.Data[i] = float32(i) // rows outside the range must keep these
			}
			c.PackRows(want, sh.row0, widenRef(src, s), sh.rows)
			for _, vec := range vecModes() {
				got := NewPacked(sh.n, sh.k)
				for i := range got.Data {
					got.Data[i] = float32(i)
				}
				packRowsFrom(vec, got, sh.row0, src, s, sh.rows)
				requireSameBits(t, want.Data, got.Data, fmt.Sprintf("%v %+v vec=%v", s, sh, vec))
			}
			got := NewPacked(sh.n, sh.k)
			for i := range got.Data {
				got.Data[i] = float32(i)
			}
			c.PackRowsFrom(got, sh.row0, src, s, sh.rows)
			requireSameBits(t, want.Data, got.Data, fmt.Sprintf("%v %+v", s, sh))
		}
	}
}

// TestQuantizeRowsFrom: quantizing raw rows gives the bytes QuantizeRows
// gives on the widened rows (ggml's quantize_row_q8_0_ref rounding), with
// NaN/Inf/denormal/all-zero blocks, K not a multiple of 32 and N not a
// multiple of 16, on the scalar and AVX-512 paths.
func TestQuantizeRowsFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range convertSources {
		for _, sh := range []struct{ n, k, row0, rows int }{
			{16, 32, 0, 16}, {37, 96, 0, 37}, {37, 45, 3, 30}, {20, 7, 0, 20}, {33, 256, 16, 17}, {4, 32, 1, 0},
		} {
			src := convertSource(r, s, sh.rows*sh.k)
			wide := widenRef(src, s)
			for _, vec := range vecModes() {
				want, got := NewQ8(sh.n, sh.k), NewQ8(sh.n, sh.k)
				want.quantizeRows(vec, sh.row0, wide, sh.rows)
				got.quantizeRowsFrom(vec, sh.row0, src, s, sh.rows, make([]float32, sh.k))
				require.Equal(t, want.Q, got.Q, "%v %+v vec=%v", s, sh, vec)
				require.Equal(t, want.D, got.D, "%v %+v vec=%v", s, sh, vec)
			}
			want, got := NewQ8(sh.n, sh.k), NewQ8(sh.n, sh.k)
			want.QuantizeRows(sh.row0, wide, sh.rows)
			got.QuantizeRowsFrom(sh.row0, src, s, sh.rows, make([]float32, sh.k+3))
			require.Equal(t, want.Q, got.Q, "%v %+v", s, sh)
			require.Equal(t, want.D, got.D, "%v %+v", s, sh)
		}
	}
}

// TestConvertMisuse: wrong sizes and unknown types are programming errors
// and panic with a message naming the call, before any C runs.
func TestConvertMisuse(t *testing.T) {
	c := NewCPU(1)
	p := NewPacked(4, 8)
	q := NewQ8(4, 32)
	require.PanicsWithValue(t, "kernels: Widen: 3 bytes of BF16 for 2 values", func() { Widen(make([]float32, 2), make([]byte, 3), SourceBF16) })
	require.PanicsWithValue(t, "kernels: Widen: unknown source type 7", func() { Widen(nil, nil, Source(7)) })
	require.PanicsWithValue(t, "kernels: PackRowsFrom: rows [2,6) of 4", func() { c.PackRowsFrom(p, 2, make([]byte, 4*8*4), SourceF32, 4) })
	require.PanicsWithValue(t, "kernels: PackRowsFrom: 10 bytes of F16 for 8 values", func() { c.PackRowsFrom(p, 0, make([]byte, 10), SourceF16, 1) })
	require.PanicsWithValue(t, "kernels: Q8.QuantizeRowsFrom: rows [0,1) of 4, scratch 31 for K=32", func() {
		q.QuantizeRowsFrom(0, make([]byte, 64), SourceBF16, 1, make([]float32, 31))
	})
	require.PanicsWithValue(t, "kernels: Q8.QuantizeRowsFrom: 63 bytes of BF16 for 32 values", func() {
		q.QuantizeRowsFrom(0, make([]byte, 63), SourceBF16, 1, make([]float32, 32))
	})
}

// TestPackedRowFloat32: a row gathered from the panels is the row packed,
// for every row of a matrix whose N is not a multiple of 16.
func TestPackedRowFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const n, k = 37, 19
	w := make([]float32, n*k)
	for i := range w {
		w[i] = r.Float32()
	}
	p := NewCPU(1).Pack(w, n, k)
	for i := range n {
		got := make([]float32, k)
		p.RowFloat32(got, i)
		require.Equal(t, w[i*k:(i+1)*k], got, "row %d", i)
	}
	require.PanicsWithValue(t, "kernels: Packed.RowFloat32: row 37 of 37 into 19 values for K=19", func() { p.RowFloat32(make([]float32, k), n) })
	require.PanicsWithValue(t, "kernels: Packed.RowFloat32: row 0 of 37 into 3 values for K=19", func() { p.RowFloat32(make([]float32, 3), 0) })
}

// BenchmarkConvert: converting a 1024×1024 checkpoint tensor of
// weight-like values (no specials) into fp32 panels and into int8, per
// source type and path (one thread).
func BenchmarkConvert(b *testing.B) {
	const n, k = 1024, 1024
	r := rand.New(rand.NewPCG(9, 10))
	w := make([]float32, n*k)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	for _, s := range convertSources {
		src := make([]byte, n*k*s.Size())
		for i, f := range w {
			switch s {
			case SourceF32:
				binary.LittleEndian.PutUint32(src[4*i:], math.Float32bits(f))
			case SourceBF16:
				binary.LittleEndian.PutUint16(src[2*i:], uint16(math.Float32bits(f)>>16))
			default:
				binary.LittleEndian.PutUint16(src[2*i:], F32ToF16(f))
			}
		}
		for _, vec := range vecModes() {
			b.Run(fmt.Sprintf("pack/%v/vec=%v", s, vec), func(b *testing.B) {
				p := NewPacked(n, k)
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					packRowsFrom(vec, p, 0, src, s, n)
				}
			})
			b.Run(fmt.Sprintf("q8/%v/vec=%v", s, vec), func(b *testing.B) {
				q, scratch := NewQ8(n, k), make([]float32, k)
				b.SetBytes(int64(len(src)))
				for b.Loop() {
					q.quantizeRowsFrom(vec, 0, src, s, n, scratch)
				}
			})
		}
	}
}
