package parser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/chat"
)

// want is the expected outcome of one parse; errs are substrings that the
// error messages must contain, one per error, in order.
type want struct {
	content   string
	reasoning string
	calls     [][2]string // name, exact arguments text
	errs      []string
}

type parseCase struct {
	name  string
	text  string
	think bool
	tools []chat.ToolSchema
	want  want
}

func runCases(t *testing.T, format string, cases []parseCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := New(format, Options{ThinkAware: tc.think, Tools: tc.tools})
			require.NoError(t, err)
			got := p.Parse(tc.text, nil)
			require.Equal(t, tc.want.content, got.Content, "content")
			require.Equal(t, tc.want.reasoning, got.Reasoning, "reasoning")
			var calls [][2]string
			for _, c := range got.Calls {
				require.Equal(t, "function", c.Type)
				require.False(t, c.Function.ArgumentsAsObject)
				require.True(t, json.Valid([]byte(c.Function.Arguments)), "arguments must be JSON: %s", c.Function.Arguments)
				calls = append(calls, [2]string{c.Function.Name, c.Function.Arguments})
			}
			require.Equal(t, tc.want.calls, calls, "calls")
			require.Len(t, got.Errors, len(tc.want.errs), "errors: %v", got.Errors)
			for i, e := range tc.want.errs {
				require.Contains(t, got.Errors[i].Message, e)
				require.Equal(t, got.Errors[i].Message, got.Errors[i].Error())
			}
		})
	}
}

// readJSONL reads a golden file of JSON lines, one T each.
func readJSONL[T any](t *testing.T, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var recs []T
	for sc.Scan() {
		var rec T
		require.NoError(t, json.Unmarshal(sc.Bytes(), &rec), "%s line %d", path, len(recs)+1)
		recs = append(recs, rec)
	}
	require.NoError(t, sc.Err())
	return recs
}

func tools(t testing.TB, schemas ...string) []chat.ToolSchema {
	t.Helper()
	var out []chat.ToolSchema
	for _, s := range schemas {
		var ts chat.ToolSchema
		require.NoError(t, json.Unmarshal([]byte(s), &ts))
		out = append(out, ts)
	}
	return out
}

const weatherTool = `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}`

