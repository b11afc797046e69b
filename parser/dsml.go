package parser

import (
	"fmt"
	"strings"
)

const (
	dsmlCalls       = "<｜DSML｜function_calls>"
	dsmlCallsEnd    = "</｜DSML｜function_calls>"
	dsmlToolCalls   = "<｜DSML｜tool_calls>" // DeepSeek-V4's spelling
	dsmlToolCallsEd = "</｜DSML｜tool_calls>"
	dsmlInvoke      = "<｜DSML｜invoke name=\""
	dsmlInvokeEnd   = "</｜DSML｜invoke>"
	dsmlParam       = "<｜DSML｜parameter name=\""
	dsmlParamEnd    = "</｜DSML｜parameter>"

	// DeepSeek-V4.1 writes a space after "｜DSML｜" in every tag name
	// and calls its block " calls" (vLLM's deepseek_v41_encoding.py:
	// tool_calls_block_name = " calls", tool_call_tag_name = " invoke",
	// tool_parameter_tag_name = " parameter").
	dsml41Calls     = "<｜DSML｜ calls>"
	dsml41CallsEnd  = "</｜DSML｜ calls>"
	dsml41Invoke    = "<｜DSML｜ invoke name=\""
	dsml41InvokeEnd = "</｜DSML｜ invoke>"
	dsml41Param     = "<｜DSML｜ parameter name=\""
	dsml41ParamEnd  = "</｜DSML｜ parameter>"
)

// dsmlDialect is one model's spelling of DSML: the block tags it accepts,
// its invoke and parameter tags, and the block openers of the other
// dialects, which are reported rather than parsed or passed over in
// silence (a V4.1 turn read as V4 would otherwise lose every call).
type dsmlDialect struct {
	format              string
	opens, closes       []string // accepted block tags, pairwise
	invoke, invokeEnd   string
	param, paramEnd     string
	foreign, foreignFor []string // other dialects' openers and their formats
	// lenient reads two slips the way vLLM's DeepSeek-V4 parser does
	// (tests/parser/engine/test_deepseek_v4.py, TestImplicitParameterClose
	// and TestMissingInvokeEnd): a parameter left unclosed ends where the
	// next parameter opens, and an invoke left unclosed ends at the
	// block's closing tag. Both readings are the only ones the text
	// allows, so nothing is guessed.
	lenient bool
	// ends are the end-of-turn markers dropped from the end of a turn.
	ends []string
	// schemaValues converts each value by its parameter's type in the
	// tool schema, as qwen3_coder does, instead of by the DSML string
	// attribute.
	schemaValues bool
}

var (
	dsmlV32 = &dsmlDialect{
		format: "deepseek_v32",
		opens:  []string{dsmlCalls, dsmlToolCalls}, closes: []string{dsmlCallsEnd, dsmlToolCallsEd},
		invoke: dsmlInvoke, invokeEnd: dsmlInvokeEnd, param: dsmlParam, paramEnd: dsmlParamEnd,
		foreign: []string{dsml41Calls}, foreignFor: []string{"deepseek_v41"},
		ends: []string{dsEOS},
	}
	dsmlV4 = &dsmlDialect{
		format: "deepseek_v4",
		opens:  []string{dsmlToolCalls}, closes: []string{dsmlToolCallsEd},
		invoke: dsmlInvoke, invokeEnd: dsmlInvokeEnd, param: dsmlParam, paramEnd: dsmlParamEnd,
		foreign: []string{dsml41Calls, dsmlCalls}, foreignFor: []string{"deepseek_v41", "deepseek_v32"},
		lenient: true, ends: []string{dsEOS},
	}
	dsmlV41 = &dsmlDialect{
		format: "deepseek_v41",
		opens:  []string{dsml41Calls}, closes: []string{dsml41CallsEnd},
		invoke: dsml41Invoke, invokeEnd: dsml41InvokeEnd, param: dsml41Param, paramEnd: dsml41ParamEnd,
		foreign: []string{dsmlToolCalls, dsmlCalls}, foreignFor: []string{"deepseek_v4", "deepseek_v32"},
		lenient: true, ends: []string{dsEOS},
	}
)

const (
	minimaxCalls     = "<minimax:tool_call>"
	minimaxCallsEnd  = "</minimax:tool_call>"
	minimaxInvoke    = "<invoke name=\""
	minimaxInvokeEnd = "</invoke>"
	minimaxParam     = "<parameter name=\""
	minimaxParamEnd  = "</parameter>"
	minimaxEOT       = "[e~["
)

// dsmlMiniMax is MiniMax-M2's spelling of the same grammar: DSML without
// the "｜DSML｜" prefix and without the string attribute.
var dsmlMiniMax = &dsmlDialect{
	format: "minimax_m2",
	opens:  []string{minimaxCalls}, closes: []string{minimaxCallsEnd},
	invoke: minimaxInvoke, invokeEnd: minimaxInvokeEnd, param: minimaxParam, paramEnd: minimaxParamEnd,
	ends: []string{minimaxEOT}, schemaValues: true,
}

