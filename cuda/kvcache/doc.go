// Package kvcache manages the blocks of a paged KV cache: which physical
// block holds which positions of which sequence, and which full blocks can
// be shared between sequences as a prefix cache.
//
// A full block is identified by a 64-bit hash chained over all tokens up to
// its end (hash/maphash with a per-process random seed). On a hit the
// block's own tokens are compared exactly and its prefix by the chained hash
// of the block before it, so sequences share a block only when their whole
// prefixes are equal (up to a 64-bit hash collision, ~n²/2⁶⁴ for n cached
// blocks). Two sequences that computed the same prefix independently can
// both be continued by a third: the chain links hashes, not block ids.
// Blocks are reference counted; a released block keeps its contents and
// stays findable until it is reused, least recently released first (LRU).
//
//	m := kvcache.New(1024, 16)
//	t, cached, err := m.Acquire(prompt)  // reuses cached full blocks
//	// ... compute KV for positions [cached, len(prompt)) into t.Blocks ...
//	m.Commit(t, prompt, len(prompt))     // publish the now-full blocks
//	m.Release(t)
package kvcache
