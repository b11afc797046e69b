package parser

import (
	"bufio"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// TestRoundTripGoldens parses assistant turns that each model's chat
// template rendered from known calls (testdata/roundtrip.py, Python
// jinja2) and checks that the same calls, content and reasoning come back,
// with the arguments byte for byte as the template wrote them.
func TestRoundTripGoldens(t *testing.T) {
	f, err := os.Open("testdata/roundtrip.jsonl")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := map[string]int{}
	for sc.Scan() {
		var rec struct {
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
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec))
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
	require.NoError(t, sc.Err())
	for _, f := range Formats() {
		require.Positive(t, seen[f], "no round-trip golden for %s", f)
	}
}