// minimaxM2 parses MiniMax-M2's calls:
//
//	<minimax:tool_call>
//	<invoke name="NAME">
//	<parameter name="K">V</parameter>
//	</invoke>
//	</minimax:tool_call>
//
// A value is its exact text, converted by its parameter's type in the tool
// schema as qwen3_coder converts values (vLLM's minimax_m2 parser: with no
// schema every value stays a string). The arguments are written as
// Python's json.dumps writes them. Text outside the blocks is content; a
// trailing "[e~[" (MiniMax's end of turn) is not.
type minimaxM2 struct{}

func (minimaxM2) parse(text string, r *Result, v *validator) { dsmlMiniMax.parse(text, r, v) }

// deepseekV32 parses DeepSeek-V3.2's DSML calls:
//
//	<｜DSML｜function_calls>
//	<｜DSML｜invoke name="NAME">
//	<｜DSML｜parameter name="K" string="true">text</｜DSML｜parameter>
//	<｜DSML｜parameter name="N" string="false">3</｜DSML｜parameter>
//	</｜DSML｜invoke>
//	</｜DSML｜function_calls>
//
// A parameter with string="true" is its text; with string="false" its text
// is JSON, and text that is not JSON stays a string, as SGLang keeps it;
// without the attribute the text is read as JSON when it is JSON. The
// arguments are written as Python's json.dumps writes them, in the order
// written. <｜DSML｜tool_calls> (DeepSeek-V4's name for the block) is
// accepted too. Text outside the blocks is content; a trailing
// <｜end▁of▁sentence｜> is not. A DeepSeek-V4.1 block (<｜DSML｜ calls>,
// spaced) stays content and is reported as an error naming deepseek_v41.
type deepseekV32 struct{}

func (deepseekV32) parse(text string, r *Result, v *validator) { dsmlV32.parse(text, r, v) }

// deepseekV4 parses DeepSeek-V4's DSML: V3.2's invokes and parameters
// inside <｜DSML｜tool_calls>…</｜DSML｜tool_calls> (the only block name
// DeepSeek-V4's encoder writes, and the only one vLLM's deepseek_v4
// parser reads). A <｜DSML｜function_calls> block (V3.2) or a
// <｜DSML｜ calls> block (V4.1) stays content and is reported as an error
// that names the format it belongs to: a model served with the wrong
// parser should be noticed, not have its calls vanish into prose.
type deepseekV4 struct{}

func (deepseekV4) parse(text string, r *Result, v *validator) { dsmlV4.parse(text, r, v) }

// deepseekV41 parses DeepSeek-V4.1's spaced DSML, the V4 grammar with a
// space after "｜DSML｜" in every tag:
//
//	<｜DSML｜ calls>
//	<｜DSML｜ invoke name="NAME">
//	<｜DSML｜ parameter name="K" string="true">text</｜DSML｜ parameter>
//	</｜DSML｜ invoke>
//	</｜DSML｜ calls>
//
// Values are read as deepseek_v32 reads them. An unspaced V4 or V3.2
// block stays content and is reported as an error naming its format.
type deepseekV41 struct{}

func (deepseekV41) parse(text string, r *Result, v *validator) { dsmlV41.parse(text, r, v) }

func (d *dsmlDialect) parse(text string, r *Result, v *validator) {
	text = trimEnd(text, d.ends...)
	markers := append(append([]string(nil), d.opens...), d.foreign...)
	var content strings.Builder
	content.Grow(len(text))
	for {
		i := indexAny(text, markers...)
		if i < 0 {
			content.WriteString(text)
			break
		}
		content.WriteString(text[:i])
		rest := text[i:]
		if k := hasPrefixAt(rest, d.foreign); k >= 0 {
			// Another dialect's block: kept as text, reported once.
			r.addError("%s: %s opens a %s tool-call block, which the %s format does not read; serve this model with format %q",
				r.ordinal(), d.foreign[k], d.foreignFor[k], d.format, d.foreignFor[k])
			content.WriteString(d.foreign[k])
			text = rest[len(d.foreign[k]):]
			continue
		}
		k := hasPrefixAt(rest, d.opens)
		text = d.block(rest[len(d.opens[k]):], d.closes[k], r, v)
	}
	r.Content = content.String()
}

// hasPrefixAt returns the index of the first of prefixes s starts with,
// or -1.
func hasPrefixAt(s string, prefixes []string) int {
	for k, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return k
		}
	}
	return -1
}

