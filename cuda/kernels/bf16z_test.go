package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// zValues is n bf16 values as real weights look (normal, scale 0.02) with
// every kind of odd value mixed in at rate odd: ±0, ±Inf, NaNs, denormals,
// the largest and smallest normals, and random bit patterns (which escape).
func zValues(r *rand.Rand, n int, odd float64) []uint16 {
	special := []uint16{0x0000, 0x8000, 0x7f80, 0xff80, 0x7fc0, 0xffc1, 0x7f81, 0x0001, 0x807f, 0x7f7f, 0xff7f, 0x0080, 0x8080}
	out := make([]uint16, n)
	for i := range out {
		switch {
		case r.Float64() < odd/2:
			out[i] = special[r.IntN(len(special))]
		case r.Float64() < odd/2:
			out[i] = uint16(r.Uint32())
		default:
			out[i] = bf16Of(float32(0.02 * r.NormFloat64()))
		}
	}
	return out
}

// TestBF16ZRoundTrip: decoding gives every value back bit for bit, odd
// values (escapes) and row padding included, from owned and parted
// matrices, and the data passes Validate.
func TestBF16ZRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	c := NewCPU(2)
	for _, sz := range []struct{ n, k int }{{1, 1}, {3, 31}, {5, 32}, {4, 63}, {7, 64}, {9, 65}, {17, 100}, {33, 1024}, {2, 0}, {0, 64}} {
		for _, odd := range []float64{0, 0.01, 1} {
			t.Run(fmt.Sprintf("n%d_k%d_odd%g", sz.n, sz.k, odd), func(t *testing.T) {
				vals := zValues(r, sz.n*sz.k, odd)
				w := &BF16{N: sz.n, K: sz.k, Data: vals}
				z := c.CompressBF16(w)
				require.NoError(t, z.Validate())
				got := make([]uint16, sz.n*sz.k)
				c.DecodeBF16Z(got, z, 0, sz.n)
				require.Equal(t, vals, got)
				// A row range alone, and one row widened (an embedding row).
				if sz.n > 2 {
					part := make([]uint16, (sz.n-2)*sz.k)
					c.DecodeBF16Z(part, z, 1, sz.n-1)
					require.Equal(t, vals[sz.k:(sz.n-1)*sz.k], part)
				}
				if sz.n > 0 {
					f, want := make([]float32, sz.k), make([]float32, sz.k)
					z.RowFloat32(f, sz.n-1)
					FromBF16(want, vals[(sz.n-1)*sz.k:])
					for i := range f {
						require.Equal(t, math.Float32bits(want[i]), math.Float32bits(f[i]))
					}
				}
				if odd == 1 && sz.n*sz.k > 64 {
					require.NotEmpty(t, z.Esc, "random bit patterns must escape")
				}
				// Parted: the same compressed bytes.
				if sz.n >= 2 && sz.k > 0 {
					cut := sz.n / 2 * sz.k
					zp := c.CompressBF16(NewBF16Parts(sz.k, vals[:cut], vals[cut:]))
					require.Equal(t, z, zp)
				}
			})
		}
	}
}

// TestBF16ZSize: normally distributed weights (any scale) compress to
// about 12 of 16 bits, what makes decode faster; random bit patterns
// still round-trip, at more than 16.
func TestBF16ZSize(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	c := NewCPU(2)
	for _, scale := range []float64{0.02, 1, 3e-5} {
		n, k := 512, 2048
		vals := make([]uint16, n*k)
		for i := range vals {
			vals[i] = bf16Of(float32(scale * r.NormFloat64()))
		}
		z := c.CompressBF16(&BF16{N: n, K: k, Data: vals})
		ratio := float64(z.Bytes()) / float64(2*n*k)
		t.Logf("scale %g: %.4f of bf16's bytes, %d escapes (%.2e a weight)", scale, ratio, len(z.Esc), float64(len(z.Esc))/float64(n*k))
		require.Less(t, ratio, 0.755, "scale %g", scale)
		require.Greater(t, ratio, 0.75, "scale %g: below 12 bits a weight cannot be", scale)
	}
}

