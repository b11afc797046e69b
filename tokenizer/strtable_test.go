package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStrTableIsAMap drives the builder and the finished table with random
// sets (many repeated keys, "" included, growth past the first size) and
// compares every lookup with a Go map given the same operations.
func TestStrTableIsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 100, 5000} {
		b := newStrTableBuilder(n / 4) // grows
		want := map[string]int32{}
		key := func() string {
			if rng.IntN(50) == 0 {
				return ""
			}
			return fmt.Sprintf("k%d\x00é", rng.IntN(n+1))
		}
		for i := 0; i < 2*n; i++ {
			k, v := key(), int32(rng.IntN(1<<20))
			_, had := want[k]
			require.Equal(t, had, b.set(k, v))
			want[k] = v
			q := key()
			gv, gok := b.get(q)
			wv, wok := want[q]
			require.Equal(t, wok, gok)
			require.Equal(t, wv, gv)
			bv, bok := b.getBytes([]byte(q))
			require.Equal(t, wok, bok)
			require.Equal(t, wv, bv)
		}
		require.Equal(t, len(want), b.len())
		tab := b.finish()
		require.Equal(t, len(want), tab.len())
		for k, v := range want {
			got, ok := tab.get(k)
			require.True(t, ok, k)
			require.Equal(t, v, got)
		}
		for i := 0; i < 100; i++ {
			_, ok := tab.get(fmt.Sprintf("absent%d", i))
			require.False(t, ok)
		}
	}
	var empty strTable
	_, ok := empty.get("x")
	require.False(t, ok)
}

// TestVocabularyTables checks the loaded tables against each other: every
// id's token maps back to the id, and the model vocabulary holds every
// single byte.
func TestVocabularyTables(t *testing.T) {
	tok := qwen(t)
	n := 0
	for id := 0; id < tok.VocabSize(); id++ {
		s, ok := tok.Token(int32(id))
		if !ok {
			continue
		}
		n++
		back, ok := tok.TokenID(s)
		require.True(t, ok, "%q", s)
		require.Equal(t, int32(id), back, "%q", s)
	}
	require.Equal(t, n, tok.tokenIDs.len())
	require.Nil(t, tok.tokenToID)
	require.Nil(t, tok.idToToken)
	for b := 0; b < 256; b++ {
		require.GreaterOrEqual(t, tok.model.byteIDs[b], int32(0))
	}
}
