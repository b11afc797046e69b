package kvcache

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
)

// ErrNoSpace is returned when there are not enough free blocks; nothing was
// changed.
var ErrNoSpace = errors.New("kvcache: not enough free blocks")

type block struct {
	ref    int
	hash   uint64  // chained hash of the prefix ending with this block (valid if cached)
	cached bool    // registered in the prefix index
	parent uint64  // chained hash of the prefix before this block (0 for the first)
	tokens []int32 // this block's tokens, to verify hits exactly
	// free list links (LRU order), valid when ref == 0
	prev, next int32
}

// Manager allocates blocks. It is not safe for concurrent use: the engine's
// scheduler goroutine owns it.
type Manager struct {
	blockSize int
	blocks    []block
	index     map[uint64]int32 // prefix hash → cached block
	seed      maphash.Seed
	head      int32 // least recently released free block, -1 if none
	tail      int32
	nfree     int
}

// Table is one sequence's block table.
type Table struct {
	Blocks []int32
	hashes []uint64 // chained hash per committed full block
}

// New returns a manager of numBlocks blocks of blockSize positions.
func New(numBlocks, blockSize int) *Manager {
	if numBlocks < 0 || blockSize <= 0 || numBlocks > 1<<30 {
		panic(fmt.Sprintf("kvcache: invalid geometry %d×%d", numBlocks, blockSize))
	}
	m := &Manager{blockSize: blockSize, blocks: make([]block, numBlocks), index: map[uint64]int32{},
		seed: maphash.MakeSeed(), head: -1, tail: -1}
	for i := range m.blocks {
		m.pushFree(int32(i))
	}
	return m
}

// BlockSize is the number of positions per block.
func (m *Manager) BlockSize() int { return m.blockSize }

// NumBlocks is the total number of blocks.
func (m *Manager) NumBlocks() int { return len(m.blocks) }

// Free is the number of blocks not referenced by any table (cached or not).
func (m *Manager) Free() int { return m.nfree }

// Cached is the number of blocks in the prefix index.
func (m *Manager) Cached() int { return len(m.index) }

// BlocksFor is the number of blocks needed for n positions.
func (m *Manager) BlocksFor(n int) int { return (n + m.blockSize - 1) / m.blockSize }

func (m *Manager) pushFree(id int32) {
	b := &m.blocks[id]
	b.prev, b.next = m.tail, -1
	if m.tail >= 0 {
		m.blocks[m.tail].next = id
	} else {
		m.head = id
	}
	m.tail = id
	m.nfree++
}

func (m *Manager) unlinkFree(id int32) {
	b := &m.blocks[id]
	if b.prev >= 0 {
		m.blocks[b.prev].next = b.next
	} else {
		m.head = b.next
	}
	if b.next >= 0 {
		m.blocks[b.next].prev = b.prev
	} else {
		m.tail = b.prev
	}
	b.prev, b.next = -1, -1
	m.nfree--
}

// take pops the least recently released free block and forgets its cached
// contents.
func (m *Manager) take() int32 {
	id := m.head
	m.unlinkFree(id)
	b := &m.blocks[id]
	if b.cached {
		if m.index[b.hash] == id {
			delete(m.index, b.hash)
		}
		b.cached = false
	}
	b.ref = 1
	b.parent = 0
	b.tokens = b.tokens[:0]
	return id
}

func (m *Manager) chain(parent uint64, tokens []int32) uint64 {
	var h maphash.Hash
	h.SetSeed(m.seed)
	var buf [8]byte
	for i := range buf {
		buf[i] = byte(parent >> (8 * i))
	}
	h.Write(buf[:])
	for _, t := range tokens {
		h.Write([]byte{byte(t), byte(t >> 8), byte(t >> 16), byte(t >> 24)})
	}
	return h.Sum64()
}

