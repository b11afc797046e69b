package tokenizer

import (
	"hash/maphash"
	"math/bits"
)

// The vocabulary tables of a tokenizer hold hundreds of thousands of
// strings. As Go maps and string slices they are that many pointers, which
// every garbage collection cycle scans again: with the Qwen3 vocabulary
// loaded that was most of the cost of a cycle, several microseconds per
// agent-loop turn. The tables below keep all text in one string and
// everything else in pointer-free slices, so the collector skips them.

// strList is a list of strings stored in one string.
type strList struct {
	text string
	off  []uint32 // string i is text[off[i]:off[i+1]]
}

func newStrList(ss []string) strList {
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	buf := make([]byte, 0, n)
	off := make([]uint32, len(ss)+1)
	for i, s := range ss {
		buf = append(buf, s...)
		off[i+1] = uint32(len(buf))
	}
	return strList{text: string(buf), off: off}
}

func (l *strList) len() int { return len(l.off) - 1 }

func (l *strList) at(i int) string { return l.text[l.off[i]:l.off[i+1]] }

// strTable is a read-only map from string to int32 in open addressing.
type strTable struct {
	keys  strList
	vals  []int32
	slots []uint32 // key index + 1; 0 is an empty slot
	mask  uint32
	seed  maphash.Seed
}

func (t *strTable) get(k string) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	for i := uint32(maphash.String(t.seed, k)) & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i]
		if e == 0 {
			return 0, false
		}
		if t.keys.at(int(e-1)) == k {
			return t.vals[e-1], true
		}
	}
}

// len is the number of keys.
func (t *strTable) len() int { return len(t.vals) }

// strTableBuilder is a strTable being filled: it behaves as a Go map of
// string to int32 (set overwrites) and becomes a strTable without
// rehashing.
type strTableBuilder struct {
	keys  []string
	vals  []int32
	slots []uint32
	mask  uint32
	seed  maphash.Seed
}

func newStrTableBuilder(n int) *strTableBuilder {
	b := &strTableBuilder{seed: maphash.MakeSeed(), keys: make([]string, 0, n), vals: make([]int32, 0, n)}
	b.resize(1 << bits.Len(uint(2*n|1)))
	return b
}

func (b *strTableBuilder) resize(size int) {
	b.slots = make([]uint32, size)
	b.mask = uint32(size - 1)
	for i, k := range b.keys {
		b.slots[b.find(k)] = uint32(i) + 1
	}
}

// find returns the slot of k: where it is, or the empty slot it would go
// to.
func (b *strTableBuilder) find(k string) uint32 {
	for i := uint32(maphash.String(b.seed, k)) & b.mask; ; i = (i + 1) & b.mask {
		e := b.slots[i]
		if e == 0 || b.keys[e-1] == k {
			return i
		}
	}
}

func (b *strTableBuilder) get(k string) (int32, bool) {
	e := b.slots[b.find(k)]
	if e == 0 {
		return 0, false
	}
	return b.vals[e-1], true
}

// getBytes is get(string(k)) without converting k.
func (b *strTableBuilder) getBytes(k []byte) (int32, bool) {
	for i := uint32(maphash.Bytes(b.seed, k)) & b.mask; ; i = (i + 1) & b.mask {
		e := b.slots[i]
		if e == 0 {
			return 0, false
		}
		if b.keys[e-1] == string(k) {
			return b.vals[e-1], true
		}
	}
}

// set maps k to v and reports whether k was already there.
func (b *strTableBuilder) set(k string, v int32) (existed bool) {
	s := b.find(k)
	if e := b.slots[s]; e != 0 {
		b.vals[e-1] = v
		return true
	}
	b.keys, b.vals = append(b.keys, k), append(b.vals, v)
	b.slots[s] = uint32(len(b.keys))
	if 2*len(b.keys) > len(b.slots) {
		b.resize(2 * len(b.slots))
	}
	return false
}

func (b *strTableBuilder) len() int { return len(b.keys) }

// finish returns the table; b must not be used afterwards.
func (b *strTableBuilder) finish() strTable {
	return strTable{keys: newStrList(b.keys), vals: b.vals, slots: b.slots, mask: b.mask, seed: b.seed}
}
