package tokenizer

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer/jinja"
)

// maxCachedToolSets bounds the tool-value cache. Agent loops use a handful
// of tool sets (one per agent, a few per-sample subsets); a caller that
// builds a new set for every call only ever refills the cache.
const maxCachedToolSets = 256

// toolCache keeps the template values of tool schemas. Converting a schema
// means parsing its parameters JSON into ordered dicts, which used to be
// most of the cost of an agent-loop turn; the schemas of a trajectory do
// not change between its turns, and usually not between trajectories.
//
// Entries are found by a hash of the schemas' content and used only when
// that content is equal to a private copy kept in the entry, so a caller
// that reuses or mutates a []chat.ToolSchema in place always gets values
// for what the slice holds now. The cached values are shared by concurrent
// renders, which is safe because templates run in an immutable sandbox
// (jinja refuses mutating methods) and rendering never writes to values.
type toolCache struct {
	seed    maphash.Seed
	mu      sync.RWMutex
	entries map[uint64]*toolsEntry
	// last is the entry used last: an agent loop asks for the same tools
	// every turn, and comparing with one entry is cheaper than hashing.
	last atomic.Pointer[toolsEntry]
}

type toolsEntry struct {
	schemas []chat.ToolSchema // deep copy of the converted schemas
	value   []any
}

func newToolCache() *toolCache {
	return &toolCache{seed: maphash.MakeSeed(), entries: make(map[uint64]*toolsEntry)}
}

// toolsValue converts tools to the template's "tools" list: nil (None) when
// tools is nil, otherwise a list of dicts in the shape chat.ToolSchema
// writes.
func (t *Tokenizer) toolsValue(tools []chat.ToolSchema) ([]any, error) {
	if tools == nil {
		return nil, nil
	}
	c := t.toolCache
	if c == nil || len(tools) == 0 {
		return convertTools(tools)
	}
	if e := c.last.Load(); e != nil && equalSchemas(e.schemas, tools) {
		return e.value, nil
	}
	h := c.hash(tools)
	c.mu.RLock()
	e := c.entries[h]
	c.mu.RUnlock()
	if e != nil && equalSchemas(e.schemas, tools) {
		c.last.Store(e)
		return e.value, nil
	}
	v, err := convertTools(tools)
	if err != nil {
		return nil, err
	}
	// Frozen, the values also keep their tojson text, which templates
	// such as Qwen3's write for every tool on every render.
	jinja.Freeze(v)
	e = &toolsEntry{schemas: cloneSchemas(tools), value: v}
	c.mu.Lock()
	if len(c.entries) >= maxCachedToolSets {
		clear(c.entries)
	}
	c.entries[h] = e
	c.mu.Unlock()
	c.last.Store(e)
	return v, nil
}

func convertTools(tools []chat.ToolSchema) ([]any, error) {
	out := make([]any, len(tools))
	for i, s := range tools {
		v, err := toolValue(s)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: tools[%d] %q: %w", i, s.Function.Name, err)
		}
		out[i] = v
	}
	return out, nil
}

func (c *toolCache) hash(tools []chat.ToolSchema) uint64 {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var n [1]byte
	for _, s := range tools {
		// Lengths first, so that no two different field sequences hash
		// the same bytes; a collision would only cost a cache miss.
		writeLen(&h, len(s.Type), len(s.Function.Name), len(s.Function.Description), len(s.Function.Parameters))
		h.WriteString(s.Type)
		h.WriteString(s.Function.Name)
		h.WriteString(s.Function.Description)
		h.Write(s.Function.Parameters)
		switch {
		case s.Function.Strict == nil:
			n[0] = 0
		case *s.Function.Strict:
			n[0] = 1
		default:
			n[0] = 2
		}
		h.Write(n[:])
	}
	return h.Sum64()
}

func writeLen(h *maphash.Hash, ns ...int) {
	var b [8]byte
	for _, n := range ns {
		for i := range b {
			b[i] = byte(n >> (8 * i))
		}
		h.Write(b[:])
	}
}

func equalSchemas(a, b []chat.ToolSchema) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Function.Name != y.Function.Name || x.Function.Description != y.Function.Description ||
			!bytes.Equal(x.Function.Parameters, y.Function.Parameters) ||
			(x.Function.Strict == nil) != (y.Function.Strict == nil) ||
			(x.Function.Strict != nil && *x.Function.Strict != *y.Function.Strict) {
			return false
		}
	}
	return true
}

// cloneSchemas copies everything equalSchemas reads, so that later changes
// to the caller's slice cannot change the entry's key.
func cloneSchemas(tools []chat.ToolSchema) []chat.ToolSchema {
	out := make([]chat.ToolSchema, len(tools))
	for i, s := range tools {
		s.Function.Parameters = bytes.Clone(s.Function.Parameters)
		if s.Function.Strict != nil {
			v := *s.Function.Strict
			s.Function.Strict = &v
		}
		out[i] = s
	}
	return out
}
