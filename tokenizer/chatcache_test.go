package tokenizer

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer/jinja"
)

// deltaStep is one call of a changing-tools sequence: a delta and a prompt
// rendered with the tools as they are at that step.
type deltaStep struct {
	name  string
	tools func() []chat.ToolSchema
}

type deltaOut struct {
	delta, prompt []int32
	text          string
}

// cacheSteps builds a sequence of tool sets that a cache keyed by anything
// less than the full content would confuse: reordering, a changed
// description, strict toggled, an empty list, nil, and a slice whose
// parameter bytes are edited in place between calls.
func cacheSteps(t testing.TB) ([]deltaStep, func()) {
	t.Helper()
	schema := func(name, desc, params string, strict *bool) chat.ToolSchema {
		return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{Name: name, Description: desc, Parameters: json.RawMessage(params), Strict: strict}}
	}
	yes, no := true, false
	f := schema("f", "Looks up a city.", `{"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer", "default": 1.0}}, "required": ["city"]}`, nil)
	g := schema("g", "Adds.", `{"type":"object","properties":{"b":{"type":"number"},"a":{"type":"number"}}}`, nil)
	// shared is reused across steps and edited in place, as a caller that
	// keeps one []chat.ToolSchema and rewrites it might do.
	shared := []chat.ToolSchema{schema("h", "Echoes.", `{"type":"object","properties":{"text":{"type":"string"}}}`, nil)}
	mutate := func() {
		p := shared[0].Function.Parameters
		i := len(`{"type":"object","properties":{"`)
		if p[i] == 't' {
			copy(p[i:], "wext")
		} else {
			copy(p[i:], "text")
		}
	}
	steps := []deltaStep{
		{"f", func() []chat.ToolSchema { return []chat.ToolSchema{f} }},
		{"f,g", func() []chat.ToolSchema { return []chat.ToolSchema{f, g} }},
		{"g,f", func() []chat.ToolSchema { return []chat.ToolSchema{g, f} }},
		{"f described differently", func() []chat.ToolSchema {
			return []chat.ToolSchema{schema("f", "Looks up a town.", string(f.Function.Parameters), nil)}
		}},
		{"f strict", func() []chat.ToolSchema {
			return []chat.ToolSchema{schema("f", f.Function.Description, string(f.Function.Parameters), &yes)}
		}},
		{"f not strict", func() []chat.ToolSchema {
			return []chat.ToolSchema{schema("f", f.Function.Description, string(f.Function.Parameters), &no)}
		}},
		{"f without type", func() []chat.ToolSchema {
			s := f
			s.Type = ""
			return []chat.ToolSchema{s}
		}},
		{"empty", func() []chat.ToolSchema { return []chat.ToolSchema{} }},
		{"nil", func() []chat.ToolSchema { return nil }},
		{"shared", func() []chat.ToolSchema { return shared }},
	}
	return steps, mutate
}

func runDeltaStep(tok *Tokenizer, tools []chat.ToolSchema) (deltaOut, error) {
	user := chat.Message{Role: chat.RoleUser, Content: "Weather in Paris?"}
	call := chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function",
		Function: chat.FunctionCall{Name: "f", Arguments: `{"city": "Paris", "n": 2}`}}}}
	res := chat.Message{Role: chat.RoleTool, Content: "sunny", ToolCallID: "c1", Name: "f"}
	sys := chat.Message{Role: chat.RoleSystem, Content: "Be brief."}
	var out deltaOut
	var err error
	out.delta, err = tok.EncodeDelta(ChatContext{Messages: []chat.Message{sys, user, call}, Tools: tools, AddGenerationPrompt: true}, []chat.Message{res})
	if err != nil {
		return out, err
	}
	out.prompt, err = tok.EncodeChat(ChatContext{Messages: []chat.Message{sys, user}, Tools: tools, AddGenerationPrompt: true})
	if err != nil {
		return out, err
	}
	out.text, err = tok.ApplyChatTemplate(ChatContext{Messages: []chat.Message{user, call, res}, Tools: tools})
	return out, err
}

