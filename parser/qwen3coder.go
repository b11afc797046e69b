package parser

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

const (
	qcFuncOpen   = "<function="
	qcFuncClose  = "</function>"
	qcParamOpen  = "<parameter="
	qcParamClose = "</parameter>"
)

// qwen3Coder parses Qwen3-Coder's XML calls:
//
//	<tool_call>
//	<function=NAME>
//	<parameter=P>
//	value
//	</parameter>
//	</function>
//	</tool_call>
//
// The function block is what makes a call: as in vLLM's qwen3_coder
// parser, a <function=…> block without the <tool_call> wrapper is a call
// too, and so is each of several blocks in one wrapper; a wrapper left
// open after a complete block is not an error. One newline after
// <parameter=P> and one before </parameter> are not part of the value, and
// values are converted by the tool schema's types and written with
// Python's json.dumps (", " and ": " separators, non-ASCII kept) in the
// order the model wrote them.
//
// Values may hold the format's own tags as text (a model writing a parser
// test or a chat template). A value ends at the first </parameter> that is
// not paired with a <parameter=…> opened inside the value and that is
// followed, after white space, by a structural tag: <parameter=NAME> (NAME
// one of the tool's parameters when its schema is known), </function>,
// </tool_call> or the end of the text. Other tags in a value are text and
// never make a call or a parameter. When no such </parameter> exists the
// model forgot it, and (as in vLLM) the value ends at the next
// <parameter=NAME>, </function>, <tool_call> or <function= that starts a
// line; a misspelled close on the value's last line ("</parameter1>") is
// then dropped, as SGLang drops it. A function name must be an identifier-like token (no spaces,
// braces or tags): an unrendered template line such as
// "<function={{ name }}>" is an error, not a call.
//
// After a malformed call, parsing goes on at the next <tool_call> or
// <function= that starts before the next </tool_call>, else after that
// </tool_call>.
type qwen3Coder struct{}

func (qwen3Coder) parse(text string, r *Result, v *validator) {
	parseQwenXML(trimEnd(text, "<|im_end|>", "<|endoftext|>"), hermesOpen, hermesClose, r, v)
}

// parseQwenXML parses the <function=…> calls of qwen3_coder's XML, in
// wrappers spelled open and close (<tool_call>…</tool_call> for Qwen,
// <seed:tool_call>…</seed:tool_call> for Seed-OSS).
func parseQwenXML(text, open, close string, r *Result, v *validator) {
	var content strings.Builder
	content.Grow(len(text))
	sc := &qcScanner{s: text, open: open, close: close, fallbackAt: -2, closeAt: -2}
	pos := 0
	for {
		i := indexAny(text[pos:], open, qcFuncOpen)
		if i < 0 {
			content.WriteString(text[pos:])
			break
		}
		content.WriteString(text[pos : pos+i])
		pos += i
		which := r.ordinal()
		if strings.HasPrefix(text[pos:], open) {
			pos += len(open)
			pos += len(text[pos:]) - len(strings.TrimLeft(text[pos:], jsonSpace))
			if !strings.HasPrefix(text[pos:], qcFuncOpen) {
				r.addError("%s: expected <function=NAME> after %s, got %s", which, open, snippet(text[pos:]))
				pos = sc.resync(pos)
				continue
			}
		}
		name, args, n, msg := sc.function(pos, v)
		if msg != "" {
			r.addError("%s: %s", which, msg)
			pos = sc.resync(n)
			continue
		}
		v.check(r, which, name, args)
		pos = n
		// The </tool_call> closing the wrapper, if there is one.
		if t := strings.TrimLeft(text[pos:], jsonSpace); strings.HasPrefix(t, close) {
			pos = len(text) - len(t) + len(close)
		}
	}
	r.Content = content.String()
}

// resync finds where to go on after a malformed call that stopped at
// s[at:]: at the next <tool_call> or <function=> if one comes first (the
// model started a new call without closing this one), else after the next
// </tool_call>, else nowhere (the rest belonged to the broken call).
func (sc *qcScanner) resync(at int) int {
	s := sc.s
	i := indexAny(s[at:], sc.close, sc.open, qcFuncOpen)
	switch {
	case i < 0:
		return len(s)
	case strings.HasPrefix(s[at+i:], sc.close):
		return at + i + len(sc.close)
	}
	return at + i
}

