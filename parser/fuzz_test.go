package parser

import (
	"bufio"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// fuzzTools gives the qwen3_coder fuzz target schema types to convert by,
// including the ones that go through json.loads and ast.literal_eval.
const fuzzTools = `[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{
 "s":{"type":"string"},"i":{"type":"integer"},"n":{"type":"number"},"b":{"type":"boolean"},
 "o":{"type":"object"},"a":{"type":"array"},"x":{"type":"any"}}}}},
 {"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]`

// checkResult holds for any input: calls are well formed, nothing is
// invented (content and reasoning are made of the input's bytes), the
// output is bounded by the input and parsing is deterministic.
func checkResult(t *testing.T, p Parser, text string) {
	t.Helper()
	if problem := resultProblem(p, text); problem != "" {
		t.Fatal(problem)
	}
}

// resultProblem is checkResult's oracle: what is wrong with p's result for
// text, or "".
func resultProblem(p Parser, text string) string {
	got := p.Parse(text, nil)
	for _, c := range got.Calls {
		if c.Function.Name == "" {
			return fmt.Sprintf("call without a name from %q", text)
		}
		a := strings.TrimSpace(c.Function.Arguments)
		if !json.Valid([]byte(a)) || a[0] != '{' {
			return fmt.Sprintf("call %q arguments %q are not a JSON object (input %q)", c.Function.Name, c.Function.Arguments, text)
		}
	}
	msgBytes := 0
	for _, e := range got.Errors {
		if e.Message == "" {
			return fmt.Sprintf("empty error message from %q", text)
		}
		msgBytes += len(e.Message)
	}
	// Error messages quote the input, but boundedly: a message that quotes
	// the rest of the text at each error is how a quadratic FuzzPythonic
	// bug once slipped in.
	if msgBytes > maxErrorBytes*len(got.Errors)+2*len(text) {
		return fmt.Sprintf("%d bytes of error messages for %d errors from %d bytes", msgBytes, len(got.Errors), len(text))
	}
	if len(got.Content)+len(got.Reasoning) > len(text) {
		return fmt.Sprintf("content+reasoning longer than the input %q", text)
	}
	// Content and reasoning are pieces of the input in the order written:
	// each is a subsequence of the text's bytes (white space aside), so
	// nothing is invented.
	if !subsequence(got.Content, text) {
		return fmt.Sprintf("content %q is not made of the input's bytes in order (input %q)", got.Content, text)
	}
	if !subsequence(got.Reasoning, text) {
		return fmt.Sprintf("reasoning %q is not made of the input's bytes in order (input %q)", got.Reasoning, text)
	}
	for _, c := range got.Calls {
		// kimi_k3 writes names as XML attributes (&amp; for &).
		if !strings.Contains(text, c.Function.Name) && !strings.Contains(html.UnescapeString(text), c.Function.Name) {
			return fmt.Sprintf("call name %q is not in the input %q", c.Function.Name, text)
		}
	}
	// Bounded work: every call or error consumes at least two bytes of
	// input, and argument text grows by at most a constant factor (the
	// largest growth is a float literal such as 1e308 written out as an
	// integer by qwen3_coder).
	if n := len(got.Calls) + len(got.Errors); n > len(text)/2+1 {
		return fmt.Sprintf("%d calls and errors from %d bytes", n, len(text))
	}
	argBytes := 0
	for _, c := range got.Calls {
		argBytes += len(c.Function.Arguments)
	}
	if argBytes > 100*len(text)+2 {
		return fmt.Sprintf("%d bytes of arguments from %d bytes of input", argBytes, len(text))
	}
	if again := p.Parse(text, nil); !reflect.DeepEqual(got, again) {
		return fmt.Sprintf("parsing %q twice gave %+v, then %+v", text, got, again)
	}
	return ""
}

// maxErrorBytes is what one error message may add beyond quoting the input.
const maxErrorBytes = 256

// subsequence reports whether sub's bytes other than white space appear in
// s in order. White space is left out because joining pieces may add it
// (gpt_oss joins the text of its channels with a newline).
func subsequence(sub, s string) bool {
	i := 0
	for j := 0; j < len(s); j++ {
		for i < len(sub) && isSpace(sub[i]) {
			i++
		}
		if i == len(sub) {
			break
		}
		if sub[i] == s[j] {
			i++
		}
	}
	for i < len(sub) && isSpace(sub[i]) {
		i++
	}
	return i == len(sub)
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func fuzzFormat(f *testing.F, format string, seeds []string) {
	var ts []chat.ToolSchema
	if err := json.Unmarshal([]byte(fuzzTools), &ts); err != nil {
		f.Fatal(err)
	}
	plain, err := New(format, Options{})
	require.NoError(f, err)
	aware, err := New(format, Options{ThinkAware: true, Tools: ts})
	require.NoError(f, err)
	for _, s := range append(seeds, goldenTexts(f, format)...) {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, think bool) {
		p := plain
		if think {
			p = aware
		}
		checkResult(t, p, text)
	})
}

// goldenTexts returns the round-trip turns of a format as fuzz seeds.
func goldenTexts(f *testing.F, format string) []string {
	file, err := os.Open("testdata/roundtrip.jsonl")
	require.NoError(f, err)
	defer file.Close()
	var out []string
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var rec struct{ Format, Text string }
		require.NoError(f, json.Unmarshal(sc.Bytes(), &rec))
		if rec.Format == format {
			out = append(out, rec.Text)
		}
	}
	return out
}

