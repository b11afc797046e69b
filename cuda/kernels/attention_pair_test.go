package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAttentionPairedHeads checks that two query heads of one KV group
// computed together (sharing their K and V reads) give the bits each gets
// alone: every head is recomputed as the only head of a one-head cache
// holding its group's K and V, and compared bit for bit, at every level
// and thread count (which cut the items differently, pairing some heads
// and not others).
func TestAttentionPairedHeads(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	// start: the first token's position (a sequence continued after a
	// cached prefix, and blocks of 16 positions cut at other tokens).
	for _, tc := range []struct{ heads, kvHeads, hd, bs, n, start int }{
		{4, 2, 128, 5, 37, 0}, {4, 2, 128, 5, 37, 1}, {8, 2, 64, 16, 40, 0}, {8, 2, 64, 16, 40, 1}, {2, 1, 16, 3, 20, 0},
		{6, 3, 32, 4, 17, 0}, {4, 1, 256, 16, 9, 0}, {4, 2, 16, 7, 50, 1},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			heads, kvHeads, hd, bs, n := tc.heads, tc.kvHeads, tc.hd, tc.bs, tc.n
			nb := (n + tc.start + bs - 1) / bs
			tab := make([]int32, nb)
			for i, b := range r.Perm(nb + 2)[:nb] {
				tab[i] = int32(b)
			}
			slots := (nb + 2) * bs
			kc := randSlice(r, slots*kvHeads*hd)
			vc := randSlice(r, slots*kvHeads*hd)
			q := randSlice(r, n*heads*hd)
			pos := make([]int32, n)
			off := make([]int32, n)
			for i := range pos {
				pos[i] = int32(tc.start + i)
			}
			scale := float32(1 / math.Sqrt(float64(hd)))
			for _, c := range levels(t) {
				out := make([]float32, n*heads*hd)
				c.Attend(out, q, &Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: scale,
					K: kc, V: vc, Pos: pos, TableOff: off, Tables: tab})
				for h := 0; h < heads; h++ {
					kvh := h / (heads / kvHeads)
					k1, v1 := make([]float32, slots*hd), make([]float32, slots*hd)
					for s := 0; s < slots; s++ {
						copy(k1[s*hd:(s+1)*hd], kc[(s*kvHeads+kvh)*hd:])
						copy(v1[s*hd:(s+1)*hd], vc[(s*kvHeads+kvh)*hd:])
					}
					q1 := make([]float32, n*hd)
					for i := 0; i < n; i++ {
						copy(q1[i*hd:(i+1)*hd], q[(i*heads+h)*hd:])
					}
					o1 := make([]float32, n*hd)
					c.Attend(o1, q1, &Attention{Heads: 1, KVHeads: 1, HeadDim: hd, BlockSize: bs, Scale: scale,
						K: k1, V: v1, Pos: pos, TableOff: off, Tables: tab})
					for i := 0; i < n; i++ {
						for d := 0; d < hd; d++ {
							require.Equal(t, math.Float32bits(o1[i*hd+d]), math.Float32bits(out[(i*heads+h)*hd+d]),
								"level %v threads %d token %d head %d dim %d", c.Level(), c.Threads(), i, h, d)
						}
					}
				}
			}
		})
	}
}

// BenchmarkAttentionPrefill is the attention of a 512-token prefill at the
// Qwen3-0.6B shape (16 query heads in 8 KV groups, head size 128).
func BenchmarkAttentionPrefill(b *testing.B) {
	const heads, kvHeads, hd, bs, n = 16, 8, 128, 16, 512
	r := rand.New(rand.NewPCG(5, 6))
	nb := n / bs
	tab := make([]int32, nb)
	for i := range tab {
		tab[i] = int32(i)
	}
	kc, vc := randSlice(r, n*kvHeads*hd), randSlice(r, n*kvHeads*hd)
	q := randSlice(r, n*heads*hd)
	pos, off := make([]int32, n), make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	out := make([]float32, n*heads*hd)
	a := &Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: 0.088,
		K: kc, V: vc, Pos: pos, TableOff: off, Tables: tab}
	for _, threads := range []int{1, 2} {
		b.Run(fmt.Sprint("threads", threads), func(b *testing.B) {
			c := NewCPU(threads)
			for b.Loop() {
				c.Attend(out, q, a)
			}
			// 2 FMAs per dimension (score and weighted sum) per query and position
			b.ReportMetric(float64(heads*hd*4*(n*(n+1)/2))*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
