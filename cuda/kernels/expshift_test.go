package kernels

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// expLevels is every level ExpShift runs at on this CPU.
func expLevels() []Level {
	var ls []Level
	for l := Generic; l <= min(Detect(), AVX512); l++ {
		ls = append(ls, l)
	}
	return ls
}

// expInputs mixes every region exp has: ordinary softmax inputs (x − max
// in [−40, 0]), the whole finite range with results that overflow, are
// subnormal or round to 0, the edges of the clamp, and the special values.
func expInputs(r *rand.Rand, n int) []float64 {
	specials := []float64{0, math.Copysign(0, -1), 1, -1, 1e-300, -1e-300, math.Inf(1), math.Inf(-1), math.NaN(),
		709.78, 709.79, 710, 711, -708.39, -708.4, -744.4, -745.13, -745.14, -746, -747, -1e308, 1e308,
		math.Ln2 / 2, -math.Ln2 / 2, 0.3465735902799727, -0.3465735902799727, math.SmallestNonzeroFloat64}
	x := append([]float64(nil), specials...)
	for len(x) < n {
		switch r.IntN(3) {
		case 0:
			x = append(x, -40*r.Float64())
		case 1:
			x = append(x, -760+1480*r.Float64())
		default:
			x = append(x, -750+45*r.Float64()) // subnormal results
		}
	}
	return x
}

// ulps is how many float64 values lie between a and b (NaN = NaN).
func ulps(a, b float64) int64 {
	if math.IsNaN(a) || math.IsNaN(b) {
		if math.IsNaN(a) && math.IsNaN(b) {
			return 0
		}
		return math.MaxInt64
	}
	ia, ib := int64(math.Float64bits(a)), int64(math.Float64bits(b))
	if ia < 0 {
		ia = math.MinInt64 - ia
	}
	if ib < 0 {
		ib = math.MinInt64 - ib
	}
	if ia > ib {
		return ia - ib
	}
	return ib - ia
}

// TestExpShiftPaths: every level computes the same bits, element by
// element and in the sum, at every length (the vector paths' tails), with
// and without dst; each element is within 2 ulp of Go's math.Exp and the
// sum within 1e-15 of math.Exp's values summed in order. The doc's claim,
// 1 ulp of the true exp, is TestExpShiftFaithful's check against a 300-bit
// exp; math.Exp on amd64 is itself up to 1.12 ulp off, so 1 + 1.12 ulp
// (2 in whole ulps) is the most this cross-check can ask.
func TestExpShiftPaths(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := expInputs(r, 20000)
	for _, m := range []float64{0, 3.5, -2} {
		for _, n := range []int{0, 1, 7, 31, 32, 33, 63, 64, 65, 100, 1000, len(all)} {
			x := all[len(all)-n:]
			var want []float64
			var wantSum float64
			for l, lv := range expLevels() {
				dst := make([]float64, n)
				sum := expShift(lv, dst, x, m)
				require.Equal(t, math.Float64bits(sum), math.Float64bits(expShift(lv, nil, x, m)), "%v n=%d: the sum without dst", lv, n)
				if l == 0 {
					want, wantSum = dst, sum
					var ref float64
					for i, v := range x {
						e := math.Exp(v - m)
						if v-m > 709.43 && v-m < 709.7828 {
							// Go's math.Exp on amd64 (exp_amd64.s) gives +Inf
							// from 709.4361 on; exp stays below the largest
							// float64 up to 709.78271: TestExpShiftFaithful
							// checks this range against the 300-bit exp.
							e = dst[i]
						}
						// math.Exp on amd64 is itself off by more than 1 ulp
						// now and then (TestExpShiftFaithful logs by how much).
						require.LessOrEqual(t, ulps(e, dst[i]), int64(2), "exp(%v) = %v, math.Exp %v", v-m, dst[i], e)
						ref += e
					}
					if ref != 0 && !math.IsNaN(ref) && !math.IsInf(ref, 0) {
						require.InDelta(t, 1, sum/ref, 1e-15, "n=%d m=%v", n, m)
					} else {
						require.Zero(t, ulps(ref, sum), "n=%d m=%v", n, m)
					}
					continue
				}
				for i := range x {
					require.Zero(t, ulps(want[i], dst[i]), "%v: exp(%v) = %v, generic %v", lv, x[i]-m, dst[i], want[i])
				}
				require.Zero(t, ulps(wantSum, sum), "%v n=%d m=%v: sum %v, generic %v", lv, n, m, sum, wantSum)
			}
			// From float32 values: the sum of the values widened.
			x32 := make([]float32, n)
			w64 := make([]float64, n)
			for i, v := range x {
				x32[i] = float32(v)
				w64[i] = float64(x32[i])
			}
			want32 := expShift(Generic, nil, w64, m)
			for _, lv := range expLevels() {
				require.Zero(t, ulps(want32, expShiftSum32(lv, x32, m)), "%v n=%d m=%v: the float32 sum", lv, n, m)
			}
		}
	}
}