func FuzzHermes(f *testing.F) {
	fuzzFormat(f, "hermes", []string{
		"",
		"<tool_call>",
		"<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": \"</tool_call>\"}}</tool_call>",
		"<tool_call>\"</tool_call>\"<tool_call>\"</tool_call>",
		"a</think><tool_call>{}</tool_call><think>",
		"<tool_call>{\"name\":\"f\",\"arguments\":{}}{\"name\":\"g\"}</tool_call>x",
	})
}

func FuzzQwen3Coder(f *testing.F) {
	fuzzFormat(f, "qwen3_coder", []string{
		"<tool_call>\n<function=f>\n<parameter=i>\n1_0\n</parameter>\n<parameter=x>\n{'a': (1, 2.5e3), 3: None}\n</parameter>\n</function>\n</tool_call>",
		"<function=f><parameter=o>{\"k\": [1, {\"z\": -0.0}]}</parameter><parameter=n>1e400</parameter></function>",
		"<function=f><parameter=a>['\\x41', \"\\u00e9\", 0b11]</parameter><parameter=b>TRUE</parameter></function>",
		"<tool_call><function=",
		"<function=f><parameter=s>",
		"<tool_call>\n<function=f>\n</function>",
	})
}

func FuzzLlama3JSON(f *testing.F) {
	fuzzFormat(f, "llama3_json", []string{
		`{"name": "f", "parameters": {}}`,
		`<|python_tag|>{"name": "f", "arguments": {"a": 1}}; {"name": "g", "parameters": {}}<|eom_id|>`,
		`{"name": "f", "parameters": {"a": "}"}} trailing`,
		`{{{{`,
		`{"name": 1}`,
	})
}

func FuzzDeepseekV3(f *testing.F) {
	fuzzFormat(f, "deepseek_v3", []string{
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"<｜tool▁call▁begin｜>",
		"<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n```<｜tool▁call▁end｜>",
	})
}

func FuzzGptOSS(f *testing.F) {
	fuzzFormat(f, "gpt_oss", []string{
		"<|channel|>analysis<|message|>x<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{}<|call|>",
		" to=functions.f<|channel|>commentary json<|message|>{\"a\": 1}<|call|>",
		"<|start|><|start|><|channel|><|message|><|call|>",
		"<|channel|>final<|message|>done<|return|>",
	})
}