// qcScanner finds the ends of parameter values in one turn. It remembers
// what earlier searches learned so that a turn's work stays linear:
// once a search for a paired </parameter> has run to the end of the text
// without finding one, later values use only the forgotten-tag rule, and
// the position of the next line-start tag is kept for reuse.
type qcScanner struct {
	s           string
	open, close string // the wrapper tags
	// noPairs is set once a search for a closing </parameter> reached the
	// end of the text.
	noPairs bool
	// fallbackFrom/fallbackAt cache the last forgotten-tag search: the
	// first line-start tag at or after fallbackFrom is at fallbackAt (-1:
	// none; -2: no search yet). Only valid for the same tool.
	fallbackFrom, fallbackAt int
	fallbackTool             *toolInfo
	// closeFrom/closeAt cache nextStructuralClose the same way.
	closeFrom, closeAt int
	closeTool          *toolInfo
}

// function parses one <function=NAME>…</function> at s[at:]. It returns
// the name, the arguments as JSON, and where parsing stopped (after the
// block, or where it went wrong when msg is set).
func (sc *qcScanner) function(at int, v *validator) (name, args string, n int, msg string) {
	s := sc.s
	i := at + len(qcFuncOpen)
	gt := strings.IndexByte(s[i:], '>')
	if gt < 0 {
		return "", "", len(s), fmt.Sprintf("unclosed <function=: missing '>' after %s", snippet(s[i:]))
	}
	name = strings.TrimSpace(s[i : i+gt])
	if !validFuncName(name) {
		return "", "", i, fmt.Sprintf("invalid function name %s in <function=NAME>", snippet(s[i:i+gt]))
	}
	i += gt + 1
	var tool *toolInfo
	if v.tools != nil {
		tool = v.tools[name]
	}
	params := newPyDict()
	for {
		i += len(s[i:]) - len(strings.TrimLeft(s[i:], jsonSpace))
		rest := s[i:]
		switch {
		case strings.HasPrefix(rest, qcFuncClose):
			var b strings.Builder
			pyDumps(&b, params)
			return name, b.String(), i + len(qcFuncClose), ""
		case strings.HasPrefix(rest, qcParamOpen):
			j := i + len(qcParamOpen)
			gt := strings.IndexByte(s[j:], '>')
			if gt < 0 || strings.ContainsAny(s[j:j+gt], "<\n") {
				return name, "", j, fmt.Sprintf("function %q: malformed <parameter=NAME> at %s", name, snippet(rest))
			}
			pname := strings.TrimSpace(s[j : j+gt])
			j += gt + 1
			end, next := sc.valueEnd(j, tool)
			if end < 0 {
				return name, "", len(s), fmt.Sprintf("function %q: unclosed <parameter=%s>: missing </parameter>", name, pname)
			}
			raw := s[j:end]
			if next == end {
				raw = stripDriftedClose(raw)
			}
			raw = strings.TrimPrefix(raw, "\n")
			raw = strings.TrimSuffix(raw, "\n")
			params.set(pname, tool.convert(pname, raw))
			i = next
		case rest == "":
			return name, "", len(s), fmt.Sprintf("function %q: unclosed <function=%s>: missing </function>", name, name)
		case strings.HasPrefix(rest, sc.open) || strings.HasPrefix(rest, qcFuncOpen):
			return name, "", i, fmt.Sprintf("function %q: unclosed <function=%s>: missing </function> before the next call", name, name)
		default:
			return name, "", i, fmt.Sprintf("function %q: expected <parameter=NAME> or </function>, got %s", name, snippet(rest))
		}
	}
}