// TestMatMulBF16Z: the product with compressed weights has the bits of
// MatMulBF16 with the same values, at every level, thread count and
// token count (register decoding up to 8 tokens at AVX512BF16, decoded
// rows otherwise; the many-token path from 48), odd values included.
func TestMatMulBF16Z(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, sz := range []struct{ n, k int }{{1, 1}, {7, 31}, {13, 64}, {37, 65}, {64, 96}, {101, 200}, {203, 1024}, {5, 0}} {
		vals := zValues(r, sz.n*sz.k, 0.002)
		w := &BF16{N: sz.n, K: sz.k, Data: vals}
		bias := randSlice(r, sz.n)
		for _, tt := range []int{1, 2, 3, 4, 5, 8, 9, 13, 48, 50} {
			x := randSlice(r, tt*sz.k)
			for _, c := range bf16Levels(t) {
				z := c.CompressBF16(w)
				for _, b := range [][]float32{nil, bias} {
					want, got := make([]float32, tt*sz.n), make([]float32, tt*sz.n)
					c.MatMulBF16(want, x, tt, w, b)
					c.MatMulBF16Z(got, x, tt, z, b)
					for i := range want {
						if math.Float32bits(want[i]) != math.Float32bits(got[i]) {
							t.Fatalf("n%d k%d t%d level %v threads %d bias %v: element %d is %v (%08x), bf16 gives %v (%08x)",
								sz.n, sz.k, tt, c.Level(), c.Threads(), b != nil, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
						}
					}
				}
			}
		}
	}
}

// TestCompressBF16Levels: the vector encoder (AVX-512BW levels) writes
// the generic encoder's bytes, table, escapes and offsets, at every
// thread count: rows that end inside a group, matrices with fewer high
// bytes than codes (all zeros), with escapes in most groups, and with a
// parted source (the mapped checkpoint's shape).
func TestCompressBF16Levels(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	gen, err := NewCPU(1).WithLevel(Generic)
	require.NoError(t, err)
	for _, sz := range []struct{ n, k int }{{1, 1}, {3, 31}, {5, 32}, {2, 33}, {4, 63}, {7, 64}, {9, 65}, {6, 95},
		{17, 100}, {33, 1024}, {3, 1000}, {2, 0}, {0, 64}} {
		for _, odd := range []float64{-1, 0, 0.01, 0.3, 1} {
			vals := zValues(r, sz.n*sz.k, max(odd, 0))
			if odd < 0 {
				clear(vals) // one high byte: one code in use
			}
			want := gen.CompressBF16(&BF16{N: sz.n, K: sz.k, Data: vals})
			for _, c := range levels(t) {
				got := c.CompressBF16(&BF16{N: sz.n, K: sz.k, Data: vals})
				name := fmt.Sprintf("n%d k%d odd %g level %v threads %d", sz.n, sz.k, odd, c.Level(), c.Threads())
				require.Equal(t, want.Table, got.Table, name)
				require.Equal(t, want.EscOff, got.EscOff, name)
				require.Equal(t, want.Esc, got.Esc, name)
				require.Equal(t, want.Data, got.Data, name)
				if sz.n > 2 && sz.k > 0 { // parted: the rows in three blocks
					k := sz.k
					parted := NewBF16Parts(k, vals[:k], vals[k:(sz.n-1)*k], vals[(sz.n-1)*k:])
					p := c.CompressBF16(parted)
					require.Equal(t, want.Data, p.Data, name+" parted")
					require.Equal(t, want.Esc, p.Esc, name+" parted")
					require.Equal(t, want.EscOff, p.EscOff, name+" parted")
				}
			}
		}
	}
}

// TestBF16ZCheck: Check and Validate name what is wrong with data that
// did not come from CompressBF16.
func TestBF16ZCheck(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	c := NewCPU(1)
	vals := zValues(r, 6*100, 0.05)
	good := c.CompressBF16(&BF16{N: 6, K: 100, Data: vals})
	require.NotEmpty(t, good.Esc)
	clone := func() *BF16Z {
		z := *good
		z.Data, z.Esc, z.EscOff = slices.Clone(z.Data), slices.Clone(z.Esc), slices.Clone(z.EscOff)
		return &z
	}
	for _, tc := range []struct {
		name, want string
		mend       func(z *BF16Z)
		checkOK    bool // Check passes; only Validate sees it
	}{
		{"short data", "data bytes", func(z *BF16Z) { z.Data = z.Data[1:] }, false},
		{"long data", "data bytes", func(z *BF16Z) { z.Data = append(z.Data, 0) }, false},
		{"offsets count", "escape offsets for 6 rows", func(z *BF16Z) { z.EscOff = z.EscOff[:6] }, false},
		{"offsets start", "start at 1", func(z *BF16Z) { z.EscOff[0] = 1 }, false},
		{"escape entry", "table entry 15", func(z *BF16Z) { z.Table[BF16ZEscape] = 0x3f }, false},
		{"offsets end", "end at", func(z *BF16Z) { z.Esc = z.Esc[1:] }, false},
		{"offsets decrease", "decrease at row", func(z *BF16Z) { z.EscOff[3] = z.EscOff[4] + 1 }, false},
		{"an escape too few", "row", func(z *BF16Z) {
			// Move the boundary of a row with escapes one byte on: the
			// offsets stay in order and add up, the rows' counts do not.
			for r := 1; r < z.N; r++ {
				if z.EscOff[r] < z.EscOff[r+1] {
					z.EscOff[r]++
					return
				}
			}
			panic("no row with escapes")
		}, true},
		{"a code turned escape", "row 0", func(z *BF16Z) {
			for i := range 32 { // the first group's codes
				if z.Data[i]&15 != BF16ZEscape {
					z.Data[i] |= BF16ZEscape
					return
				}
			}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := clone()
			tc.mend(z)
			err := z.Validate()
			require.ErrorIs(t, err, ErrBF16Z)
			require.ErrorContains(t, err, tc.want)
			if tc.checkOK {
				require.NoError(t, z.Check())
				// The kernels stay inside the arrays anyway.
				x := randSlice(r, 100)
				y := make([]float32, 6)
				c.MatMulBF16Z(y, x, 1, z, nil)
				dst := make([]uint16, 600)
				c.DecodeBF16Z(dst, z, 0, 6)
			} else {
				require.ErrorIs(t, z.Check(), ErrBF16Z)
			}
		})
	}
}

// FuzzBF16Z: any arrays that pass Check decode the same in both decoders
// and decode and multiply without reading outside them (run under -race / the address checks of the Go
// runtime's slices: the decoders' writes are sized by N and K only).
func FuzzBF16Z(f *testing.F) {
	c := NewCPU(1)
	generic, err := NewCPU(1).WithLevel(Generic)
	if err != nil {
		f.Fatal(err)
	}
	good := c.CompressBF16(&BF16{N: 2, K: 70, Data: zValues(rand.New(rand.NewPCG(1, 1)), 140, 0.1)})
	seed := append(append([]byte{}, good.Data...), good.Esc...)
	f.Add(uint8(2), uint8(70), seed, uint16(good.EscOff[1]), uint16(good.EscOff[2]))
	f.Add(uint8(1), uint8(1), make([]byte, 96), uint16(0), uint16(0))
	f.Fuzz(func(t *testing.T, n, k uint8, data []byte, e1, e2 uint16) {
		z := &BF16Z{N: int(n % 4), K: int(k % 130)}
		kp := z.KP()
		need := z.N * kp * 3 / 2
		if len(data) < need {
			return
		}
		z.Data, z.Esc = data[:need], data[need:]
		z.EscOff = make([]uint32, z.N+1)
		offs := []uint32{uint32(e1), uint32(e2), uint32(len(z.Esc))}
		for r := 1; r <= z.N; r++ {
			z.EscOff[r] = offs[min(r-1, 2)]
		}
		z.EscOff[z.N] = uint32(len(z.Esc))
		copy(z.Table[:], data)
		if z.Check() != nil {
			return
		}
		_ = z.Validate()
		dst := make([]uint16, z.N*z.K)
		c.DecodeBF16Z(dst, z, 0, z.N)
		// The scalar decoder (levels below AVX-512) reads any data as the
		// register one does: padding, escapes past the row's bytes and all.
		ref := make([]uint16, z.N*z.K)
		generic.DecodeBF16Z(ref, z, 0, z.N)
		if !slices.Equal(dst, ref) {
			t.Fatalf("decoders differ: %x against %x", dst, ref)
		}
		x := make([]float32, 9*z.K)
		for i := range x {
			x[i] = float32(i%7) - 3
		}
		for _, tt := range []int{1, 9} {
			y := make([]float32, tt*z.N)
			c.MatMulBF16Z(y, x[:tt*z.K], tt, z, nil)
		}
	})
}

// BenchmarkDecodeBF16Z is the 1.7B shape's decode-step matrices at batch 1,
// bf16 against compressed bf16 on the same values (normal weights), one
// after the other so that both see the same machine: compare ns/op.
func BenchmarkDecodeBF16Z(b *testing.B) {
	r := rand.New(rand.NewPCG(11, 12))
	c := NewCPU(0)
	var shapes []shape
	for range 28 {
		shapes = append(shapes, shape{4096, 2048}, shape{2048, 2048}, shape{12288, 2048}, shape{2048, 6144})
	}
	shapes = append(shapes, shape{151936, 2048})
	var ws []*BF16
	var zs []*BF16Z
	var bytesBF, bytesZ int64
	for _, s := range shapes {
		w := &BF16{N: s.n, K: s.k, Data: make([]uint16, s.n*s.k)}
		for i := range w.Data {
			w.Data[i] = bf16Of(float32(0.02 * r.NormFloat64()))
		}
		z := c.CompressBF16(w)
		ws, zs = append(ws, w), append(zs, z)
		bytesBF += w.Bytes()
		bytesZ += z.Bytes()
	}
	x := randSlice(r, 6144)
	y := make([]float32, 151936)
	b.Run("bf16", func(b *testing.B) {
		b.SetBytes(bytesBF)
		for b.Loop() {
			for _, w := range ws {
				c.MatMulBF16(y[:w.N], x[:w.K], 1, w, nil)
			}
		}
	})
	b.Run("bf16z", func(b *testing.B) {
		b.SetBytes(bytesZ)
		for b.Loop() {
			for _, z := range zs {
				c.MatMulBF16Z(y[:z.N], x[:z.K], 1, z, nil)
			}
		}
	})
}

// BenchmarkCompressBF16 is compressing at load (`--weights bf16z` from a
// bf16 checkpoint): the 0.6B shape's embedding table and an MLP matrix,
// normal weights. SetBytes counts the bf16 bytes read.
func BenchmarkCompressBF16(b *testing.B) {
	r := rand.New(rand.NewPCG(13, 14))
	c := NewCPU(0)
	for _, s := range []shape{{151936, 1024}, {3072, 1024}} {
		w := &BF16{N: s.n, K: s.k, Data: make([]uint16, s.n*s.k)}
		for i := range w.Data {
			w.Data[i] = bf16Of(float32(0.02 * r.NormFloat64()))
		}
		b.Run(fmt.Sprintf("%dx%d", s.n, s.k), func(b *testing.B) {
			b.SetBytes(w.Bytes())
			for b.Loop() {
				c.CompressBF16(w)
			}
		})
	}
}

// FuzzCompressBF16: any values, any shape up to a few groups a row,
// compress to the generic encoder's bytes at the CPU's level and decode
// back bit for bit.
func FuzzCompressBF16(f *testing.F) {
	c := NewCPU(2)
	generic, err := NewCPU(1).WithLevel(Generic)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint8(3), []byte{0x3c, 0x80, 0xbc, 0x81, 0x7f, 0xc0, 0, 0, 1, 0xff})
	f.Add(uint8(65), make([]byte, 300))
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		kk := int(k%200) + 1
		vals := make([]uint16, len(data)/2/kk*kk)
		for i := range vals {
			vals[i] = uint16(data[2*i]) | uint16(data[2*i+1])<<8
		}
		w := &BF16{N: len(vals) / kk, K: kk, Data: vals}
		want, got := generic.CompressBF16(w), c.CompressBF16(w)
		if want.Table != got.Table || !slices.Equal(want.Data, got.Data) || !slices.Equal(want.Esc, got.Esc) ||
			!slices.Equal(want.EscOff, got.EscOff) {
			t.Fatalf("level %v encodes %d×%d differently from the generic encoder", c.Level(), w.N, kk)
		}
		if err := got.Validate(); err != nil {
			t.Fatal(err)
		}
		back := make([]uint16, len(vals))
		c.DecodeBF16Z(back, got, 0, w.N)
		if !slices.Equal(vals, back) {
			t.Fatalf("%d×%d: decoded %x, compressed %x", w.N, kk, back, vals)
		}
	})
}
