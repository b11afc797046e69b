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

// testCache returns a function that sets an Attention's cache to kc and vc
// ([slots][KVHeads*HeadDim]), or with bf16 to their bf16 roundings, which
// it then writes back into kc and vc: a reference computed from kc and vc
// reads the values the cache holds.
func testCache(kc, vc []float32, bf16 bool) func(*Attention) *Attention {
	var kh, vh []uint16
	if bf16 {
		kh, vh = make([]uint16, len(kc)), make([]uint16, len(vc))
		ToBF16(kh, kc)
		ToBF16(vh, vc)
		FromBF16(kc, kh)
		FromBF16(vc, vh)
	}
	return func(a *Attention) *Attention {
		if bf16 {
			a.KH, a.VH = kh, vh
		} else {
			a.K, a.V = kc, vc
		}
		return a
	}
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
			cache := testCache(kc, vc, tc.bf16)
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
// long contexts: batch 1 at 8,192 positions (over scattered blocks, and
// over blocks one after another in memory), 32 sequences at 2,048 each
// over blocks of their own, and 32 samples of one 2,048- or 16,384-token
// prompt (one table's blocks: a decode group), over blocks scattered
// through a cache larger than L3, for an fp32 and a bf16 cache
// (AGL_ATT_GROUP=0 and AGL_ATT_PF=0 turn groups and prefetching off for
// A/B runs). GB/s is the cache bytes the
// tokens attend over per second (a group's shared rows count once per
// token, as they would be read without groups).
func BenchmarkAttentionDecodeLong(b *testing.B) {
	const heads, kvHeads, hd, bs = 16, 8, 128, 16
	for _, shape := range []struct {
		seqs, ctx          int
		shared, contiguous bool
	}{{1, 8192, false, false}, {1, 8192, false, true}, {32, 2048, false, false}, {32, 2048, true, false}, {32, 16384, true, false}} {
		for _, bf := range []bool{false, true} {
			r := rand.New(rand.NewPCG(3, 4))
			nb := shape.ctx / bs
			tables := shape.seqs
			if shape.shared {
				tables = 1
			}
			perm := r.Perm(max(tables*nb, 4096)) // blocks scattered over 256 MiB of fp32 K (and as much V)
			if shape.contiguous {
				for i := range perm {
					perm[i] = i
				}
			}
			var pos, off, tab []int32
			for s := 0; s < shape.seqs; s++ {
				// Each sequence has a table of its own (a copy of the
				// first's when they share it), as in the engine: tokens
				// with one table are a prefill chunk.
				pos = append(pos, int32(shape.ctx-1))
				off = append(off, int32(len(tab)))
				t := s % tables
				for _, p := range perm[t*nb : (t+1)*nb] {
					tab = append(tab, int32(p))
				}
			}
			n := len(perm) * bs * kvHeads * hd
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
			read := 2 * shape.seqs * shape.ctx * kvHeads * hd * elem
			for _, threads := range []int{1, 2} {
				b.Run(fmt.Sprintf("seqs%d_ctx%d_shared=%v_contiguous=%v_bf16=%v_threads%d", shape.seqs, shape.ctx, shape.shared, shape.contiguous, bf, threads), func(b *testing.B) {
					c := NewCPU(threads)
					for b.Loop() {
						c.Attend(out, q, a)
					}
					b.ReportMetric(float64(read)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GB/s")
				})
			}
		}
	}
}

// TestAttentionDecodeGroups covers decode groups: decode tokens whose block
// tables share leading blocks (a prompt's samples through the prefix
// cache) are computed together over the shared positions. Every token must
// give the bits it gets in a call of its own, and match a float64
// reference: sequences sharing a long prompt, one sharing a single block,
// one sharing nothing, a decode token inside the shared blocks, and a
// prefill chunk in the same call, for block sizes 5, 7, 16 and 32, paired
// and single heads, fp32 and bf16 caches, at every level and thread count.
func TestAttentionDecodeGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, tc := range []struct {
		heads, kvHeads, hd, bs int
		bf16                   bool
	}{
		{4, 2, 128, 16, false}, {4, 2, 128, 16, true}, {4, 2, 64, 5, false}, {3, 1, 32, 7, true},
		{2, 1, 128, 32, false}, {8, 2, 16, 16, true},
	} {
		t.Run(fmt.Sprintf("%+v", tc), func(t *testing.T) {
			heads, kvHeads, hd, bs := tc.heads, tc.kvHeads, tc.hd, tc.bs
			const prompt = 300 // shared positions (whole blocks of them)
			sharedBlocks := prompt / bs
			next := 0
			alloc := func(n int) []int32 {
				b := make([]int32, n)
				for i := range b {
					b[i] = int32(next)
					next++
				}
				return b
			}
			shared := alloc(sharedBlocks)
			r.Shuffle(len(shared), func(i, j int) { shared[i], shared[j] = shared[j], shared[i] })
			type seq struct {
				table []int32
				pos   []int32 // the positions of its tokens in the call
			}
			withPrompt := func(end int) []int32 { // the shared blocks, then its own up to position end
				return append(append([]int32{}, shared...), alloc((end+bs)/bs-sharedBlocks)...)
			}
			seqs := []seq{
				{withPrompt(prompt + 3), []int32{prompt + 3}},
				{withPrompt(prompt + 40), []int32{prompt + 40}},
				{withPrompt(prompt), []int32{prompt}},
				{withPrompt(prompt + 7), []int32{prompt + 5, prompt + 6, prompt + 7}}, // a prefill chunk
				{withPrompt(prompt + 1), []int32{prompt + 1}},
				{append([]int32{shared[0]}, alloc((prompt+20)/bs)...), []int32{prompt + 19}}, // shares one block
				{alloc((prompt + 9 + bs) / bs), []int32{prompt + 9}},                         // shares nothing
				{withPrompt(prompt + 2), []int32{prompt + 2}},
				{withPrompt(prompt + 2)[:(prompt/2)/bs+1], []int32{prompt / 2}}, // inside the shared blocks
				{withPrompt(prompt + 64), []int32{prompt + 64}},
			}
			slots := next * bs
			kc, vc := randSlice(r, slots*kvHeads*hd), randSlice(r, slots*kvHeads*hd)
			cache := testCache(kc, vc, tc.bf16)
			scale := float32(1 / math.Sqrt(float64(hd)))
			attention := func(pos, off, tables []int32) *Attention {
				return cache(&Attention{Heads: heads, KVHeads: kvHeads, HeadDim: hd, BlockSize: bs, Scale: scale,
					Pos: pos, TableOff: off, Tables: tables})
			}
			var pos, off, tables []int32
			var owner []int
			for si, s := range seqs {
				for _, p := range s.pos {
					pos = append(pos, p)
					off = append(off, int32(len(tables)))
					owner = append(owner, si)
				}
				tables = append(tables, s.table...)
			}
			width := heads * hd
			q := randSlice(r, len(pos)*width)
			for _, c := range levels(t) {
				out := make([]float32, len(q))
				c.Attend(out, q, attention(pos, off, tables))
				for i := range pos {
					s := seqs[owner[i]]
					// The same token alone in a call.
					o1 := make([]float32, width)
					c.Attend(o1, q[i*width:(i+1)*width], attention([]int32{pos[i]}, []int32{0}, s.table))
					for d := range o1 {
						require.Equal(t, math.Float32bits(o1[d]), math.Float32bits(out[i*width+d]),
							"level %v threads %d token %d (seq %d, position %d) element %d: in the call vs alone",
							c.Level(), c.Threads(), i, owner[i], pos[i], d)
					}
					if c.Threads() != 1 {
						continue
					}
					for h := 0; h < heads; h++ {
						want := attendFloat64(q[i*width+h*hd:i*width+(h+1)*hd], kc, vc, s.table, bs, int(pos[i])+1,
							kvHeads, h/(heads/kvHeads), scale)
						for d := range want {
							require.InDelta(t, want[d], float64(out[i*width+h*hd+d]), 1e-5, "level %v token %d head %d", c.Level(), i, h)
						}
					}
				}
			}
		})
	}
}
