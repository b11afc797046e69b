package kvcache

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func seq(n int, base int32) []int32 {
	s := make([]int32, n)
	for i := range s {
		s[i] = base + int32(i)
	}
	return s
}

func TestPrefixHitAndLRU(t *testing.T) {
	m := New(10, 4)
	p := seq(10, 0) // 3 blocks, 2 full
	t1, cached, err := m.Acquire(p)
	require.NoError(t, err)
	require.Zero(t, cached)
	require.Len(t, t1.Blocks, 3)
	m.Commit(t1, p, 10)
	require.Equal(t, 2, m.Cached())

	// Same prefix, longer: the 2 full blocks are shared while t1 lives.
	p2 := append(seq(10, 0), 50, 51, 52)
	t2, cached, err := m.Acquire(p2)
	require.NoError(t, err)
	require.Equal(t, 8, cached)
	require.Equal(t, t1.Blocks[:2], t2.Blocks[:2])
	require.Equal(t, 10-3-2, m.Free())
	require.NoError(t, m.Check([]*Table{t1, t2}))

	// An exact whole-block prompt leaves its last block to compute.
	t3, cached, err := m.Acquire(seq(8, 0))
	require.NoError(t, err)
	require.Equal(t, 4, cached)
	require.NoError(t, m.Check([]*Table{t1, t2, t3}))

	// Different first block: no hit even though the second block matches.
	other := append(seq(4, 100), seq(6, 4)...)
	t4, cached, err := m.Acquire(other)
	require.NoError(t, err)
	require.Zero(t, cached)

	m.Release(t1)
	m.Release(t2)
	m.Release(t3)
	m.Release(t4)
	require.Equal(t, 10, m.Free())
	require.NoError(t, m.Check(nil))

	// Released cached blocks still hit until reused.
	t5, cached, err := m.Acquire(p)
	require.NoError(t, err)
	require.Equal(t, 8, cached)
	m.Release(t5)

	// Filling the cache with other data evicts them.
	t6, _, err := m.Acquire(seq(40, 1000))
	require.NoError(t, err)
	_, _, err = m.Acquire(seq(2, 0))
	require.ErrorIs(t, err, ErrNoSpace)
	m.Release(t6)
	t7, cached, err := m.Acquire(p)
	require.NoError(t, err)
	require.Zero(t, cached)
	m.Release(t7)
	require.NoError(t, m.Check(nil))
}

func TestGrowCommitReset(t *testing.T) {
	m := New(4, 2)
	toks := []int32{1, 2, 3}
	tb, _, err := m.Acquire(toks)
	require.NoError(t, err)
	require.Len(t, tb.Blocks, 2)
	require.NoError(t, m.Grow(tb, 4))
	require.Len(t, tb.Blocks, 2)
	toks = append(toks, 4, 5)
	require.NoError(t, m.Grow(tb, 5))
	require.Len(t, tb.Blocks, 3)
	m.Commit(tb, toks, 4)
	require.Equal(t, 2, m.Cached())
	require.ErrorIs(t, m.Grow(tb, 20), ErrNoSpace)
	require.Len(t, tb.Blocks, 3)
	m.Reset()
	require.Zero(t, m.Cached())
	m.Release(tb)
	_, cached, err := m.Acquire(toks)
	require.NoError(t, err)
	require.Zero(t, cached)
}

// TestRandomAccounting runs random acquire/grow/commit/release sequences
// and checks the invariants after every operation.
func TestRandomAccounting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := New(40, 4)
	type live struct {
		t    *Table
		toks []int32
	}
	var lives []live
	tables := func() []*Table {
		var out []*Table
		for _, l := range lives {
			out = append(out, l.t)
		}
		return out
	}
	for step := 0; step < 3000; step++ {
		switch op := r.IntN(4); {
		case op == 0 || len(lives) == 0:
			// prompts from a few shared prefixes
			toks := append(seq(4*r.IntN(4), int32(100*r.IntN(3))), seq(1+r.IntN(9), int32(r.IntN(1000)))...)
			tb, cached, err := m.Acquire(toks)
			if err != nil {
				require.ErrorIs(t, err, ErrNoSpace)
				break
			}
			require.Zero(t, cached%4)
			require.Less(t, cached, len(toks))
			m.Commit(tb, toks, len(toks))
			lives = append(lives, live{tb, toks})
		case op == 1:
			i := r.IntN(len(lives))
			l := &lives[i]
			l.toks = append(l.toks, int32(r.IntN(1000)))
			if err := m.Grow(l.t, len(l.toks)); err != nil {
				l.toks = l.toks[:len(l.toks)-1]
				break
			}
			m.Commit(l.t, l.toks, len(l.toks))
		default:
			i := r.IntN(len(lives))
			m.Release(lives[i].t)
			lives = append(lives[:i], lives[i+1:]...)
		}
		require.NoError(t, m.Check(tables()))
	}
	for _, l := range lives {
		m.Release(l.t)
	}
	require.NoError(t, m.Check(nil))
	require.Equal(t, 40, m.Free())
}

// TestDuplicatePrefixChains: two sequences compute the same first block
// independently (only one copy is indexed); the block after it in the
// other sequence must still be found through the chain.
func TestDuplicatePrefixChains(t *testing.T) {
	m := New(16, 4)
	p := seq(5, 0) // one full block + 1
	a, _, err := m.Acquire(p)
	require.NoError(t, err)
	b, _, err := m.Acquire(p) // nothing committed yet: computes its own copy
	require.NoError(t, err)
	m.Commit(a, p, 5)
	m.Commit(b, p, 5)
	require.Equal(t, 1, m.Cached())
	// b continues into a second full block and publishes it.
	pb := append(seq(5, 0), 100, 101, 102, 103)
	require.NoError(t, m.Grow(b, len(pb)))
	m.Commit(b, pb, 8)
	require.Equal(t, 2, m.Cached())
	c, cached, err := m.Acquire(append(pb, 7))
	require.NoError(t, err)
	require.Equal(t, 8, cached)
	require.Equal(t, a.Blocks[0], c.Blocks[0])
	require.Equal(t, b.Blocks[1], c.Blocks[1])
	require.NoError(t, m.Check([]*Table{a, b, c}))
}