func TestHermes(t *testing.T) {
	runCases(t, "hermes", []parseCase{
		{name: "plain text", text: "The answer is 42.", want: want{content: "The answer is 42."}},
		{name: "empty", text: "", want: want{}},
		{
			name: "qwen3 shape",
			text: "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
			want: want{calls: [][2]string{{"get_weather", `{"city": "Paris"}`}}},
		},
		{
			name: "calls split by text, text before and after",
			text: "Let me check both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\nand then\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": 1}}\n</tool_call>\nDone.",
			want: want{content: "Let me check both.\n\nand then\n\nDone.", calls: [][2]string{{"a", `{}`}, {"b", `{"x": 1}`}}},
		},
		{
			name: "two calls on one line",
			text: `<tool_call>{"name":"a","arguments":{"i":1}}</tool_call><tool_call>{"name":"b","arguments":{"i":2}}</tool_call>`,
			want: want{calls: [][2]string{{"a", `{"i":1}`}, {"b", `{"i":2}`}}},
		},
		{
			name: "closing tag inside a JSON string",
			text: `<tool_call>{"name": "write", "arguments": {"text": "use </tool_call> to end a call", "n": 2}}</tool_call>`,
			want: want{calls: [][2]string{{"write", `{"text": "use </tool_call> to end a call", "n": 2}`}}},
		},
		{
			name: "escaped quote before closing tag in a string",
			text: `<tool_call>{"name": "w", "arguments": {"s": "a \"</tool_call>\" b\\"}}</tool_call>`,
			want: want{calls: [][2]string{{"w", `{"s": "a \"</tool_call>\" b\\"}`}}},
		},
		{
			name: "nested arguments keep order, spacing and number spelling",
			text: "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"z\": 1.50, \"a\": [1, {\"deep\": {\"x\": null, \"y\": 1e3}}],  \"m\": -0}}\n</tool_call>",
			want: want{calls: [][2]string{{"f", `{"z": 1.50, "a": [1, {"deep": {"x": null, "y": 1e3}}],  "m": -0}`}}},
		},
		{
			name: "CJK content and arguments",
			text: "我来查一下天气。\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"北京\", \"note\": \"東京も\"}}\n</tool_call>",
			want: want{content: "我来查一下天气。", calls: [][2]string{{"get_weather", `{"city": "北京", "note": "東京も"}`}}},
		},
		{
			name: "trailing garbage after the calls is content",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>}}]] oops",
			want: want{content: "}}]] oops", calls: [][2]string{{"a", `{}`}}},
		},
		{
			name: "trailing garbage inside the tag",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}}\n</tool_call>",
			want: want{errs: []string{"tool call 1: invalid JSON"}},
		},
		{
			name: "unterminated block after a good call",
			text: "<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": ",
			want: want{calls: [][2]string{{"a", `{}`}}, errs: []string{"tool call 2: unclosed <tool_call>"}},
		},
		{
			name: "unclosed block followed by a new block",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"x\": 1}\n<tool_call>\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			want: want{calls: [][2]string{{"b", `{}`}}, errs: []string{"tool call 1: unclosed <tool_call>: missing </tool_call> before the next <tool_call>"}},
		},
		{
			name: "opening tag inside a JSON string",
			text: `<tool_call>{"name": "a", "arguments": {"s": "<tool_call>"}}</tool_call>`,
			want: want{calls: [][2]string{{"a", `{"s": "<tool_call>"}`}}},
		},
		{
			name: "complete JSON without the closing tag (stopped on </tool_call>) is a call",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}",
			want: want{calls: [][2]string{{"a", `{}`}}},
		},
		{
			name: "incomplete JSON without the closing tag is unclosed",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {}",
			want: want{errs: []string{"unclosed <tool_call>"}},
		},
		{
			name: "a block of many non-objects is one error",
			text: "<tool_call>1 2 3 4 5 6 7 8 9</tool_call><tool_call>{\"name\": \"a\"} 5 {}</tool_call>",
			want: want{calls: [][2]string{{"a", `{}`}}, errs: []string{"tool call 1: expected a JSON object", "tool call 3: expected a JSON object {\"name\": ..., \"arguments\": {...}}: \"5\" (and 1 more"}},
		},
		{
			name: "bad JSON does not hide the next good call",
			text: `<tool_call>{"name": "f", "arguments": {"q": "a"b"}}</tool_call> then <tool_call>{"name":"g","arguments":{}}</tool_call>`,
			want: want{content: "then", calls: [][2]string{{"g", `{}`}}, errs: []string{"tool call 1: invalid JSON"}},
		},
		{
			name: "missing name",
			text: `<tool_call>{"arguments": {}}</tool_call>`,
			want: want{errs: []string{`missing "name"`}},
		},
		{
			name: "name not a string",
			text: `<tool_call>{"name": 3, "arguments": {}}</tool_call>`,
			want: want{errs: []string{`"name" must be a string`}},
		},
		{
			name: "empty name",
			text: `<tool_call>{"name": "", "arguments": {}}</tool_call>`,
			want: want{errs: []string{"missing function name"}},
		},
		{
			name: "arguments as a JSON string holding an object are unwrapped",
			text: `<tool_call>{"name": "f", "arguments": "{\"a\": 1}"}</tool_call>`,
			want: want{calls: [][2]string{{"f", `{"a": 1}`}}},
		},
		{
			name: "arguments as a JSON string holding anything else are not an object",
			text: `<tool_call>{"name": "f", "arguments": "hello"}</tool_call>`,
			want: want{errs: []string{`tool call 1 to "f": arguments must be a JSON object`}},
		},
		{
			name: "arguments null",
			text: `<tool_call>{"name": "f", "arguments": null}</tool_call>`,
			want: want{errs: []string{"arguments must be a JSON object"}},
		},
		{
			name: "missing arguments mean none; parameters accepted",
			text: `<tool_call>{"name": "f"}</tool_call><tool_call>{"name": "g", "parameters": {"k": true}}</tool_call>`,
			want: want{calls: [][2]string{{"f", `{}`}, {"g", `{"k": true}`}}},
		},
		{
			name: "two objects in one tag are two calls",
			text: "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
			want: want{calls: [][2]string{{"a", `{}`}, {"b", `{}`}}},
		},
		{
			name: "not an object",
			text: `<tool_call>["a"]</tool_call>`,
			want: want{errs: []string{"expected a JSON object"}},
		},
		{
			name: "empty tag",
			text: "<tool_call>\n</tool_call>",
			want: want{errs: []string{"empty <tool_call>"}},
		},
		{
			name:  "unknown tool",
			text:  `<tool_call>{"name": "get_wether", "arguments": {}}</tool_call><tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>`,
			tools: tools(t, weatherTool),
			want:  want{calls: [][2]string{{"get_weather", `{"city": "Oslo"}`}}, errs: []string{`tool call 1: unknown tool "get_wether" (available: get_weather)`}},
		},
		{
			name:  "think aware ignores calls inside think",
			think: true,
			text:  "<think>\nMaybe <tool_call>{\"name\": \"bad\", \"arguments\": {}}</tool_call>?\n</think>\n\nOK.\n<tool_call>\n{\"name\": \"good\", \"arguments\": {}}\n</tool_call>",
			want:  want{content: "OK.", reasoning: "Maybe <tool_call>{\"name\": \"bad\", \"arguments\": {}}</tool_call>?", calls: [][2]string{{"good", `{}`}}},
		},
		{
			name:  "think aware without opening tag (generation prompt had it)",
			think: true,
			text:  "I should call it.\n</think>\n\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>",
			want:  want{reasoning: "I should call it.", calls: [][2]string{{"a", `{}`}}},
		},
		{
			name:  "think aware with unclosed think has no calls",
			think: true,
			text:  "Sure. <think>hmm <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>",
			want:  want{content: "Sure.", reasoning: "hmm <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>"},
		},
		{
			name: "without think awareness calls inside think are parsed",
			text: "<think>x <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call></think>",
			want: want{content: "<think>x </think>", calls: [][2]string{{"a", `{}`}}},
		},
	})
}