// TestToolCacheMatchesUncached checks that the tool-value cache never
// changes a result: every step of a changing-tools sequence, run twice (the
// second pass hits the cache), gives the ids and text of a tokenizer without
// the cache, including after the parameters of a reused slice are edited in
// place.
func TestToolCacheMatchesUncached(t *testing.T) {
	for _, g := range []struct {
		name string
		tok  func(testing.TB) *Tokenizer
	}{{"qwen3", qwen}, {"llama3_1", llama}} {
		t.Run(g.name, func(t *testing.T) {
			tok := g.tok(t)
			uncached := *tok
			uncached.toolCache = nil
			steps, mutate := cacheSteps(t)
			for pass := 0; pass < 3; pass++ {
				for _, s := range steps {
					want, err := runDeltaStep(&uncached, s.tools())
					require.NoError(t, err, "%s (uncached)", s.name)
					got, err := runDeltaStep(tok, s.tools())
					require.NoError(t, err, s.name)
					require.Equal(t, want, got, "pass %d, step %s", pass, s.name)
				}
				if pass == 1 {
					mutate()
				}
			}
		})
	}
}

// TestToolCacheHitsAndInvalidates checks the cache itself: equal content
// gets the same values back, changed content (also in place) new ones, and
// filling the cache past its bound keeps results right.
func TestToolCacheHitsAndInvalidates(t *testing.T) {
	tok := qwen(t)
	params := json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)
	tools := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "x", Parameters: params}}}
	v1, err := tok.toolsValue(tools)
	require.NoError(t, err)
	copied := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "x", Parameters: append(json.RawMessage(nil), params...)}}}
	v2, err := tok.toolsValue(copied)
	require.NoError(t, err)
	require.Same(t, v1[0], v2[0], "equal content in another slice must hit the cache")

	params[len(`{"type":"object","properties":{"`)] = 'y' // in place: same slice, new content
	v3, err := tok.toolsValue(tools)
	require.NoError(t, err)
	require.NotSame(t, v1[0], v3[0])
	want, err := convertTools(tools)
	require.NoError(t, err)
	jinja.Freeze(want) // the cache keeps its values frozen
	require.Equal(t, want, v3)

	for i := 0; i < 2*maxCachedToolSets+3; i++ {
		set := []chat.ToolSchema{{Function: chat.FunctionSchema{Name: fmt.Sprintf("t%d", i), Parameters: params}}}
		got, err := tok.toolsValue(set)
		require.NoError(t, err)
		want, err := convertTools(set)
		require.NoError(t, err)
		jinja.Freeze(want)
		require.Equal(t, want, got)
		tok.toolCache.mu.RLock()
		n := len(tok.toolCache.entries)
		tok.toolCache.mu.RUnlock()
		require.LessOrEqual(t, n, maxCachedToolSets)
	}

	// A hash collision (simulated: another set's entry stored under this
	// set's hash) is caught by the content check.
	other := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "x", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	otherVal, err := convertTools(other)
	require.NoError(t, err)
	tok.toolCache.mu.Lock()
	tok.toolCache.entries[tok.toolCache.hash(tools)] = &toolsEntry{schemas: cloneSchemas(other), value: otherVal}
	tok.toolCache.mu.Unlock()
	v4, err := tok.toolsValue(tools)
	require.NoError(t, err)
	require.Equal(t, want, v4)

	// A bad schema is an error every time, never cached.
	bad := []chat.ToolSchema{{Function: chat.FunctionSchema{Name: "bad", Parameters: json.RawMessage(`{"type":`)}}}
	for i := 0; i < 2; i++ {
		_, err := tok.toolsValue(bad)
		require.ErrorContains(t, err, `tools[0] "bad"`)
	}
}

// TestToolCacheConcurrent runs the changing-tools sequence from several
// goroutines at once against one tokenizer (run with -race): each result
// must equal the uncached one.
func TestToolCacheConcurrent(t *testing.T) {
	tok := qwen(t)
	uncached := *tok
	uncached.toolCache = nil
	steps, _ := cacheSteps(t)
	want := make([]deltaOut, len(steps))
	for i, s := range steps {
		var err error
		want[i], err = runDeltaStep(&uncached, s.tools())
		require.NoError(t, err)
	}
	var g errgroup.Group
	for w := 0; w < 4; w++ {
		g.Go(func() error {
			for k := 0; k < 3*len(steps); k++ {
				i := (k + w) % len(steps)
				got, err := runDeltaStep(tok, steps[i].tools())
				if err != nil {
					return fmt.Errorf("worker %d, step %s: %w", w, steps[i].name, err)
				}
				if !equalOut(got, want[i]) {
					return fmt.Errorf("worker %d, step %s: cached result differs", w, steps[i].name)
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
}

func equalOut(a, b deltaOut) bool {
	return a.text == b.text && fmt.Sprint(a.delta) == fmt.Sprint(b.delta) && fmt.Sprint(a.prompt) == fmt.Sprint(b.prompt)
}
