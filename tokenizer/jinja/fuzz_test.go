package jinja

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseRender feeds arbitrary template text through Parse and Render
// with a small context: neither may panic or hang (limits turn runaway
// templates into ErrLimit errors).
func FuzzParseRender(f *testing.F) {
	for _, r := range readGolden(f, filepath.Join("testdata", "golden_features.jsonl")) {
		f.Add(r.Template)
	}
	entries, err := os.ReadDir(filepath.Join("testdata", "templates"))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("testdata", "templates", e.Name()))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(data))
	}
	vars := varsFromJSON(f, []byte(`{
		"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
			{"role": "assistant", "content": "<think>r</think>a", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"x": 1}}}]},
			{"role": "tool", "content": "out"}],
		"tools": [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}}}}],
		"add_generation_prompt": true, "bos_token": "<s>", "eos_token": "</s>", "xs": [3, 1, 2], "d": {"a": 1}, "s": " x "}`))
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := Parse(src)
		if err != nil {
			return
		}
		_, _ = tmpl.Render(vars)
	})
}

// FuzzFromJSON checks that FromJSON accepts exactly the valid JSON documents
// and that tojson of the result is valid JSON again.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, 2.5, "x", null, true]}`, `[]`, `"\u00e9\ud83d\ude00"`, `1e400`, `-0`,
		`{"b": {"c": {}}, "a": 1}`, `123456789012345678901234567890`, `{"a":1,"a":2}`, `[1,]`, `{`} {
		f.Add([]byte(s))
	}
	tmpl, err := Parse("{{ v|tojson }}")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := FromJSON(data)
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid=%v but FromJSON err=%v for %q", valid, err, data)
		}
		if err != nil {
			return
		}
		out, err := tmpl.Render(map[string]any{"v": v})
		if err != nil {
			t.Fatalf("tojson of %q: %v", data, err)
		}
		if !json.Valid([]byte(out)) && !strings.Contains(out, "Infinity") {
			t.Fatalf("tojson of %q gave invalid JSON %q", data, out)
		}
	})
}