func TestSplitThink(t *testing.T) {
	for _, tc := range []struct{ in, rest, reasoning string }{
		{"plain", "plain", ""},
		{"<think>a</think>b", "b", "a"},
		{"a</think>b", "b", "a"},
		{"a</think>b<think>c</think>d", "bd", "a\nc"},
		{"x<think>a", "x", "a"},
		{"</think></think>", "</think>", ""},
		{"<think></think><think>", "", "\n"},
	} {
		rest, r := splitThink(tc.in)
		require.Equal(t, tc.rest, rest, tc.in)
		require.Equal(t, tc.reasoning, r, tc.in)
	}
}

func TestLlama3JSON(t *testing.T) {
	runCases(t, "llama3_json", []parseCase{
		{name: "plain text", text: "Hello there.", want: want{content: "Hello there."}},
		{
			name: "bare JSON as the template renders it",
			text: `{"name": "get_weather", "parameters": {"city": "Paris"}}`,
			want: want{calls: [][2]string{{"get_weather", `{"city": "Paris"}`}}},
		},
		{
			name: "python tag with content before and eot after",
			text: `Checking.<|python_tag|>{"name": "f", "arguments": {"a": [1, 2]}}<|eot_id|>`,
			want: want{content: "Checking.", calls: [][2]string{{"f", `{"a": [1, 2]}`}}},
		},
		{
			name: "two calls separated by semicolon on one line",
			text: `{"name": "a", "parameters": {"x": 1}}; {"name": "b", "parameters": {"y": "北京"}}`,
			want: want{calls: [][2]string{{"a", `{"x": 1}`}, {"b", `{"y": "北京"}`}}},
		},
		{
			name: "closing braces inside strings",
			text: `{"name": "a", "parameters": {"code": "if x { return \"}\" }"}}`,
			want: want{calls: [][2]string{{"a", `{"code": "if x { return \"}\" }"}`}}},
		},
		{
			name: "prose or other JSON starting with a brace is content",
			text: `{x | x > 0} is a set. {"a": 1}`,
			want: want{content: `{x | x > 0} is a set. {"a": 1}`},
		},
		{
			name: "truncated call without the tag is an error",
			text: `{"name": "f", "parameters": {"x": 1`,
			want: want{content: `{"name": "f", "parameters": {"x": 1`, errs: []string{"tool call 1: invalid JSON"}},
		},
		{
			name: "JSON array of calls",
			text: `[{"name": "a", "parameters": {"x": 1}}, {"name": "b", "arguments": {}}]<|eot_id|>`,
			want: want{calls: [][2]string{{"a", `{"x": 1}`}, {"b", `{}`}}},
		},
		{
			name: "array after the python tag, one element malformed",
			text: `<|python_tag|>[{"name": "a", "parameters": {}}, {"name": "b", "parameters": 3}]`,
			want: want{calls: [][2]string{{"a", `{}`}}, errs: []string{`tool call 2 to "b": arguments must be a JSON object`}},
		},
		{
			name: "text starting with a bracket is prose",
			text: `[1] First, see the docs.`,
			want: want{content: `[1] First, see the docs.`},
		},
		{
			name: "a call inside prose is a call, as vLLM and SGLang read it",
			text: `You can call {"name": "a", "parameters": {}} yourself.`,
			want: want{content: `You can call yourself.`, calls: [][2]string{{"a", `{}`}}},
		},
		{
			name: "trailing text is content",
			text: `{"name": "a", "parameters": {}} I called a.`,
			want: want{content: "I called a.", calls: [][2]string{{"a", `{}`}}},
		},
		{
			name: "invalid JSON",
			text: `{"name": "a", "parameters": {"x": }}`,
			want: want{content: `{"name": "a", "parameters": {"x": }}`, errs: []string{"tool call 1: invalid JSON"}},
		},
		{
			name: "unterminated JSON after a good call",
			text: `{"name": "a", "parameters": {}}; {"name": "b", "parameters": {"x": 1`,
			want: want{content: `{"name": "b", "parameters": {"x": 1`, calls: [][2]string{{"a", `{}`}}, errs: []string{"tool call 2: invalid JSON"}},
		},
		{
			name: "missing name and non-object parameters",
			text: `{"parameters": {}}; {"name": "b", "parameters": [1]}`,
			want: want{content: `{"parameters": {}};`, errs: []string{`missing "name"`, "arguments must be a JSON object"}},
		},
		{
			name:  "unknown tool",
			text:  `{"name": "nope", "parameters": {}}`,
			tools: tools(t, weatherTool),
			want:  want{errs: []string{`unknown tool "nope"`}},
		},
		{
			name:  "think aware",
			think: true,
			text:  "<think>call {\"name\": \"x\"}</think>\n{\"name\": \"a\", \"parameters\": {}}",
			want:  want{reasoning: `call {"name": "x"}`, calls: [][2]string{{"a", `{}`}}},
		},
	})
}

