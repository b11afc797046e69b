package tokenizer

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"unicode/utf8"
)

// bpe is the BPE model of tokenizer.json. In byte-level mode (a ByteLevel
// pre-tokenizer is present) it works directly on raw bytes: the vocabulary
// is stored un-mapped, so no per-call byte→rune mapping is needed. Otherwise
// the initial symbols are the UTF-8 characters of the word.
type bpe struct {
	vocab        strTable // model-space text → id
	merges       mergeTable
	byteIDs      [256]int32 // byte-level: id of each single byte, -1 if absent
	byteLevel    bool
	ignoreMerges bool
	unk          int32 // -1 when unk_token is not set
	fuseUnk      bool
	byteFallback bool
	fallbackIDs  [256]int32 // byte_fallback: id of "<0xXX>", -1 if absent
	cache        wordCache
}

// maxCachedWord bounds the words kept in the cache: long words are rare and
// would let a single adversarial input fill memory.
const maxCachedWord = 64

// encodeWord appends the ids of one pre-tokenized word.
func (m *bpe) encodeWord(dst []int32, w string) []int32 {
	if len(w) == 0 {
		return dst
	}
	if len(w) == 1 && m.byteLevel && m.byteIDs[w[0]] >= 0 && !m.ignoreMerges {
		// What tokenize returns for a known single byte, without the
		// cache's locking and hashing.
		return append(dst, m.byteIDs[w[0]])
	}
	if len(w) <= maxCachedWord {
		if ids, ok := m.cache.get(w); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = m.tokenize(dst, w)
	if len(w) <= maxCachedWord {
		m.cache.put(w, dst[start:])
	}
	return dst
}

func (m *bpe) tokenize(dst []int32, w string) []int32 {
	if m.ignoreMerges {
		if id, ok := m.vocab.get(w); ok {
			return append(dst, id)
		}
	}
	if len(w) == 1 && m.byteLevel && m.byteIDs[w[0]] >= 0 {
		return append(dst, m.byteIDs[w[0]])
	}
	var buf [64]int32
	syms := buf[:0]
	if len(w) > len(buf) {
		syms = make([]int32, 0, len(w))
	}
	syms = m.initialSymbols(syms, w)
	if len(syms) <= 48 {
		syms = m.mergeSmall(syms)
	} else {
		syms = m.mergeHeap(syms)
	}
	return append(dst, syms...)
}

// initialSymbols splits w into its starting symbols: bytes or characters,
// with unk and byte_fallback handled as HF's BPE::merge_word does.
func (m *bpe) initialSymbols(syms []int32, w string) []int32 {
	if m.byteLevel {
		for i := 0; i < len(w); i++ {
			if id := m.byteIDs[w[i]]; id >= 0 {
				syms = append(syms, id)
			} else {
				syms = m.unknown(syms, w[i:i+1], i > 0 && m.byteIDs[w[i-1]] < 0)
			}
		}
		return syms
	}
	prevUnk := false
	for i := 0; i < len(w); {
		_, size := utf8.DecodeRuneInString(w[i:])
		ch := w[i : i+size]
		i += size
		if id, ok := m.vocab.get(ch); ok {
			syms = append(syms, id)
			prevUnk = false
			continue
		}
		syms = m.unknown(syms, ch, prevUnk)
		prevUnk = true
	}
	return syms
}

// unknown handles a symbol missing from the vocabulary: byte fallback
// tokens if all exist, else unk (fused with a preceding unk if fuse_unk),
// else — as in HF — the symbol is dropped.
func (m *bpe) unknown(syms []int32, ch string, prevUnk bool) []int32 {
	if m.byteFallback {
		ok := true
		for i := 0; i < len(ch); i++ {
			if m.fallbackIDs[ch[i]] < 0 {
				ok = false
			}
		}
		if ok {
			for i := 0; i < len(ch); i++ {
				syms = append(syms, m.fallbackIDs[ch[i]])
			}
			return syms
		}
	}
	if m.unk < 0 {
		return syms
	}
	if m.fuseUnk && prevUnk && len(syms) > 0 && syms[len(syms)-1] == m.unk {
		return syms
	}
	return append(syms, m.unk)
}

// mergeSmall applies merges by lowest rank, leftmost first, scanning the
// symbol list each step: for short words this beats a heap. It gives the
// same result as HF's heap (ordered by rank, then position).
func (m *bpe) mergeSmall(syms []int32) []int32 {
	if len(syms) < 2 {
		return syms
	}
	var rbuf, nbuf [64]int32
	ranks, news := rbuf[:0], nbuf[:0]
	if len(syms)-1 > len(rbuf) {
		ranks, news = make([]int32, 0, len(syms)-1), make([]int32, 0, len(syms)-1)
	}
	ranks, news = ranks[:len(syms)-1], news[:len(syms)-1]
	for i := range ranks {
		ranks[i], news[i] = m.merges.get(syms[i], syms[i+1])
	}
	for len(syms) > 1 {
		best := -1
		bestRank := int32(noMerge)
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		syms[best] = news[best]
		copy(syms[best+1:], syms[best+2:])
		syms = syms[:len(syms)-1]
		copy(ranks[best:], ranks[best+1:])
		copy(news[best:], news[best+1:])
		ranks = ranks[:len(ranks)-1]
		news = news[:len(news)-1]
		if best > 0 {
			ranks[best-1], news[best-1] = m.merges.get(syms[best-1], syms[best])
		}
		if best < len(ranks) {
			ranks[best], news[best] = m.merges.get(syms[best], syms[best+1])
		}
	}
	return syms
}

// mergeHeap is HF's Word::merge_all: a min-heap of candidate merges ordered
// by (rank, position) over a linked list of symbols; stale entries are
// skipped. O(n log n), used for long words so that adversarial input (a
// 10 MB run of letters) stays fast. The heap is a hand-written 4-ary heap of
// packed rank<<32|position keys: on huge words it is memory-bound, and
// this is 3× faster than container/heap of structs.
func (m *bpe) mergeHeap(syms []int32) []int32 {
	n := len(syms)
	prev := make([]int32, n)
	next := make([]int32, n)
	for i := range syms {
		prev[i] = int32(i - 1)
		next[i] = int32(i + 1)
	}
	next[n-1] = -1
	h := make(mergeHeap, 0, n) // n-1 initial entries; append grows it when pushes outrun pops
	for i := 0; i+1 < n; i++ {
		if r, _ := m.merges.get(syms[i], syms[i+1]); r != noMerge {
			h = append(h, candKey(r, int32(i)))
		}
	}
	h.init()
	for len(h) > 0 {
		top := h.pop()
		p := int32(top & 0xffffffff)
		nx := next[p]
		if syms[p] < 0 || nx < 0 {
			continue // merged into its left neighbour, or last symbol
		}
		// A pair's rank identifies it, so a changed rank means stale.
		r, id := m.merges.get(syms[p], syms[nx])
		if uint64(r) != top>>32 {
			continue
		}
		syms[p] = id
		syms[nx] = -1
		next[p] = next[nx]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if pp := prev[p]; pp >= 0 {
			if r, _ := m.merges.get(syms[pp], syms[p]); r != noMerge {
				h.push(candKey(r, pp))
			}
		}
		if nn := next[p]; nn >= 0 {
			if r, _ := m.merges.get(syms[p], syms[nn]); r != noMerge {
				h.push(candKey(r, p))
			}
		}
	}
	out := syms[:0]
	for i := int32(0); i >= 0; i = next[i] {
		out = append(out, syms[i])
	}
	return out
}

func candKey(rank, pos int32) uint64 { return uint64(uint32(rank))<<32 | uint64(uint32(pos)) }

// mergeHeap is a 4-ary min-heap of candidate keys.
type mergeHeap []uint64

func (h mergeHeap) init() {
	for i := (len(h) - 2) / 4; i >= 0; i-- {
		h.down(i)
	}
}

func (h *mergeHeap) push(k uint64) {
	*h = append(*h, k)
	q := *h
	i := len(q) - 1
	for i > 0 {
		parent := (i - 1) / 4
		if q[parent] <= k {
			break
		}
		q[i] = q[parent]
		i = parent
	}
	q[i] = k
}

func (h *mergeHeap) pop() uint64 {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	*h = q[:last]
	h.down(0)
	return top
}

func (h mergeHeap) down(i int) {
	n := len(h)
	if n == 0 {
		return
	}
	k := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		best, bk := c, h[c]
		for j := c + 1; j < c+4 && j < n; j++ {
			if h[j] < bk {
				best, bk = j, h[j]
			}
		}
		if k <= bk {
			break
		}
		h[i] = bk
		i = best
	}
	h[i] = k
}