func FuzzDeepseekV31(f *testing.F) {
	fuzzFormat(f, "deepseek_v31", []string{
		"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>f<｜tool▁sep｜>{\"x\":1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
		"<｜tool▁call▁begin｜>f<｜tool▁sep｜>",
		"<｜tool▁call▁begin｜><｜tool▁sep｜>{}<｜tool▁call▁end｜>",
	})
}

func FuzzKimiK2(f *testing.F) {
	fuzzFormat(f, "kimi_k2", []string{
		"a<|tool_calls_section_begin|><|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>b",
		"<|tool_call_begin|>f.0<|tool_call_argument_begin|>{}<|tool_call_end|>",
		"<|tool_calls_section_begin|>x<|tool_call_begin|>",
		"<|tool_calls_section_end|><|tool_call_section_begin|>",
	})
}

func FuzzGLM45(f *testing.F) {
	fuzzFormat(f, "glm45", []string{
		"<tool_call>f\n<arg_key>s</arg_key>\n<arg_value>x</arg_value>\n<arg_key>o</arg_key>\n<arg_value>{\"a\": [1]}</arg_value>\n</tool_call>",
		"<tool_call>f<arg_key>",
		"<tool_call>f\n<arg_key>a</arg_key><arg_value></tool_call>",
		"<tool_call>{{ x }}</tool_call>",
	})
}

func FuzzPythonic(f *testing.F) {
	fuzzFormat(f, "pythonic", []string{
		"[f(a=1, b='x', c=[1, {'k': None}]), g()]",
		"Here: <|python_start|>[f(a=(1,))]<|python_end|> done",
		"[f(1)]",
		"[1] [f(a=",
		"[f(a=1e400)]",
	})
}

func FuzzMistral(f *testing.F) {
	fuzzFormat(f, "mistral", []string{
		`[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}]`,
		`hi[TOOL_CALLS]f[ARGS]{"a": 1}[TOOL_CALLS]g[CALL_ID]abc123456[ARGS]{}`,
		`[TOOL_CALLS]f{"a": `,
		`[TOOL_CALLS][TOOL_CALLS]`,
	})
}

func FuzzDeepseekV32(f *testing.F) {
	fuzzFormat(f, "deepseek_v32", []string{
		"<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"s\" string=\"true\">x</｜DSML｜parameter>\n<｜DSML｜parameter name=\"o\" string=\"false\">{\"a\": 1}</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
		"<｜DSML｜function_calls><｜DSML｜invoke name=\"",
		"<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"a\">",
	})
}

func FuzzDeepseekV4(f *testing.F) {
	fuzzFormat(f, "deepseek_v4", []string{
		"<｜DSML｜tool_calls>\n<｜DSML｜invoke name=\"f\">\n<｜DSML｜parameter name=\"s\" string=\"true\">x</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜tool_calls>",
		"<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"a\" string=\"true\">x<｜DSML｜parameter name=\"b\">1</｜DSML｜tool_calls>",
		"<｜DSML｜function_calls><｜DSML｜ calls>",
	})
}

func FuzzDeepseekV41(f *testing.F) {
	fuzzFormat(f, "deepseek_v41", []string{
		"\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name=\"f\">\n<｜DSML｜ parameter name=\"o\" string=\"false\">{\"a\": 1}</｜DSML｜ parameter>\n</｜DSML｜ invoke>\n</｜DSML｜ calls>",
		"<｜DSML｜ calls><｜DSML｜ invoke name=\"",
		"<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\"></｜DSML｜invoke></｜DSML｜tool_calls>",
	})
}

func FuzzMiniMaxM2(f *testing.F) {
	fuzzFormat(f, "minimax_m2", []string{
		"<think>\nr\n</think>\n\nhi\n<minimax:tool_call>\n<invoke name=\"f\">\n<parameter name=\"i\">1</parameter>\n<parameter name=\"o\">{\"a\": [1]}</parameter>\n</invoke>\n</minimax:tool_call>\n[e~[\n",
		"<minimax:tool_call><invoke name=\"",
		"<minimax:tool_call><invoke name=\"f\"><parameter name=\"a\">",
	})
}