func TestDeepseekV3(t *testing.T) {
	const (
		cb = "<｜tool▁calls▁begin｜>"
		ce = "<｜tool▁calls▁end｜>"
		b  = "<｜tool▁call▁begin｜>"
		e  = "<｜tool▁call▁end｜>"
		s  = "<｜tool▁sep｜>"
	)
	runCases(t, "deepseek_v3", []parseCase{
		{name: "plain", text: "Hi.<｜end▁of▁sentence｜>", want: want{content: "Hi."}},
		{
			name: "two calls as the template renders them",
			text: "Let me look.\n\n" + cb + b + "function" + s + "get_weather\n```json\n{\"city\": \"北京\"}\n```" + e + "\n" + b + "function" + s + "get_time\n```json\n{\"tz\": \"UTC\", \"fmt\": {\"h\": 24}}\n```" + e + ce + "<｜end▁of▁sentence｜>",
			want: want{content: "Let me look.", calls: [][2]string{{"get_weather", `{"city": "北京"}`}, {"get_time", `{"tz": "UTC", "fmt": {"h": 24}}`}}},
		},
		{
			name: "multi-line arguments",
			text: cb + b + "function" + s + "f\n```json\n{\n  \"a\": 1\n}\n```" + e + ce,
			want: want{calls: [][2]string{{"f", "{\n  \"a\": 1\n}"}}},
		},
		{
			name: "two calls on one line, trailing garbage is content",
			text: cb + b + "function" + s + "a\n```json\n{\"城市\": \"東京\"}\n```" + e + b + "function" + s + "b\n```json\n{}\n```" + e + ce + "trailing ```garbage",
			want: want{content: "trailing ```garbage", calls: [][2]string{{"a", `{"城市": "東京"}`}, {"b", `{}`}}},
		},
		{
			name: "missing fence",
			text: cb + b + "function" + s + "f\n{\"a\": 1}" + e + ce,
			want: want{errs: []string{"arguments must follow in a ```json block"}},
		},
		{
			name: "bad JSON then good call",
			text: cb + b + "function" + s + "f\n```json\n{\"a\": }\n```" + e + b + "function" + s + "g\n```json\n{}\n```" + e + ce,
			want: want{calls: [][2]string{{"g", `{}`}}, errs: []string{`tool call 1 to "f": arguments are not valid JSON`}},
		},
		{
			name: "unclosed call",
			text: cb + b + "function" + s + "f\n```json\n{\"a\": 1}",
			want: want{errs: []string{"unclosed <｜tool▁call▁begin｜>"}},
		},
		{
			name: "unclosed call followed by a good one",
			text: cb + b + "function" + s + "f\n```json\n{\"a\": 1}\n```" + b + "function" + s + "g\n```json\n{}\n```" + e + ce,
			want: want{calls: [][2]string{{"g", `{}`}}, errs: []string{"tool call 1: unclosed <｜tool▁call▁begin｜>: missing <｜tool▁call▁end｜> before the next call"}},
		},
		{
			name: "missing separator and wrong type",
			text: cb + b + "function f" + e + b + "tool" + s + "g\n```json\n{}\n```" + e + ce,
			want: want{errs: []string{"missing <｜tool▁sep｜>", `unsupported call type "tool"`}},
		},
		{
			name: "missing closing fence",
			text: cb + b + "function" + s + "f\n```json\n{}" + e + ce,
			want: want{errs: []string{"missing the closing ```"}},
		},
		{
			name:  "R1 reasoning before calls",
			think: true,
			text:  "<think>need weather</think>\n\n" + cb + b + "function" + s + "get_weather\n```json\n{}\n```" + e + ce,
			want:  want{reasoning: "need weather", calls: [][2]string{{"get_weather", `{}`}}},
		},
	})
}

