package parser

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/internal/cputime"
)

// adversarialTexts are, for each format, the patterns that make naive tag
// scanners quadratic (rescanning to the end of the text from every opening
// tag, unbalanced quotes before every closing tag, unclosed parameters,
// deep nesting), n repeats each; the patterns that are all well-formed
// calls (cost per call, no rescan risk) repeat n/10 times.
func adversarialTexts(n int) map[string][]string {
	calls := n / 10
	return map[string][]string{
		"hermes": {
			strings.Repeat(`<tool_call>"</tool_call>"`, n),
			strings.Repeat(`<tool_call>{"a":"`, n),
			strings.Repeat(`<tool_call>`, n),
			strings.Repeat(`<think>`, n) + strings.Repeat(`</think>`, n),
			"<tool_call>" + strings.Repeat("1 ", n) + "</tool_call>",
			"<tool_call>" + strings.Repeat(`{"name": "f"} `, calls),
		},
		"qwen3_coder": {
			strings.Repeat(`<tool_call><function=f><parameter=a>`, n),
			"<function=f>" + strings.Repeat(`<parameter=a>x</parameter>`, calls) + "</function>",
			"<function=f><parameter=x>" + strings.Repeat("[", n) + "</parameter></function>",
			"<function=f><parameter=o>" + strings.Repeat(`{"a":`, n) + "</parameter></function>",
			strings.Repeat(`<function=`, n),
			// values whose </parameter> is missing or unpaired
			"<function=f>" + strings.Repeat("\n<parameter=zz>x", n),
			"<function=f><parameter=s>" + strings.Repeat("</parameter>x\n", n),
			"<function=f><parameter=s>" + strings.Repeat("<parameter=s>x</parameter>\ny", n),
			strings.Repeat("<function=f><parameter=s>x\n</function>", n),
		},
		"llama3_json": {
			strings.Repeat(`{"name": "f", "parameters": {}};`, calls),
			"{" + strings.Repeat(`"a": {`, n),
			strings.Repeat("<|python_tag|>{", n),
			strings.Repeat(`{"name": `, n),
			strings.Repeat(`{"name": "f", "parameters": {"x": 1} `, n),
			strings.Repeat(`{"a": 1} {"b"`, n),
		},
		"deepseek_v3": {
			strings.Repeat("<｜tool▁call▁begin｜>", n),
			strings.Repeat("<｜tool▁call▁begin｜>function<｜tool▁sep｜>f\n```json\n{}\n```<｜tool▁call▁end｜>", calls),
		},
		"gpt_oss": {
			strings.Repeat("<|start|>assistant<|channel|>commentary to=functions.f", n),
			strings.Repeat("<|channel|>analysis<|message|>x", n),
			strings.Repeat("<|start|>", n),
			strings.Repeat("<|start|>functions.f to=assistant<|channel|>commentary<|message|>{}", n),
		},
		"deepseek_v31": {
			strings.Repeat("<｜tool▁call▁begin｜>", n),
			strings.Repeat("<｜tool▁call▁begin｜>f<｜tool▁sep｜>{}<｜tool▁call▁end｜>", calls),
		},
		"kimi_k2": {
			strings.Repeat("<|tool_call_begin|>", n),
			strings.Repeat("<|tool_calls_section_begin|>x", n),
			strings.Repeat("<|tool_call_begin|>functions.f:0<|tool_call_argument_begin|>{}<|tool_call_end|>", calls),
		},
		"glm45": {
			strings.Repeat("<tool_call>", n),
			strings.Repeat("<tool_call>f<arg_key>", n),
			"<tool_call>f" + strings.Repeat("<arg_key>a</arg_key><arg_value>1</arg_value>", calls) + "</tool_call>",
			strings.Repeat("<tool_call>f<arg_key>a</arg_key><arg_value>", n),
		},
		"pythonic": {
			strings.Repeat("[f(a=", n),
			strings.Repeat("[f(a='", n),
			"[" + strings.Repeat("f(a=1), ", calls) + "f()]",
			strings.Repeat("[", n),
			strings.Repeat("[", n) + "]",
			strings.Repeat("[f(a=1)] ", n) + "]",
			"[f(a=" + strings.Repeat("[", n) + ")]",
		},
		"deepseek_v32": {
			strings.Repeat("<｜DSML｜function_calls>", n),
			strings.Repeat("<｜DSML｜function_calls><｜DSML｜invoke name=\"f\">", n),
			"<｜DSML｜function_calls><｜DSML｜invoke name=\"f\">" + strings.Repeat("<｜DSML｜parameter name=\"a\" string=\"false\">", n),
			"<｜DSML｜function_calls>" + strings.Repeat("<｜DSML｜invoke name=\"f\"></｜DSML｜invoke>", calls) + "</｜DSML｜function_calls>",
		},
		"deepseek_v4": {
			strings.Repeat("<｜DSML｜tool_calls>", n),
			strings.Repeat("<｜DSML｜function_calls><｜DSML｜ calls>", n),
			"<｜DSML｜tool_calls><｜DSML｜invoke name=\"f\">" + strings.Repeat("<｜DSML｜parameter name=\"a\" string=\"false\">x", n),
			"<｜DSML｜tool_calls>" + strings.Repeat("<｜DSML｜invoke name=\"f\"><｜DSML｜parameter name=\"a\">1", calls) + "</｜DSML｜tool_calls>",
		},
		"deepseek_v41": {
			strings.Repeat("<｜DSML｜ calls>", n),
			strings.Repeat("<｜DSML｜ calls><｜DSML｜ invoke name=\"f\">", n),
			"<｜DSML｜ calls><｜DSML｜ invoke name=\"f\">" + strings.Repeat("<｜DSML｜ parameter name=\"a\" string=\"true\">", n),
			"<｜DSML｜ calls>" + strings.Repeat("<｜DSML｜ invoke name=\"f\"></｜DSML｜ invoke>", calls) + "</｜DSML｜ calls>",
		},
		"minimax_m2": {
			strings.Repeat("<minimax:tool_call>", n),
			strings.Repeat("<minimax:tool_call><invoke name=\"f\">", n),
			"<minimax:tool_call><invoke name=\"f\">" + strings.Repeat("<parameter name=\"i\">1", n),
			"<minimax:tool_call>" + strings.Repeat("<invoke name=\"f\"><parameter name=\"s\">x</parameter></invoke>", calls) + "</minimax:tool_call>",
			strings.Repeat("[e~[", n),
		},
		"seed_oss": {
			strings.Repeat(`<seed:tool_call><function=f><parameter=a>`, n),
			"<function=f>" + strings.Repeat(`<parameter=a>x</parameter>`, calls) + "</function>",
			"<seed:tool_call><function=f><parameter=s>" + strings.Repeat("</parameter>x\n", n),
			strings.Repeat("<seed:think>", n) + strings.Repeat("</seed:think>", n),
			strings.Repeat("<seed:tool_call>", n),
		},
		"gemma4": {
			strings.Repeat("<|tool_call>", n),
			strings.Repeat("<|tool_call>call:f", n) + "{",
			strings.Repeat("<|tool_call>call:f<tool_call|>", n) + "{",
			strings.Repeat("<|tool_call>call:f{a:<|\"|>", n),
			"<|tool_call>call:f{" + strings.Repeat("a:{", n),
			"<|tool_call>call:f{a:" + strings.Repeat("[", n),
			"<|tool_call>call:f{" + strings.Repeat("a:1,", n) + "}<tool_call|>",
			"<|tool_call>call:f{" + strings.Repeat("k", n) + "}<tool_call|>",
			strings.Repeat("<|tool_call>call:f{s:<|\"|>x<|\"|>,l:[1,2]}<tool_call|>", calls),
			strings.Repeat("<|channel>thought", n) + strings.Repeat("<channel|>", n),
			strings.Repeat("<turn|>", n),
		},
		"kimi_k3": {
			strings.Repeat("<|open|>tools<|sep|>", n),
			strings.Repeat("<|open|>tools<|sep|><|open|>call tool=\"f\"", n),
			"<|open|>tools<|sep|><|open|>call tool=\"f\"<|sep|>" + strings.Repeat("<|open|>argument key=\"a\" type=\"string\"<|sep|>x", n),
			"<|open|>tools<|sep|>" + strings.Repeat("<|open|>call tool=\"f\" index=\"1\"<|sep|><|open|>argument key=\"a\" type=\"number\"<|sep|>1<|close|>argument<|sep|><|close|>call<|sep|>", calls),
			"<|open|>tools<|sep|><|open|>call " + strings.Repeat("k=\"", n) + "<|sep|><|close|>call<|sep|>",
			strings.Repeat("<|open|>think<|sep|>", n) + strings.Repeat("<|close|>think<|sep|>", n),
			strings.Repeat("<|close|>message<|sep|><|end_of_msg|>", n),
		},
		"mistral": {
			strings.Repeat("[TOOL_CALLS]", n),
			strings.Repeat(`[TOOL_CALLS]f[ARGS]{"a": `, n),
			strings.Repeat(`[TOOL_CALLS][{"name": `, n),
			strings.Repeat(`[TOOL_CALLS]f[ARGS]{}`, calls),
		},
	}
}

