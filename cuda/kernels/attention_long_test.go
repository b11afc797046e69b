package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// attendFloat64 is one (token, head) of attention in float64: query qh
// over cache positions 0..n-1 of a table (block size bs), reading KV head
// kvh's rows of kc and vc ([slots][kvHeads*hd]).
func attendFloat64(qh, kc, vc []float32, table []int32, bs, n, kvHeads, kvh int, scale float32) []float64 {
	hd := len(qh)
	s := make([]float64, n)
	mx := math.Inf(-1)
	slot := func(p int) int { return int(table[p/bs])*bs + p%bs }
	for p := range s {
		row := kc[(slot(p)*kvHeads+kvh)*hd:]
		for d := 0; d < hd; d++ {
			s[p] += float64(qh[d]) * float64(row[d])
		}
		s[p] *= float64(scale)
		mx = math.Max(mx, s[p])
	}
	var sum float64
	for p := range s {
		s[p] = math.Exp(s[p] - mx)
		sum += s[p]
	}
	o := make([]float64, hd)
	for p := range s {
		row := vc[(slot(p)*kvHeads+kvh)*hd:]
		for d := range o {
			o[d] += s[p] / sum * float64(row[d])
		}
	}
	return o
}

// TestAttentionDecodeLongContext covers decode tokens over long contexts:
// a token alone of its sequence in a call (whose cache rows the kernel
// prefetches) must give the bits the same token gets inside a prefill
// chunk (no prefetch), and match a float64 reference, for fp32 and bf16
// caches, paired and single query heads, permuted block tables, at every
// level and thread count.
func TestAttentionDecodeLongContext(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		heads, kvHeads, hd, bs int
		ctx                    []int // each sequence's decode position
		bf16                   bool
	}{
		{4, 2, 128, 16, []int{700, 4200, 1333}, false},
		{4, 2, 128, 16, []int{700, 4200, 1333}, true},
		{3, 1, 64, 7, []int{2049, 1000}, false},
		{3, 1, 64, 7, []int{2049, 1000}, true},
		{2, 2, 256, 32, []int{1500}, true},
		{2, 1, 24, 5, []int{900, 901}, true}, // the scalar path at every level
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			heads, kvHeads, hd, bs := tc.heads, tc.kvHeads, tc.hd, tc.bs
			// Each sequence gets a permuted table of its own blocks.
			var tables [][]int32
			total := 0
			for _, p := range tc.ctx {
				total += p/bs + 1
			}
			perm := r.Perm(total + 5)
			for _, p := range tc.ctx {
				nb := p/bs + 1
				tab := make([]int32, nb)
				for i := range tab {
					tab[i] = int32(perm[0])
					perm = perm[1:]
				}
				tables = append(tables, tab)
			}
			slots := (total + 5) * bs
			kc, vc := randSlice(r, slots*kvHeads*hd), randSlice(r, slots*kvHeads*hd)
			var kh, vh []uint16
			if tc.bf16 {
				kh, vh = make([]uint16, len(kc)), make([]uint16, len(vc))
				ToBF16(kh, kc)
				ToBF16(vh, vc)
				FromBF16(kc, kh) // the reference reads the values the cache holds
				FromBF16(vc, vh)
			}
			cache := func(a *Attention) *Attention {
				if tc.bf16 {
					a.KH, a.VH = kh, vh
				} else {
					a.K, a.V = kc, vc
				}
				return a
			}
			scale := float32(1 / math.Sqrt(float64(hd)))
			width := heads * hd
			// The decode call: one token per sequence.
			var pos, off, flat []int32
			for i, p := range tc.ctx {
				pos = append(pos, int32(p))
				off = append(off, int32(len(flat)))
				flat = append(flat, tables[i]...)
			}
			q := randSlice(r, len(pos)*width)
			for i := range q {
				q[i] *= 3
			}
			for _, c := range levels(t) {
				out := make([]float32, len(q))
				c.Attend(out, q, cache(&Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs,
					Scale: scale, Pos: pos, TableOff: off, Tables: flat}))
				for i, p := range tc.ctx {
					// The same query as the last token of a 3-token chunk
					// of its sequence: not alone, not prefetched.
					cq := randSlice(r, 3*width)
					copy(cq[2*width:], q[i*width:(i+1)*width])
					cout := make([]float32, len(cq))
					c.Attend(cout, cq, cache(&Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs,
						Scale: scale, Pos: []int32{int32(p - 2), int32(p - 1), int32(p)}, TableOff: []int32{0, 0, 0},
						Tables: tables[i]}))
					for h := 0; h < heads; h++ {
						got := out[i*width+h*hd : i*width+(h+1)*hd]
						inChunk := cout[2*width+h*hd : 2*width+(h+1)*hd]
						for d := range got {
							require.Equal(t, math.Float32bits(inChunk[d]), math.Float32bits(got[d]),
								"level %v threads %d seq %d head %d dim %d: alone vs in a chunk", c.Level(), c.Threads(), i, h, d)
						}
						if c.Threads() != 1 {
							continue // the same bits at every thread count (above); the reference once
						}
						want := attendFloat64(q[i*width+h*hd:i*width+(h+1)*hd], kc, vc, tables[i], bs, p+1, kvHeads,
							h/(heads/kvHeads), scale)
						for d := range got {
							require.InDelta(t, want[d], float64(got[d]), 1e-5, "level %v seq %d head %d dim %d", c.Level(), i, h, d)
						}
					}
				}
			}
		})
	}
}

// BenchmarkAttentionDecodeLong is one decode step's attention at the
// Qwen3-0.6B shape (16 query heads in 8 KV groups, head size 128) after
// long contexts: batch 1 at 8,192 positions, and 32 sequences at 2,048
// each, each over blocks scattered through a cache larger than L3, for an
// fp32 and a bf16 cache. GB/s is the cache bytes read per second.
func BenchmarkAttentionDecodeLong(b *testing.B) {
	const heads, kvHeads, hd, bs = 16, 8, 128, 16
	for _, shape := range []struct{ seqs, ctx int }{{1, 8192}, {32, 2048}} {
		for _, bf := range []bool{false, true} {
			r := rand.New(rand.NewPCG(3, 4))
			nb := shape.ctx / bs
			perm := r.Perm(shape.seqs * nb)
			var pos, off, tab []int32
			for s := 0; s < shape.seqs; s++ {
				pos = append(pos, int32(shape.ctx-1))
				off = append(off, int32(len(tab)))
				for _, p := range perm[s*nb : (s+1)*nb] {
					tab = append(tab, int32(p))
				}
			}
			n := shape.seqs * nb * bs * kvHeads * hd
			a := &Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: 0.088,
				Pos: pos, TableOff: off, Tables: tab}
			elem := 4
			if bf {
				a.KH, a.VH = make([]uint16, n), make([]uint16, n)
				ToBF16(a.KH, randSlice(r, n))
				ToBF16(a.VH, randSlice(r, n))
				elem = 2
			} else {
				a.K, a.V = randSlice(r, n), randSlice(r, n)
			}
			q := randSlice(r, shape.seqs*heads*hd)
			out := make([]float32, len(q))
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("seqs%d_ctx%d_bf16=%v_threads%d", shape.seqs, shape.ctx, bf, threads), func(b *testing.B) {
					c := NewCPU(threads)
					for b.Loop() {
						c.Attend(out, q, a)
					}
					b.ReportMetric(float64(2*n*elem)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}