// block parses the invokes of one block and returns the text after
// its closing tag.
func (d *dsmlDialect) block(s, closer string, r *Result, v *validator) string {
	for {
		s = strings.TrimLeft(s, jsonSpace)
		switch {
		case strings.HasPrefix(s, closer):
			return s[len(closer):]
		case strings.HasPrefix(s, d.invoke):
			which := r.ordinal()
			name, args, n, msg := d.invokeCall(s, closer, v)
			if msg != "" {
				r.addError("%s: %s", which, msg)
				if n >= len(s) {
					return "" // the broken call took the rest: one error
				}
			} else {
				v.check(r, which, name, args)
			}
			s = s[n:]
		case s == "":
			r.addError("%s: unclosed DSML block: missing %s", r.ordinal(), closer)
			return ""
		default:
			r.addError("%s: expected %s…\"> or %s, got %s", r.ordinal(), d.invoke, closer, snippet(s))
			if i := strings.Index(s, closer); i >= 0 {
				return s[i+len(closer):]
			}
			return ""
		}
	}
}

// invokeCall parses one invoke (<｜DSML｜invoke …>…</｜DSML｜invoke>) at
// the start of s: the name, the arguments as JSON, and the bytes used.
func (d *dsmlDialect) invokeCall(s, closer string, v *validator) (name, args string, n int, msg string) {
	i := len(d.invoke)
	q := strings.IndexByte(s[i:], '"')
	if q < 0 || !strings.HasPrefix(s[i+q:], "\">") {
		return "", "", d.skip(s), fmt.Sprintf("malformed %s…\">: %s", d.invoke, snippet(s))
	}
	name = s[i : i+q]
	if !validFuncName(name) {
		return "", "", d.skip(s), fmt.Sprintf("invalid function name %s", snippet(name))
	}
	var tool *toolInfo
	if v.tools != nil {
		tool = v.tools[name]
	}
	params := newPyDict()
	i += q + 2
	for {
		i += len(s[i:]) - len(strings.TrimLeft(s[i:], jsonSpace))
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, d.invokeEnd):
			var b strings.Builder
			pyDumps(&b, params)
			return name, b.String(), i + len(d.invokeEnd), ""
		case d.lenient && strings.HasPrefix(rest, closer):
			// The block closes the invoke; the block's loop reads the tag.
			var b strings.Builder
			pyDumps(&b, params)
			return name, b.String(), i, ""
		case strings.HasPrefix(rest, d.param):
			j := len(d.param)
			gt := strings.IndexByte(rest[j:], '>')
			if gt < 0 || strings.ContainsAny(rest[j:j+gt], "<\n") {
				return name, "", i + d.skip(rest), fmt.Sprintf("function %q: malformed %s…\"> at %s", name, d.param, snippet(rest))
			}
			attrs := rest[j : j+gt] // K" string="true"
			q := strings.IndexByte(attrs, '"')
			if q < 0 {
				return name, "", i + d.skip(rest), fmt.Sprintf("function %q: malformed parameter name in %s", name, snippet(rest))
			}
			key, kind := attrs[:q], strings.TrimSpace(attrs[q+1:])
			j += gt + 1
			// Only one search: the strict one would scan to the end of
			// the text at every unclosed parameter (quadratic).
			var end int
			if d.lenient {
				end = indexAny(rest[j:], d.paramEnd, d.param)
			} else {
				end = strings.Index(rest[j:], d.paramEnd)
			}
			if end < 0 {
				return name, "", len(s), fmt.Sprintf("function %q: unclosed parameter %q: missing %s", name, key, d.paramEnd)
			}
			if d.schemaValues {
				params.set(key, tool.convert(key, rest[j:j+end]))
			} else {
				params.set(key, dsmlValue(rest[j:j+end], kind))
			}
			i += j + end
			if strings.HasPrefix(rest[j+end:], d.paramEnd) {
				i += len(d.paramEnd)
			}
		case rest == "":
			return name, "", len(s), fmt.Sprintf("function %q: unclosed invoke: missing %s", name, d.invokeEnd)
		default:
			return name, "", i + d.skip(rest), fmt.Sprintf("function %q: expected %s…\"> or %s, got %s", name, d.param, d.invokeEnd, snippet(rest))
		}
	}
}

// dsmlValue converts a parameter's text by its string attribute.
func dsmlValue(raw, kind string) pyValue {
	if kind == `string="true"` {
		return raw
	}
	if val, ok := pyJSONLoads(raw); ok {
		return finiteOr(val, raw)
	}
	return raw
}

// skip returns how far to skip after a malformed invoke: past its
// closing tag, else to the block's end or the next invoke.
func (d *dsmlDialect) skip(s string) int {
	markers := append([]string{d.invokeEnd, d.invoke}, d.closes...)
	if i := indexAny(s[1:], markers...); i >= 0 {
		i++
		if strings.HasPrefix(s[i:], d.invokeEnd) {
			return i + len(d.invokeEnd)
		}
		return i
	}
	return len(s)
}