// linearBound is the most CPU time per parse that 8× the input may cost:
// linear parsing measures 7–10×, quadratic 64×.
const linearBound = 24.0

// parseGrowth is how many times the CPU time of one Parse grows from
// small to big (thread CPU time, see cputime.PerCall: other processes on
// a busy machine do not count).
func parseGrowth(t *testing.T, p Parser, small, big string) float64 {
	t.Helper()
	per := func(s string) float64 {
		d := cputime.PerCall(func() { p.Parse(s, nil) })
		if d == 0 {
			t.Skip("no per-thread CPU clock on this platform")
		}
		return float64(d)
	}
	ts, tb := per(small), per(big)
	return tb / ts
}

func adversarialParsers(t *testing.T, format string) map[bool]Parser {
	var ts []chat.ToolSchema
	require.NoError(t, json.Unmarshal([]byte(fuzzTools), &ts))
	out := map[bool]Parser{}
	for _, think := range []bool{false, true} {
		p, err := New(format, Options{ThinkAware: think, Tools: ts})
		require.NoError(t, err)
		out[think] = p
	}
	return out
}

// TestAdversarialInputsStayLinear parses each format's adversarial texts
// at 20,000 repeats (0.2–1 MB) and holds every result to checkResult's
// oracle. Without -race (make test's second pass) it also times each text
// at 2,500 and 20,000 repeats and fails if the CPU time per parse grows
// more than linearBound for the 8× input; the race detector's cost per
// memory access would blur the ratio, and the timeout bounds it there.
func TestAdversarialInputsStayLinear(t *testing.T) {
	const n = 20_000
	small, big := adversarialTexts(n/8), adversarialTexts(n)
	worst := 0.0
	defer func() {
		if !raceEnabled {
			t.Logf("largest growth for 8× the input: %.1f× (bound %.0f×)", worst, linearBound)
		}
	}()
	for format, texts := range big {
		t.Run(format, func(t *testing.T) {
			for think, p := range adversarialParsers(t, format) {
				for i, text := range texts {
					checkResult(t, p, text)
					if raceEnabled {
						continue
					}
					r := parseGrowth(t, p, small[format][i], text)
					worst = max(worst, r)
					if r > linearBound {
						t.Errorf("pattern %d (think %v, %.40q...): 8× the input took %.1f× the CPU time per parse: not linear", i, think, text, r)
					}
				}
			}
		})
	}
}