// stripDriftedClose removes a misspelled close tag ("</parameter1>",
// "</parameter_x>", a bare "</parameter") from the end of a value whose
// real </parameter> was missing, as SGLang does: the model meant it as the
// close. A value that was properly closed keeps such text.
func stripDriftedClose(raw string) string {
	t := strings.TrimRight(raw, jsonSpace)
	line := t[strings.LastIndexByte(t, '\n')+1:]
	rest, ok := strings.CutPrefix(strings.TrimLeft(line, " \t"), "</parameter")
	if !ok {
		return raw
	}
	rest = strings.TrimSuffix(rest, ">")
	for i := 0; i < len(rest); i++ {
		if !isIdentByte(rest, i) {
			return raw
		}
	}
	return t[:len(t)-len(line)]
}

// validFuncName rejects names no tool can have: empty, or holding white
// space, tags, quotes, backslashes or template braces (an unrendered
// "{{ name }}").
func validFuncName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "<>{}\"'\\\n\t\r ")
}

// valueEnd finds the end of the value starting at s[start:]: end is where
// the value stops and next where parsing goes on (after its
// </parameter>, or at the tag that ended a value whose </parameter> was
// forgotten). end is -1 when the value runs to the end of the text.
func (sc *qcScanner) valueEnd(start int, tool *toolInfo) (end, next int) {
	s := sc.s
	if !sc.noPairs {
		depth := 0
		for i := start; ; {
			k := indexAny(s[i:], qcParamOpen, qcParamClose)
			if k < 0 {
				sc.noPairs = true
				break
			}
			i += k
			if strings.HasPrefix(s[i:], qcParamOpen) {
				depth++
				i += len(qcParamOpen)
				continue
			}
			after := i + len(qcParamClose)
			switch {
			case depth > 0:
				depth--
			case sc.structuralAfterClose(after, tool):
				return i, after
			}
			i = after
		}
	}
	// The </parameter> was forgotten (or every one left is paired with
	// literal text): the value ends at the first structural tag.
	close := sc.nextStructuralClose(start, tool)
	fb := sc.nextLineStartTag(start, tool)
	switch {
	case close >= 0 && (fb < 0 || close < fb):
		return close, close + len(qcParamClose)
	case fb >= 0:
		return fb, fb
	}
	return -1, len(s)
}

// structuralAfterClose reports whether a </parameter> ending just before
// s[i:] is followed by a tag that makes it a real close.
func (sc *qcScanner) structuralAfterClose(i int, tool *toolInfo) bool {
	t := strings.TrimLeft(sc.s[i:], jsonSpace)
	switch {
	case t == "", strings.HasPrefix(t, qcFuncClose), strings.HasPrefix(t, sc.close):
		return true
	case strings.HasPrefix(t, qcParamOpen):
		return tool.knownParamTag(t)
	}
	return false
}

// knownParamTag reports whether t starts with <parameter=NAME> for a NAME
// the tool has (any NAME when its schema is unknown).
func (t *toolInfo) knownParamTag(s string) bool {
	rest := s[len(qcParamOpen):]
	gt := strings.IndexByte(rest, '>')
	if gt < 0 || strings.ContainsAny(rest[:gt], "<\n") {
		return false
	}
	if t == nil || !t.hasProps {
		return true
	}
	_, ok := t.props[strings.TrimSpace(rest[:gt])]
	return ok
}

// nextStructuralClose returns the first </parameter> at or after from
// that structuralAfterClose accepts, or -1. Its scan is bounded by the
// cache of the last answer.
func (sc *qcScanner) nextStructuralClose(from int, tool *toolInfo) int {
	if sc.closeAt != -2 && sc.closeTool == tool && from >= sc.closeFrom && (sc.closeAt < 0 || sc.closeAt >= from) {
		return sc.closeAt
	}
	s := sc.s
	at := -1
	for i := from; ; {
		k := strings.Index(s[i:], qcParamClose)
		if k < 0 {
			break
		}
		i += k
		if sc.structuralAfterClose(i+len(qcParamClose), tool) {
			at = i
			break
		}
		i += len(qcParamClose)
	}
	sc.closeFrom, sc.closeAt, sc.closeTool = from, at, tool
	return at
}