// noMerge is the rank of a pair that has no merge.
const noMerge = 1<<31 - 1

// mergeTable maps a pair of ids to (rank, merged id) with open addressing:
// it is the innermost lookup of BPE and a Go map costs about twice as much.
type mergeTable struct {
	keys  []uint64
	ranks []int32
	ids   []int32
	mask  uint64
}

const emptyKey = ^uint64(0)

func newMergeTable(n int) mergeTable {
	size := 1
	for size < n*2 {
		size <<= 1
	}
	t := mergeTable{keys: make([]uint64, size), ranks: make([]int32, size), ids: make([]int32, size), mask: uint64(size - 1)}
	for i := range t.keys {
		t.keys[i] = emptyKey
	}
	return t
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

func slot(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> 17 }

// add keeps the first (lowest-rank) entry of a pair, as HF does when a
// merges list repeats a pair.
func (t *mergeTable) add(a, b, rank, id int32) {
	k := pairKey(a, b)
	for i := slot(k) & t.mask; ; i = (i + 1) & t.mask {
		if t.keys[i] == emptyKey {
			t.keys[i], t.ranks[i], t.ids[i] = k, rank, id
			return
		}
		if t.keys[i] == k {
			return
		}
	}
}

func (t *mergeTable) get(a, b int32) (rank, id int32) {
	if len(t.keys) == 0 {
		return noMerge, -1
	}
	k := pairKey(a, b)
	for i := slot(k) & t.mask; ; i = (i + 1) & t.mask {
		switch t.keys[i] {
		case k:
			return t.ranks[i], t.ids[i]
		case emptyKey:
			return noMerge, -1
		}
	}
}

// wordCache memoizes word → ids. It is sharded to keep lock contention low
// when many goroutines encode at once; a full shard is cleared rather than
// evicted entry by entry (cheap, and the hot words come back at once).
type wordCache struct {
	seed   maphash.Seed
	shards [16]cacheShard
}

type cacheShard struct {
	mu sync.RWMutex
	m  map[string][]int32
}

const shardCapacity = 8192

func (c *wordCache) shard(w string) *cacheShard {
	return &c.shards[maphash.String(c.seed, w)&15]
}

func (c *wordCache) get(w string) ([]int32, bool) {
	s := c.shard(w)
	s.mu.RLock()
	ids, ok := s.m[w]
	s.mu.RUnlock()
	return ids, ok
}

func (c *wordCache) put(w string, ids []int32) {
	s := c.shard(w)
	cp := make([]int32, len(ids))
	copy(cp, ids)
	s.mu.Lock()
	if s.m == nil || len(s.m) >= shardCapacity {
		s.m = make(map[string][]int32, 256)
	}
	s.m[strings.Clone(w)] = cp // w may point into a large input: don't keep it alive
	s.mu.Unlock()
}

func (c *wordCache) init() { c.seed = maphash.MakeSeed() }

// String keeps the type printable in test failures.
func (m *bpe) String() string { return fmt.Sprintf("bpe(%d tokens)", m.vocab.len()) }
