package parser

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// TestRoundTripGoldens parses assistant turns that each model's chat
// template rendered from known calls (testdata/roundtrip.py, Python
// jinja2) and checks that the same calls, content and reasoning come back,
// with the arguments byte for byte as the template wrote them.
func TestRoundTripGoldens(t *testing.T) {
	type golden struct {
		Format     string            `json:"format"`
		Case       string            `json:"case"`
		ThinkAware bool              `json:"think_aware"`
		Text       string            `json:"text"`
		Content    string            `json:"content"`
		Reasoning  string            `json:"reasoning"`
		Tools      []chat.ToolSchema `json:"tools"`
		Calls      []struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"calls"`
	}
	seen := map[string]int{}
	for _, rec := range readJSONL[golden](t, "testdata/roundtrip.jsonl") {
		seen[rec.Format]++
		t.Run(rec.Format+"/"+rec.Case, func(t *testing.T) {
			p, err := New(rec.Format, Options{ThinkAware: rec.ThinkAware, Tools: rec.Tools})
			require.NoError(t, err)
			got := p.Parse(rec.Text, nil)
			require.Empty(t, got.Errors)
			require.Equal(t, rec.Content, got.Content)
			require.Equal(t, rec.Reasoning, got.Reasoning)
			require.Len(t, got.Calls, len(rec.Calls))
			for i, c := range rec.Calls {
				require.Equal(t, c.Name, got.Calls[i].Function.Name)
				require.Equal(t, c.Arguments, got.Calls[i].Function.Arguments)
			}
		})
	}
	for _, f := range Formats() {
		require.Positive(t, seen[f], "no round-trip golden for %s", f)
	}
}