// nextLineStartTag returns the first position at or after from where a
// line starts with <parameter=NAME> (a known NAME), </function>,
// <tool_call> or <function=, or -1.
func (sc *qcScanner) nextLineStartTag(from int, tool *toolInfo) int {
	if sc.fallbackAt != -2 && sc.fallbackTool == tool && from >= sc.fallbackFrom && (sc.fallbackAt < 0 || sc.fallbackAt >= from) {
		return sc.fallbackAt
	}
	s := sc.s
	at := -1
	for i := from; ; {
		k := strings.Index(s[i:], "\n<")
		if k < 0 {
			break
		}
		i += k + 1
		t := s[i:]
		if strings.HasPrefix(t, qcFuncClose) || strings.HasPrefix(t, sc.open) || strings.HasPrefix(t, qcFuncOpen) ||
			(strings.HasPrefix(t, qcParamOpen) && tool.knownParamTag(t)) {
			at = i
			break
		}
	}
	sc.fallbackFrom, sc.fallbackAt, sc.fallbackTool = from, at, tool
	return at
}

// convert turns one parameter's text into a value the way vLLM's
// qwen3_coder parser does. The parameter's type comes from its schema
// (see paramType): a parameter the schema does not list stays a string,
// except that "null" (any case) is None. For a listed one:
//   - a nullable parameter's "null" or "None" is None;
//   - string-like types (string, str, text, varchar, char, enum) keep
//     the text, even "null";
//   - otherwise "null" (any case) is None;
//   - int…/uint…/long…/short…/unsigned… → int();
//   - num…/float… → float(), written as an int when integral;
//   - boolean/bool/binary → value.lower() == "true";
//   - object/array/arr/dict…/list… → json.loads then ast.literal_eval,
//     and a string that holds such a value once more (a model trained on
//     a template that wrote json.dumps(str(dict)) quotes its objects);
//   - any other type → ast.literal_eval.
//
// A conversion that fails keeps the string, and the tool's own argument
// validation then names the bad field. Deviations from vLLM, each where
// it would lose data or produce no JSON or invalid JSON: a num…/float…
// value written as an integer keeps every digit (float() rounds beyond
// 2^53); values json.dumps cannot write (sets, bytes, complex) and values
// holding NaN or ±Infinity stay strings.
func (t *toolInfo) convert(name, raw string) pyValue {
	if t == nil || !t.hasProps {
		if strings.ToLower(raw) == "null" {
			return nil
		}
		return raw
	}
	pt, ok := t.props[name]
	if !ok {
		if strings.ToLower(raw) == "null" {
			return nil
		}
		return raw
	}
	if pt.nullable && (raw == "null" || raw == "None") {
		return nil
	}
	typ := pt.typ
	switch typ {
	case "string", "str", "text", "varchar", "char", "enum":
		return raw
	}
	if strings.ToLower(raw) == "null" {
		return nil
	}
	switch typ {
	case "boolean", "bool", "binary":
		return strings.ToLower(raw) == "true"
	}
	switch {
	case hasAnyPrefix(typ, "int", "uint", "long", "short", "unsigned"):
		if n, ok := pyInt(raw); ok {
			return n
		}
		return raw
	case hasAnyPrefix(typ, "num", "float"):
		if n, ok := pyInt(raw); ok {
			return n // every digit, where float() would round
		}
		f, ok := pyFloat(raw)
		if !ok || math.IsInf(f, 0) || math.IsNaN(f) {
			return raw // int(inf) and int(nan) raise in vLLM's check
		}
		if f == math.Trunc(f) {
			return floatToInt(f)
		}
		return f
	}
	if typ == "object" || typ == "array" || typ == "arr" || hasAnyPrefix(typ, "dict", "list") {
		if val, ok := containerValue(raw); ok {
			if s, isStr := val.(string); isStr {
				// A quoted container: decode the string once more.
				if inner, ok := containerValue(s); ok {
					if _, innerStr := inner.(string); !innerStr {
						return finiteOr(inner, raw)
					}
				}
			}
			return finiteOr(val, raw)
		}
		return raw
	}
	if val, ok := pyLiteralEval(raw); ok {
		return finiteOr(val, raw)
	}
	return raw
}

