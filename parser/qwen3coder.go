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
// <parameter=P> and
// one before </parameter> are not part of the value, and values are
// converted by the tool schema's types and written with Python's
// json.dumps (", " and ": " separators, non-ASCII kept) in the order the
// model wrote them. A value ends at the first </parameter>; it may contain
// </tool_call>, but a </function>, <tool_call> or <function= before the
// </parameter> means the parameter was never closed (vLLM cannot take
// these in values either). After a malformed call, parsing goes on at the
// next <tool_call> or <function= that starts before the next </tool_call>,
// else after that </tool_call>.
type qwen3Coder struct{}

func (qwen3Coder) parse(text string, r *Result, v *validator) {
	text = trimEnd(text, "<|im_end|>", "<|endoftext|>")
	var content strings.Builder
	content.Grow(len(text))
	for {
		i := indexAny(text, hermesOpen, qcFuncOpen)
		if i < 0 {
			content.WriteString(text)
			break
		}
		content.WriteString(text[:i])
		rest := text[i:]
		which := r.ordinal()
		if strings.HasPrefix(rest, hermesOpen) {
			rest = strings.TrimLeft(rest[len(hermesOpen):], jsonSpace)
			if !strings.HasPrefix(rest, qcFuncOpen) {
				r.addError("%s: expected <function=NAME> after <tool_call>, got %s", which, snippet(rest))
				text = resync(rest)
				continue
			}
		}
		name, args, n, msg := parseQwenFunction(rest, v)
		if msg != "" {
			r.addError("%s: %s", which, msg)
			text = resync(rest[n:])
			continue
		}
		v.check(r, which, name, args)
		rest = rest[n:]
		// The </tool_call> closing the wrapper, if there is one.
		if t := strings.TrimLeft(rest, jsonSpace); strings.HasPrefix(t, hermesClose) {
			rest = t[len(hermesClose):]
		}
		text = rest
	}
	r.Content = content.String()
}

// resync finds where to go on after a malformed call: at the next
// <tool_call> or <function=> if one comes first (the model started a new
// call without closing this one), else after the next </tool_call>, else
// nowhere (the rest belonged to the broken call).
func resync(s string) string {
	i := indexAny(s, hermesClose, hermesOpen, qcFuncOpen)
	switch {
	case i < 0:
		return ""
	case strings.HasPrefix(s[i:], hermesClose):
		return s[i+len(hermesClose):]
	}
	return s[i:]
}

// parseQwenFunction parses one <function=NAME>…</function> at the start of
// s. It returns the name, the arguments as JSON, and the number of bytes
// consumed; on failure msg says what is wrong and n is where parsing
// stopped.
func parseQwenFunction(s string, v *validator) (name, args string, n int, msg string) {
	i := len(qcFuncOpen)
	gt := strings.IndexByte(s[i:], '>')
	if gt < 0 {
		return "", "", len(s), fmt.Sprintf("unclosed <function=: missing '>' after %s", snippet(s[i:]))
	}
	name = strings.TrimSpace(s[i : i+gt])
	if name == "" || strings.ContainsAny(name, "<\n") {
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
			j := len(qcParamOpen)
			gt := strings.IndexByte(rest[j:], '>')
			if gt < 0 || strings.ContainsAny(rest[j:j+gt], "<\n") {
				return name, "", i + j, fmt.Sprintf("function %q: malformed <parameter=NAME> at %s", name, snippet(rest))
			}
			pname := strings.TrimSpace(rest[j : j+gt])
			j += gt + 1
			end := indexAny(rest[j:], qcParamClose, qcFuncClose, hermesOpen, qcFuncOpen)
			if end < 0 || !strings.HasPrefix(rest[j+end:], qcParamClose) {
				stop := len(rest)
				if end >= 0 {
					stop = j + end
				}
				return name, "", i + stop, fmt.Sprintf("function %q: unclosed <parameter=%s>: missing </parameter>", name, pname)
			}
			raw := rest[j : j+end]
			raw = strings.TrimPrefix(raw, "\n")
			raw = strings.TrimSuffix(raw, "\n")
			params.set(pname, tool.convert(pname, raw))
			i += j + end + len(qcParamClose)
		case rest == "":
			return name, "", len(s), fmt.Sprintf("function %q: unclosed <function=%s>: missing </function>", name, name)
		default:
			return name, "", i, fmt.Sprintf("function %q: expected <parameter=NAME> or </function>, got %s", name, snippet(rest))
		}
	}
}

// convert turns one parameter's text into a value the way vLLM's
// qwen3_coder parser does: "null" (any case) is None; a parameter the
// schema does not list stays a string; otherwise the schema type decides
// (string-like → string; int…/uint…/long…/short…/unsigned… → int();
// num…/float… → float(), written as an int when integral; boolean/bool/
// binary → value.lower() == "true"; object/array/arr/dict…/list… →
// json.loads then ast.literal_eval; any other type → ast.literal_eval).
// A conversion that fails keeps the string, and the tool's own argument
// validation then names the bad field. Two deviations from vLLM, where it
// would produce no JSON or invalid JSON: values json.dumps cannot write
// (sets, bytes, complex) and values holding NaN or ±Infinity stay strings.
func (t *toolInfo) convert(name, raw string) pyValue {
	if strings.ToLower(raw) == "null" {
		return nil
	}
	if t == nil || !t.hasProps {
		return raw
	}
	typ, ok := t.props[name]
	if !ok {
		return raw
	}
	switch typ {
	case "string", "str", "text", "varchar", "char", "enum":
		return raw
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
		if val, ok := pyJSONLoads(raw); ok {
			return finiteOr(val, raw)
		}
	}
	if val, ok := pyLiteralEval(raw); ok {
		return finiteOr(val, raw)
	}
	return raw
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

// newToolInfo reads the parameter types from a tool's JSON Schema the way
// vLLM does: the "properties" object if there is one, else the parameters
// object itself; each parameter's "type" as Python's
// str(...).strip().lower() would print it, "string" when absent.
func newToolInfo(params json.RawMessage) (*toolInfo, error) {
	info := &toolInfo{props: map[string]string{}}
	if len(params) == 0 || string(params) == "null" {
		return info, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(params, &top); err != nil {
		return nil, fmt.Errorf("parameters must be a JSON object: %w", err)
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
		var field map[string]json.RawMessage
		if json.Unmarshal(raw, &field) != nil {
			info.props[name] = "string"
			continue
		}
		t, ok := field["type"]
		if !ok {
			info.props[name] = "string"
			continue
		}
		var s string
		if json.Unmarshal(t, &s) == nil {
			info.props[name] = strings.ToLower(strings.TrimSpace(s))
		} else {
			// A list such as ["integer", "null"] prints as "['integer',
			// 'null']", which matches none of the named types.
			info.props[name] = "[other]"
		}
	}
	return info, nil
}