func TestGptOSS(t *testing.T) {
	runCases(t, "gpt_oss", []parseCase{
		{name: "plain text without harmony markers", text: "Hello", want: want{content: "Hello"}},
		{
			name: "analysis then call, as sampled after <|start|>assistant",
			text: `<|channel|>analysis<|message|>Need weather for SF.<|end|><|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location":"San Francisco"}<|call|>`,
			want: want{reasoning: "Need weather for SF.", calls: [][2]string{{"get_weather", `{"location":"San Francisco"}`}}},
		},
		{
			name: "recipient in the role header, as the template renders it",
			text: `<|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{"q": "東京"}<|call|>`,
			want: want{calls: [][2]string{{"lookup", `{"q": "東京"}`}}},
		},
		{
			name: "final answer",
			text: `<|channel|>analysis<|message|>easy<|end|><|start|>assistant<|channel|>final<|message|>It is 42.<|return|>`,
			want: want{content: "It is 42.", reasoning: "easy"},
		},
		{
			name: "preamble on commentary and two calls",
			text: `<|channel|>commentary<|message|>Checking two things.<|end|><|start|>assistant<|channel|>commentary to=functions.a <|constrain|>json<|message|>{}<|call|><|start|>assistant<|channel|>commentary to=functions.b <|constrain|>json<|message|>{"x": [1]}<|call|>`,
			want: want{content: "Checking two things.", calls: [][2]string{{"a", `{}`}, {"b", `{"x": [1]}`}}},
		},
		{
			name: "trailing garbage after a call is content",
			text: `<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x": "北京"}<|call|> stray}}`,
			want: want{content: "stray}}", calls: [][2]string{{"a", `{"x": "北京"}`}}},
		},
		{
			name: "unterminated call",
			text: `<|channel|>commentary to=functions.a <|constrain|>json<|message|>{"x": 1`,
			want: want{errs: []string{`tool call 1 to "a": unterminated call`}},
		},
		{
			name: "bad JSON in a call",
			text: `<|channel|>commentary to=functions.a <|constrain|>json<|message|>{x: 1}<|call|>`,
			want: want{errs: []string{`tool call 1 to "a": arguments are not valid JSON`}},
		},
		{
			name: "missing message marker",
			text: `<|channel|>commentary to=functions.a <|constrain|>json{"x": 1}<|call|>`,
			want: want{errs: []string{`missing <|message|>`}},
		},
		{
			name:  "built-in recipient checked against the tool list",
			text:  `<|channel|>analysis to=browser.search<|message|>{"query": "x"}<|call|>`,
			tools: tools(t, weatherTool),
			want:  want{errs: []string{`unknown tool "browser.search"`}},
		},
		{
			name: "empty arguments mean none",
			text: `<|channel|>commentary to=functions.now <|constrain|>json<|message|><|call|>`,
			want: want{calls: [][2]string{{"now", `{}`}}},
		},
		{
			name:  "a tool whose schema is not an object takes plain text (harmony's python)",
			text:  "<|channel|>analysis to=python code<|message|>print(\"hi\")\nx = 1<|call|>",
			tools: tools(t, `{"type":"function","function":{"name":"python","parameters":{"type":"string"}}}`),
			want:  want{calls: [][2]string{{"python", `"print(\"hi\")\nx = 1"`}}},
		},
		{
			name: "a tool result written by the model is not a call to a tool named assistant",
			text: `<|channel|>commentary to=functions.f <|constrain|>json<|message|>{"a": 1}<|call|><|start|>functions.f to=assistant<|channel|>commentary<|message|>{"ok": true}<|end|><|start|>user<|message|>thanks<|end|>`,
			want: want{calls: [][2]string{{"f", `{"a": 1}`}}},
		},
	})
}

