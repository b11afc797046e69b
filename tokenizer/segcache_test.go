package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// segmentTexts are long texts, alone and between added tokens, some
// sharing segments.
func segmentTexts(t testing.TB) []string {
	var out []string
	for i, p := range benchCorpus(t) {
		out = append(out, p, "<|im_start|>system\n"+p+"<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n")
		if i > 0 {
			out = append(out, out[0][:300]+p[:min(len(p), 700)]) // a cached prefix followed by more text
		}
		if len(out) > 120 {
			break
		}
	}
	return out
}

// TestSegmentCacheMatchesUncached encodes every text three times (a miss
// that notes the text, a miss that caches it, a hit) with the cache and
// compares with the tokenizer without it, and checks the encode goldens
// again through the cache.
func TestSegmentCacheMatchesUncached(t *testing.T) {
	tok := qwen(t)
	uncached := *tok
	uncached.segCache = nil
	cached := *tok
	cached.segCache = newSegmentCache()
	for _, s := range segmentTexts(t) {
		want := uncached.Encode(s)
		require.Equal(t, want, cached.Encode(s))
		require.Equal(t, want, cached.Encode(s))
		require.Equal(t, want, cached.Encode(s), "cache hit of %.60q", s)
	}
	require.NotEmpty(t, cached.segCache.entries)

	type golden struct {
		Text string  `json:"text"`
		IDs  []int32 `json:"ids"`
	}
	for _, g := range readJSONL[golden](t, "testdata/qwen3_encode.jsonl") {
		long := strings.Repeat(g.Text+" ", minCachedSegment/(len(g.Text)+1)+1)
		want := uncached.Encode(long)
		for range 3 {
			require.Equal(t, want, cached.Encode(long))
		}
	}
}

// TestSegmentCacheBounds fills the cache past its bound: results stay right
// and the cache stays bounded.
func TestSegmentCacheBounds(t *testing.T) {
	tok := qwen(t)
	uncached := *tok
	uncached.segCache = nil
	cached := *tok
	cached.segCache = newSegmentCache()
	base := strings.Repeat("The quick brown fox jumps over the lazy dog. ", 8)
	for i := 0; i < 2*maxSegmentEntries+5; i++ {
		s := fmt.Sprintf("%s%d", base, i)
		require.Equal(t, uncached.Encode(s), cached.Encode(s))
		require.Equal(t, uncached.Encode(s), cached.Encode(s)) // seen twice: cached
		cached.segCache.mu.RLock()
		n, b := len(cached.segCache.entries), cached.segCache.bytes
		cached.segCache.mu.RUnlock()
		require.LessOrEqual(t, n, maxSegmentEntries)
		require.LessOrEqual(t, b, maxSegmentBytes)
	}
	short := "short text stays out of the cache"
	cached.segCache = newSegmentCache()
	cached.Encode(short)
	cached.Encode(short)
	require.Empty(t, cached.segCache.entries)
	once := base + "seen once"
	cached.Encode(once)
	require.Empty(t, cached.segCache.entries, "a text seen once is not cached")
	// The returned ids are the caller's: changing them must not change
	// what the cache gives next time.
	cached.Encode(base)
	cached.Encode(base)
	require.Len(t, cached.segCache.entries, 1)
	ids := cached.Encode(base)
	want := append([]int32(nil), ids...)
	for i := range ids {
		ids[i] = -1
	}
	require.Equal(t, want, cached.Encode(base))
}

// TestSegmentCacheConcurrent encodes overlapping texts from several
// goroutines (run with -race).
func TestSegmentCacheConcurrent(t *testing.T) {
	tok := qwen(t)
	uncached := *tok
	uncached.segCache = nil
	cached := *tok
	cached.segCache = newSegmentCache()
	texts := segmentTexts(t)[:40]
	want := make([][]int32, len(texts))
	for i, s := range texts {
		want[i] = uncached.Encode(s)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range 3 * len(texts) {
				i := (k*7 + g) % len(texts)
				if got := cached.Encode(texts[i]); fmt.Sprint(got) != fmt.Sprint(want[i]) {
					errs[g] = fmt.Errorf("text %d differs", i)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}
