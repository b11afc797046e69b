package parser

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// BenchmarkHermes4KB3Calls parses a ~4 KB turn with three calls (one with
// "</tool_call>" inside a string), made by testdata/bench_hermes_4k.py.
// testdata/bench_peer.py times the regex+json approach of verl and vLLM on
// the same text in Python.
func BenchmarkHermes4KB3Calls(b *testing.B) {
	data, err := os.ReadFile("testdata/bench_hermes_4k.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	p, err := New("hermes", Options{ThinkAware: true})
	if err != nil {
		b.Fatal(err)
	}
	if r := p.Parse(text, nil); len(r.Calls) != 3 || len(r.Errors) != 0 {
		b.Fatalf("want 3 calls, got %d and errors %v", len(r.Calls), r.Errors)
	}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		p.Parse(text, nil)
	}
}

// BenchmarkHermes4KB3CallsRegexpPeer is the verl/vLLM approach (a
// non-greedy regex, then json decoding of each block) in Go, for a
// side-by-side number. It splits the second call at the "</tool_call>"
// inside its string and so gets only two calls.
func BenchmarkHermes4KB3CallsRegexpPeer(b *testing.B) {
	data, err := os.ReadFile("testdata/bench_hermes_4k.txt")
	if err != nil {
		b.Fatal(err)
	}
	text := string(data)
	re := regexp.MustCompile(`(?s)<tool_call>(.*?)</tool_call>`)
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var calls []string
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			var obj struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if json.Unmarshal([]byte(strings.TrimSpace(m[1])), &obj) == nil {
				calls = append(calls, obj.Name, string(obj.Arguments))
			}
		}
		_ = strings.TrimSpace(re.ReplaceAllString(text, ""))
		_ = calls
	}
}

func BenchmarkFormats(b *testing.B) {
	for _, tc := range []struct{ format, text string }{
		{"qwen3_coder", "Checking.\n\n<tool_call>\n<function=run>\n<parameter=cmd>\nls -la /tmp\n</parameter>\n<parameter=timeout>\n30\n</parameter>\n<parameter=env>\n{\"A\": [1, 2.5, \"x\"]}\n</parameter>\n</function>\n</tool_call>"},
		{"llama3_json", `<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}<|eom_id|>`},
		{"deepseek_v3", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"days\": 3}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{"gpt_oss", `<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3}<|call|>`},
	} {
		b.Run(tc.format, func(b *testing.B) {
			opts := Options{}
			if tc.format == "qwen3_coder" {
				opts.Tools = tools(b, coderTools)
			}
			p, err := New(tc.format, opts)
			if err != nil {
				b.Fatal(err)
			}
			if r := p.Parse(tc.text, nil); len(r.Calls) != 1 || len(r.Errors) != 0 {
				b.Fatalf("want 1 call, got %+v", r)
			}
			b.SetBytes(int64(len(tc.text)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				p.Parse(tc.text, nil)
			}
		})
	}
}