// Acquire returns a table covering len(tokens) positions whose first
// `cached` positions (a whole number of blocks) already hold the KV of
// tokens[:cached], shared from the prefix cache. At least one token is
// always left to compute, so the caller gets logits for the last one. On
// ErrNoSpace nothing changes.
func (m *Manager) Acquire(tokens []int32) (*Table, int, error) {
	bs := m.blockSize
	need := m.BlocksFor(len(tokens))
	var hits []int32
	var hashes []uint64
	parentHash := uint64(0)
	for i := 0; (i+1)*bs <= len(tokens)-1; i++ {
		blk := tokens[i*bs : (i+1)*bs]
		h := m.chain(parentHash, blk)
		id, ok := m.index[h]
		if !ok {
			break
		}
		b := &m.blocks[id]
		if !b.cached || b.parent != parentHash || !slices.Equal(b.tokens, blk) {
			break
		}
		hits = append(hits, id)
		hashes = append(hashes, h)
		parentHash = h
	}
	// Hits already in use by another table cost no free block.
	freeNeeded := need - len(hits)
	for _, id := range hits {
		if m.blocks[id].ref == 0 {
			freeNeeded++
		}
	}
	if freeNeeded > m.nfree {
		return nil, 0, fmt.Errorf("%w: need %d, %d free", ErrNoSpace, freeNeeded, m.nfree)
	}
	t := &Table{Blocks: make([]int32, 0, need), hashes: hashes}
	for _, id := range hits {
		b := &m.blocks[id]
		if b.ref == 0 {
			m.unlinkFree(id)
		}
		b.ref++
		t.Blocks = append(t.Blocks, id)
	}
	for len(t.Blocks) < need {
		t.Blocks = append(t.Blocks, m.take())
	}
	return t, len(hits) * bs, nil
}

// Grow extends t to cover n positions. On ErrNoSpace nothing changes.
func (m *Manager) Grow(t *Table, n int) error {
	need := m.BlocksFor(n) - len(t.Blocks)
	if need <= 0 {
		return nil
	}
	if need > m.nfree {
		return fmt.Errorf("%w: need %d, %d free", ErrNoSpace, need, m.nfree)
	}
	for ; need > 0; need-- {
		t.Blocks = append(t.Blocks, m.take())
	}
	return nil
}

// Commit publishes the full blocks of t whose KV is now computed, i.e. the
// blocks within tokens[:computed], in the prefix cache. tokens is the
// sequence t belongs to.
func (m *Manager) Commit(t *Table, tokens []int32, computed int) {
	bs := m.blockSize
	for i := len(t.hashes); (i+1)*bs <= computed && i < len(t.Blocks); i++ {
		parentHash := uint64(0)
		if i > 0 {
			parentHash = t.hashes[i-1]
		}
		blk := tokens[i*bs : (i+1)*bs]
		h := m.chain(parentHash, blk)
		t.hashes = append(t.hashes, h)
		id := t.Blocks[i]
		b := &m.blocks[id]
		if b.cached {
			continue // a shared hit, already published
		}
		if _, dup := m.index[h]; dup {
			continue // the same prefix computed by another sequence; keep that one
		}
		b.cached, b.hash, b.parent = true, h, parentHash
		b.tokens = append(b.tokens[:0], blk...)
		m.index[h] = id
	}
}

// Release drops t's references. Blocks no table uses become free but keep
// their cached contents until reused.
func (m *Manager) Release(t *Table) {
	// Release the tail first so that, among a sequence's blocks, the prefix
	// (most shareable) is evicted last.
	for i := len(t.Blocks) - 1; i >= 0; i-- {
		id := t.Blocks[i]
		b := &m.blocks[id]
		if b.ref <= 0 {
			panic(fmt.Sprintf("kvcache: block %d released more often than acquired", id))
		}
		b.ref--
		if b.ref == 0 {
			m.pushFree(id)
		}
	}
	t.Blocks, t.hashes = nil, nil
}

// Reset forgets every cached prefix (after a weight update the stored KV
// is stale). Referenced blocks stay allocated.
func (m *Manager) Reset() {
	for i := range m.blocks {
		m.blocks[i].cached = false
	}
	clear(m.index)
}

// Check verifies the manager's invariants: reference counts match the
// given live tables and the free list holds exactly the unreferenced
// blocks. Tests and the engine's accounting use it.
func (m *Manager) Check(live []*Table) error {
	refs := make([]int, len(m.blocks))
	for _, t := range live {
		for _, id := range t.Blocks {
			refs[id]++
		}
	}
	n := 0
	seen := make([]bool, len(m.blocks))
	for id := m.head; id >= 0; id = m.blocks[id].next {
		if seen[id] {
			return fmt.Errorf("kvcache: free list cycles at block %d", id)
		}
		seen[id] = true
		n++
	}
	if n != m.nfree {
		return fmt.Errorf("kvcache: free list has %d blocks, counter says %d", n, m.nfree)
	}
	for id, b := range m.blocks {
		if b.ref != refs[id] {
			return fmt.Errorf("kvcache: block %d has ref %d, live tables hold %d", id, b.ref, refs[id])
		}
		if (b.ref == 0) != seen[id] {
			return fmt.Errorf("kvcache: block %d ref %d but on free list = %v", id, b.ref, seen[id])
		}
	}
	for h, id := range m.index {
		if b := m.blocks[id]; !b.cached || b.hash != h {
			return fmt.Errorf("kvcache: index entry for block %d is stale", id)
		}
	}
	return nil
}