// TestExpShiftFaithful checks the 1-ulp claim against exp computed to 300
// bits (math/big: 2^k·exp(r) by its Taylor series): every result is one of
// the two float64 values around the true one, or where the true one rounds
// to 0 or overflows, that rounding.
func TestExpShiftFaithful(t *testing.T) {
	const prec = 300
	ln2 := bigLn2(prec)
	r := rand.New(rand.NewPCG(3, 4))
	x := expInputs(r, 3000)
	got := make([]float64, len(x))
	ExpShift(got, x, 0)
	worst, worstGo := 0.0, 0.0
	ulpsOff := func(got float64, exact *big.Float, nearest float64) float64 {
		e := new(big.Float).SetPrec(prec).Sub(new(big.Float).SetPrec(prec).SetFloat64(got), exact)
		f, _ := new(big.Float).Quo(e.Abs(e), big.NewFloat(math.Nextafter(nearest, math.Inf(1))-nearest)).Float64()
		return f
	}
	for i, v := range x {
		if math.IsNaN(v) {
			require.True(t, math.IsNaN(got[i]))
			continue
		}
		if math.IsInf(v, 0) || v > 720 || v < -760 {
			require.Equal(t, math.Exp(v), got[i], "exp(%v)", v)
			continue
		}
		exact := bigExp(v, ln2, prec)
		lo, _ := exact.Float64() // nearest
		if lo == 0 || math.IsInf(lo, 0) {
			require.Equal(t, lo, got[i], "exp(%v) = %v, true %v", v, got[i], exact)
			continue
		}
		f := ulpsOff(got[i], exact, lo)
		worst = max(worst, f)
		if g := math.Exp(v); !math.IsInf(g, 0) {
			worstGo = max(worstGo, ulpsOff(g, exact, lo))
		}
		require.Less(t, f, 1.0, "exp(%v) = %v, off by %.3f ulp", v, got[i], f)
	}
	t.Logf("largest error %.3f ulp (math.Exp: %.3f)", worst, worstGo)
}

// bigLn2 is ln 2 = Σ_{k≥1} 1/(k·2^k) to prec bits.
func bigLn2(prec uint) *big.Float {
	s := new(big.Float).SetPrec(prec)
	for k := 1; k < int(prec)+20; k++ {
		term := new(big.Float).SetPrec(prec).SetInt64(1)
		term.SetMantExp(term, -k) // (SetMantExp takes its operand's precision)
		s.Add(s, term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(k))))
	}
	return s
}

// bigExp is exp(x) to prec bits: k = round(x/ln 2), r = x − k·ln 2
// (|r| ≤ 0.35), 2^k·Σ r^j/j!.
func bigExp(x float64, ln2 *big.Float, prec uint) *big.Float {
	k := math.Round(x / math.Ln2)
	r := new(big.Float).SetPrec(prec).SetFloat64(x)
	r.Sub(r, new(big.Float).SetPrec(prec).Mul(ln2, big.NewFloat(k)))
	sum := new(big.Float).SetPrec(prec).SetInt64(1)
	term := new(big.Float).SetPrec(prec).SetInt64(1)
	for j := 1; j < 80; j++ {
		term.Mul(term, r)
		term.Quo(term, new(big.Float).SetPrec(prec).SetInt64(int64(j)))
		sum.Add(sum, term)
	}
	return sum.SetMantExp(sum, int(k))
}

func TestExpShiftLengths(t *testing.T) {
	require.Zero(t, ExpShift(nil, nil, 1))
	require.Zero(t, ExpShiftSum32(nil, 1))
	require.PanicsWithValue(t, "kernels: ExpShift: 3 values into 2", func() { ExpShift(make([]float64, 2), make([]float64, 3), 0) })
}

// BenchmarkExpShift is one softmax normalizer at Qwen3's vocabulary,
// against the math.Exp loop it replaces.
func BenchmarkExpShift(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float64, 151936)
	for i := range x {
		x[i] = 3 * r.NormFloat64()
	}
	dst := make([]float64, len(x))
	for _, l := range expLevels() {
		b.Run(l.String(), func(b *testing.B) {
			for b.Loop() {
				expShift(l, dst, x, 10)
			}
		})
	}
	b.Run("math.Exp", func(b *testing.B) {
		for b.Loop() {
			var s float64
			for i, v := range x {
				dst[i] = math.Exp(v - 10)
				s += dst[i]
			}
		}
	})
}

// FuzzExpShift: for any float64 values and shift (NaNs, infinities and
// subnormals included) every level gives the generic path's bits, element
// by element and in the sum, and the float32 entry point agrees with the
// widened values.
func FuzzExpShift(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, 0.0)
	f.Add([]byte{0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0x86, 0xc0, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 709.5)
	f.Fuzz(func(t *testing.T, raw []byte, m float64) {
		x := make([]float64, len(raw)/8)
		x32 := make([]float32, len(x))
		w64 := make([]float64, len(x))
		for i := range x {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
			x32[i] = float32(x[i])
			w64[i] = float64(x32[i])
		}
		want := make([]float64, len(x))
		wantSum := expShift(Generic, want, x, m)
		want32 := expShift(Generic, nil, w64, m)
		for _, l := range expLevels() {
			got := make([]float64, len(x))
			sum := expShift(l, got, x, m)
			for i := range x {
				if ulps(want[i], got[i]) != 0 {
					t.Fatalf("%v: exp(%v − %v) = %v, generic %v", l, x[i], m, got[i], want[i])
				}
			}
			if ulps(wantSum, sum) != 0 {
				t.Fatalf("%v: sum %v, generic %v", l, sum, wantSum)
			}
			if s := expShiftSum32(l, x32, m); ulps(want32, s) != 0 {
				t.Fatalf("%v: float32 sum %v, generic %v", l, s, want32)
			}
		}
	})
}