// rescanning is the fault TestAdversarialInputsStayLinear guards against:
// a parser that, from every opening tag, scans the rest of the text for its
// closing tag, byte by byte, before parsing as its format does.
type rescanning struct {
	Parser
	open, close string
}

func (r rescanning) Parse(text string, ids []int32) Result {
	for i := 0; i < len(text); i++ {
		if !strings.HasPrefix(text[i:], r.open) {
			continue
		}
		for j := i + len(r.open); j < len(text) && !strings.HasPrefix(text[j:], r.close); j++ {
		}
	}
	return r.Parser.Parse(text, ids)
}

// TestAdversarialInputsStayLinearCatchesQuadratic runs the same
// measurement on the injected fault and requires it to fail the bound.
// Smaller sizes than the real check's keep the quadratic runs short.
func TestAdversarialInputsStayLinearCatchesQuadratic(t *testing.T) {
	if raceEnabled {
		t.Skip("run without -race (make test's second pass does)")
	}
	p := rescanning{Parser: adversarialParsers(t, "hermes")[false], open: "<tool_call>", close: "</tool_call>"}
	const n = 2_000
	small, big := adversarialTexts(n / 8)["hermes"][2], adversarialTexts(n)["hermes"][2]
	r := parseGrowth(t, p, small, big)
	t.Logf("%d bytes → %d bytes: %.1f×", len(small), len(big), r)
	require.Greater(t, r, linearBound, "a quadratic parser passed the linear-time check")
}
