// Package kvcache manages the blocks of a paged KV cache: which physical
// block holds which positions of which sequence, and which full blocks can
// be shared between sequences as a prefix cache.
//
// A full block is identified by a hash chained over all tokens up to its
// end, verified exactly on a hit (its own tokens and its parent block), so
// two sequences share a block only when their whole prefixes are equal.
// Blocks are reference counted; a released block keeps its contents and
// stays findable until it is reused, least recently released first (LRU).
//
//	m := kvcache.New(1024, 16)
//	t, cached, err := m.Acquire(prompt)  // reuses cached full blocks
//	// ... compute KV for positions [cached, len(prompt)) into t.Blocks ...
//	m.Commit(t, prompt, len(prompt))     // publish the now-full blocks
//	m.Release(t)
package kvcache