// TestHermesMalformedBlockIsOneError: a 200 KB block of numbers is one
// malformed call, not one error (and one tool message) per number.
func TestHermesMalformedBlockIsOneError(t *testing.T) {
	p, err := New("hermes", Options{})
	require.NoError(t, err)
	for _, body := range []string{strings.Repeat("1 ", 100_000), strings.Repeat("1", 200_000), strings.Repeat("{} ", 70_000)} {
		got := p.Parse("<tool_call>"+body+"</tool_call>", nil)
		require.Len(t, got.Errors, 1)
		require.Empty(t, got.Calls)
		require.Less(t, len(got.Errors[0].Message), 300)
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New("nope", Options{})
	require.ErrorIs(t, err, ErrUnknownFormat)
	require.ErrorContains(t, err, `unknown format "nope" (known: deepseek_v3, deepseek_v31, deepseek_v32, deepseek_v4, deepseek_v41, gemma4, glm45, gpt_oss, hermes, kimi_k2, kimi_k3, llama3_json, minimax_m2, mistral, pythonic, qwen3_coder, seed_oss)`)
	_, err = New("hermes", Options{Tools: []chat.ToolSchema{{}}})
	require.ErrorContains(t, err, "tool 0 has no name")
	_, err = New("hermes", Options{Tools: tools(t, weatherTool, weatherTool)})
	require.ErrorContains(t, err, `tool "get_weather" listed twice`)
	_, err = New("hermes", Options{Tools: []chat.ToolSchema{{Function: chat.FunctionSchema{Name: "f", Parameters: json.RawMessage(`[1]`)}}}})
	require.ErrorContains(t, err, `tool "f": parameters must be a JSON object`)
	require.Equal(t, []string{"deepseek_v3", "deepseek_v31", "deepseek_v32", "deepseek_v4", "deepseek_v41", "gemma4", "glm45", "gpt_oss", "hermes", "kimi_k2", "kimi_k3", "llama3_json", "minimax_m2", "mistral", "pythonic", "qwen3_coder", "seed_oss"}, Formats())
}

func TestUnknownToolListIsCapped(t *testing.T) {
	var ts []chat.ToolSchema
	for i := 0; i < 25; i++ {
		ts = append(ts, chat.ToolSchema{Function: chat.FunctionSchema{Name: fmt.Sprintf("t%02d", i)}})
	}
	p, err := New("hermes", Options{Tools: ts})
	require.NoError(t, err)
	got := p.Parse(`<tool_call>{"name": "x", "arguments": {}}</tool_call>`, nil)
	require.Len(t, got.Errors, 1)
	require.Contains(t, got.Errors[0].Message, "t19, … (5 more)")
	require.NotContains(t, got.Errors[0].Message, "t20")
}

func TestParserIsSafeForConcurrentUse(t *testing.T) {
	defer goleak.VerifyNone(t)
	p, err := New("qwen3_coder", Options{Tools: tools(t, coderTools)})
	require.NoError(t, err)
	text := "<tool_call>\n<function=run>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>"
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 100; j++ {
				if r := p.Parse(text, nil); len(r.Calls) != 1 || r.Calls[0].Function.Arguments != `{"timeout": 5}` {
					t.Errorf("got %+v", r)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestSnippetCutsAtRuneBoundary(t *testing.T) {
	s := snippet(strings.Repeat("界", 40))
	require.True(t, strings.HasSuffix(s, "…"))
	require.True(t, json.Valid([]byte(strings.TrimSuffix(s, "…"))))
}

// TestSnippetQuotedFormIsBounded: bytes that are not UTF-8 quote as six
// bytes each, so a snippet is bounded by its quoted length, not by the
// bytes it quotes (FuzzGemma4 found a 60-byte run of 0x8b quoted as 360
// bytes). Text that fits is still quoted whole.
func TestSnippetQuotedFormIsBounded(t *testing.T) {
	for _, in := range []string{strings.Repeat("\x8b", 60), strings.Repeat("\x8b", 1000), strings.Repeat("\x00", 200), "a" + strings.Repeat("\xff", 59)} {
		s := snippet(in)
		require.LessOrEqual(t, len(s), 80+len("…"), "%q", in)
		require.True(t, json.Valid([]byte(strings.TrimSuffix(s, "…"))), s)
		require.True(t, strings.HasSuffix(s, "…"), "a cut snippet says so: %s", s)
	}
	require.Equal(t, `"call:f{x}"`, snippet("call:f{x}"))
}

// TestPythonicUnparsableBlockIsOneError: a <|python_start|> block whose
// list does not parse is one error however many brackets follow (found by
// FuzzPythonic: each "[" was retried as a new list, one error each, every
// one quoting the rest of the text), and its text stays content. A call
// list later in the same block that looks like a call is still found.
func TestPythonicUnparsableBlockIsOneError(t *testing.T) {
	p, err := New("pythonic", Options{})
	require.NoError(t, err)
	text := "<|python_start|>" + strings.Repeat("[", 200)
	got := p.Parse(text, nil)
	require.Len(t, got.Errors, 1)
	require.Contains(t, got.Errors[0].Message, "expected a function name")
	require.Empty(t, got.Calls)
	require.Equal(t, strings.Repeat("[", 200), got.Content)

	got = p.Parse("<|python_start|>[1, 2] then [get_weather(city='Paris')]<|python_end|>", nil)
	require.Len(t, got.Errors, 1)
	require.Len(t, got.Calls, 1)
	require.Equal(t, "get_weather", got.Calls[0].Function.Name)
	require.JSONEq(t, `{"city":"Paris"}`, got.Calls[0].Function.Arguments)
	require.Equal(t, "[1, 2] then", got.Content)
}
