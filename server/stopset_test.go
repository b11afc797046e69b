package server

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStopSetLookupIsConstant: a lookup compares at most fewStops list
// elements whatever the list's length (a scan of the list, as the engine
// and the stream path did, compares all of them for every token), and
// answers as the scan does.
func TestStopSetLookupIsConstant(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 3, fewStops, fewStops + 1, 1000, MaxStopTokenIDs} {
		for _, top := range []int32{300, 151_936, bitmapIDs + 5, 1<<31 - 1} {
			ids := make([]int32, n)
			for i := range ids {
				ids[i] = rng.Int32N(top)
			}
			s := NewStopSet(ids)
			probes := append(slices.Clone(ids[:min(n, 64)]), 0, 1, top-1, -1, 1<<31-1)
			for range 64 {
				probes = append(probes, rng.Int32N(top))
			}
			for _, id := range probes {
				found, compared := s.lookup(id)
				require.Equal(t, slices.Contains(ids, id), found, "n=%d top=%d id=%d", n, top, id)
				require.LessOrEqual(t, compared, fewStops, "n=%d: a lookup compares at most %d ids", n, fewStops)
			}
			if n > fewStops && top <= bitmapIDs {
				require.LessOrEqual(t, len(s.bits), bitmapIDs/64, "the bitmap is bounded by the ids, not the list")
			}
		}
	}
	var zero StopSet
	require.False(t, zero.Has(0))
}