// containerValue reads raw as json.loads, else ast.literal_eval, would.
func containerValue(raw string) (pyValue, bool) {
	if val, ok := pyJSONLoads(raw); ok {
		return val, true
	}
	return pyLiteralEval(raw)
}

// finiteOr returns v, or raw when v holds NaN or an infinity: Python
// writes those as NaN/Infinity, which is not JSON (vLLM passes such
// arguments on; here the parameter stays a string, for the tool's
// validation to name).
func finiteOr(v pyValue, raw string) pyValue {
	if hasNonFinite(v) {
		return raw
	}
	return v
}

func hasNonFinite(v pyValue) bool {
	switch x := v.(type) {
	case float64:
		return math.IsInf(x, 0) || math.IsNaN(x)
	case []pyValue:
		for _, e := range x {
			if hasNonFinite(e) {
				return true
			}
		}
	case *pyDict:
		if x.nonFinite {
			return true
		}
		for _, e := range x.vals {
			if hasNonFinite(e) {
				return true
			}
		}
	}
	return false
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// paramType is what a parameter's schema says about its value.
type paramType struct {
	// typ is the first non-null type, as Python's str(...).strip().lower()
	// prints it: from "type" (a string, or the first non-"null" entry of a
	// list), else from the first non-null branch of "anyOf" or "oneOf";
	// "string" when none is found.
	typ string
	// nullable: "null" is one of the types, one of the branches is
	// {"type": "null"}, or "nullable": true.
	nullable bool
}

// newToolInfo reads the parameter types from a tool's JSON Schema the way
// vLLM does: the "properties" object if there is one, else the parameters
// object itself; each parameter's type as paramType describes.
func newToolInfo(params json.RawMessage) (*toolInfo, error) {
	info := &toolInfo{props: map[string]paramType{}}
	if len(params) == 0 || string(params) == "null" {
		return info, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil {
		return nil, fmt.Errorf("parameters must be a JSON object: %w", err)
	}
	if raw, ok := top["type"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "object" {
			info.plainText = true
		}
	}
	props := top
	if raw, ok := top["properties"]; ok {
		props = nil
		if err := json.Unmarshal(raw, &props); err != nil {
			return info, nil // vLLM then finds no usable properties either
		}
	}
	info.hasProps = len(props) > 0
	for name, raw := range props {
		pt := readParamType(raw, 0)
		if pt.typ == "" {
			pt.typ = "string"
		}
		info.props[name] = pt
	}
	return info, nil
}

// readParamType reads one parameter schema; typ is "" when it names no
// type.
func readParamType(raw json.RawMessage, depth int) paramType {
	var field map[string]json.RawMessage
	if depth > 8 || json.Unmarshal(raw, &field) != nil {
		return paramType{}
	}
	pt := paramType{}
	var nullable bool
	if json.Unmarshal(field["nullable"], &nullable) == nil && nullable {
		pt.nullable = true
	}
	if t, ok := field["type"]; ok {
		var s string
		var list []json.RawMessage
		switch {
		case json.Unmarshal(t, &s) == nil:
			pt.typ = strings.ToLower(strings.TrimSpace(s))
			if pt.typ == "null" {
				pt.typ, pt.nullable = "", true
			}
		case json.Unmarshal(t, &list) == nil:
			for _, e := range list {
				var es string
				if json.Unmarshal(e, &es) != nil {
					continue
				}
				es = strings.ToLower(strings.TrimSpace(es))
				if es == "null" {
					pt.nullable = true
				} else if pt.typ == "" {
					pt.typ = es
				}
			}
		default:
			pt.typ = strings.ToLower(strings.TrimSpace(string(t)))
		}
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		var branches []json.RawMessage
		if json.Unmarshal(field[key], &branches) != nil {
			continue
		}
		for _, b := range branches {
			bt := readParamType(b, depth+1)
			if bt.nullable && bt.typ == "" {
				pt.nullable = true
				continue
			}
			if pt.typ == "" && bt.typ != "" {
				pt.typ = bt.typ
			}
			pt.nullable = pt.nullable || bt.nullable
		}
	}
	return pt
}
