package parser

import (
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// peerCase is one of the peers' own test cases, ported as data (see
// testdata/peers/peers.py for the fields and how they were read).
type peerCase struct {
	Format     string            `json:"format"`
	Source     string            `json:"source"`
	Commit     string            `json:"commit"`
	Text       string            `json:"text"`
	Tools      []chat.ToolSchema `json:"tools"`
	ThinkAware bool              `json:"think_aware"`
	Calls      []struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"calls"`
	ArgumentsExact  []*string `json:"arguments_exact"`
	Content         *string   `json:"content"`
	ContentContains []string  `json:"content_contains"`
	Errors          int       `json:"errors"`
	Deliberate      string    `json:"deliberate"`
}

// TestPeerSuites runs every ported case of vLLM's, SGLang's and verl's
// tool-parser tests. A case marked "deliberate" asserts agentrl's
// documented behaviour where it differs from the peer on purpose.
func TestPeerSuites(t *testing.T) {
	files, err := filepath.Glob("testdata/peers/*.jsonl")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	counts := map[string]int{}
	total, deliberate := 0, 0
	for _, file := range files {
		for i, c := range readJSONL[peerCase](t, file) {
			require.NotEmpty(t, c.Source, "%s:%d", file, i+1)
			require.Len(t, c.Commit, 40, "%s:%d", file, i+1)
			counts[filepath.Base(file)]++
			total++
			if c.Deliberate != "" {
				deliberate++
			}
			t.Run(filepath.Base(file)+"/"+c.Source[strings.LastIndex(c.Source, ":")+1:], func(t *testing.T) {
				checkPeerCase(t, c)
			})
		}
	}
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%s: %d cases", n, counts[n])
	}
	// README and the package doc state these counts; keep them true.
	claim := fmt.Sprintf("%d ported cases, %d of which", total, deliberate)
	for _, doc := range []string{"../README.md", "doc.go"} {
		data, err := os.ReadFile(doc)
		require.NoError(t, err)
		require.Contains(t, strings.Join(strings.Fields(string(data)), " "), claim, "%s must state the peer corpus as %q", doc, claim)
	}
}

func checkPeerCase(t *testing.T, c peerCase) {
	t.Helper()
	p, err := New(c.Format, Options{Tools: c.Tools, ThinkAware: c.ThinkAware})
	require.NoError(t, err)
	got := p.Parse(c.Text, nil)
	msg := []any{"source %s\ndeliberate: %s\nerrors: %v", c.Source, c.Deliberate, got.Errors}
	require.Len(t, got.Errors, c.Errors, msg...)
	require.Len(t, got.Calls, len(c.Calls), msg...)
	for i, want := range c.Calls {
		call := got.Calls[i]
		require.Equal(t, want.Name, call.Function.Name, msg...)
		require.True(t, sameJSON(t, string(want.Arguments), call.Function.Arguments),
			"call %d arguments: want %s, got %s (source %s)", i, want.Arguments, call.Function.Arguments, c.Source)
		if i < len(c.ArgumentsExact) && c.ArgumentsExact[i] != nil {
			require.Equal(t, *c.ArgumentsExact[i], call.Function.Arguments, msg...)
		}
	}
	if c.Content != nil {
		require.Equal(t, *c.Content, got.Content, msg...)
	}
	for _, s := range c.ContentContains {
		require.Contains(t, got.Content, s, msg...)
	}
}

// sameJSON compares two JSON texts as values, numbers by their exact
// value (so 10 and 10.0 agree, as Python's == does, and big integers are
// not rounded).
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	return reflect.DeepEqual(normJSON(t, a), normJSON(t, b))
}

func normJSON(t *testing.T, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	require.NoError(t, dec.Decode(&v), "not JSON: %s", s)
	return normNumbers(v)
}

func normNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		r, ok := new(big.Rat).SetString(string(x))
		if !ok {
			return string(x)
		}
		return r.RatString()
	case []any:
		for i := range x {
			x[i] = normNumbers(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normNumbers(x[k])
		}
	}
	return v
}