func FuzzGemma4(f *testing.F) {
	fuzzFormat(f, "gemma4", []string{
		"<|channel>thought\nr<|tool_call>call:g{}<tool_call|><channel|>hi<|tool_call>call:f{s:<|\"|>a}b<|\"|>,n:-1.5e3,b:true,z:None,o:{<|\"|>k<|\"|>:[1,{x:[]}]}}<tool_call|><turn|>",
		"<|tool_call>call:f{a:",
		"<|tool_call>call:f{l:[<|\"|>x<|\"|>,]trailing]}<tool_call|><|tool_call>:call:",
	})
}

func FuzzKimiK3(f *testing.F) {
	fuzzFormat(f, "kimi_k3", []string{
		"r<|close|>think<|sep|><|open|>response<|sep|>hi<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool=\"a&amp;b\" index=\"1\"<|sep|><|open|>argument key=\"o\" type=\"object\"<|sep|>{\"a\": [1]}<|close|>argument<|sep|><|open|>argument key=\"s\" type=\"string\"<|sep|>x<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>",
		"<|open|>tools<|sep|><|open|>call tool=\"f\"<|sep|><|open|>json type=\"object\"<|sep|>{}<|close|>json<|sep|><|close|>call<|sep|>",
		"<|open|>tools<|sep|><|open|>call tool=\"",
	})
}

func FuzzSeedOSS(f *testing.F) {
	fuzzFormat(f, "seed_oss", []string{
		"<seed:think>r<seed:tool_call><function=f></function></seed:tool_call></seed:think>\n<seed:tool_call>\n<function=f>\n<parameter=o>{'a': 1}</parameter>\n<parameter=b>True</parameter>\n</function>\n</seed:tool_call><seed:eos>",
		"<seed:tool_call><function=",
		"</seed:think><seed:tool_call><function=f><parameter=i>1",
	})
}

// fakeParser returns a fixed result, or one built from the text.
type fakeParser func(text string) Result

func (f fakeParser) Parse(text string, _ []int32) Result { return f(text) }

// The fuzz oracle catches the faults it names: invented content, reasoning
// or call names, error messages that grow with the input at every error,
// and results that change from one parse to the next.
func TestFuzzOracleCatches(t *testing.T) {
	text := strings.Repeat("<tool_call>bad</tool_call>", 100) + " done"
	calls := 0
	for name, p := range map[string]Parser{
		"invented content":   fakeParser(func(string) Result { return Result{Content: "nothing like it"} }),
		"reordered content":  fakeParser(func(string) Result { return Result{Content: "done <tool_call>"} }),
		"invented reasoning": fakeParser(func(string) Result { return Result{Reasoning: "zzz"} }),
		"invented call name": fakeParser(func(string) Result {
			return Result{Calls: []chat.ToolCall{{Type: "function", Function: chat.FunctionCall{Name: "rm", Arguments: "{}"}}}}
		}),
		"quadratic errors": fakeParser(func(s string) Result {
			var r Result
			// Each error quotes the input from its call on.
			for i := strings.Index(s, "<tool_call>"); i >= 0; i = strings.Index(s[i+1:], "<tool_call>") + i + 1 {
				r.Errors = append(r.Errors, ParseError{Message: "bad call: " + s[i:]})
				if !strings.Contains(s[i+1:], "<tool_call>") {
					break
				}
			}
			return r
		}),
		"nondeterministic": fakeParser(func(string) Result { calls++; return Result{Content: strings.Repeat("d", calls%2)} }),
	} {
		require.NotEmpty(t, resultProblem(p, text), name)
	}
	good, err := New("hermes", Options{})
	require.NoError(t, err)
	require.Empty(t, resultProblem(good, text))
}
