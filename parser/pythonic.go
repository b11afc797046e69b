package parser

import (
	"fmt"
	"strings"
)

const (
	pyStartTag = "<|python_start|>"
	pyEndTag   = "<|python_end|>"
)

// pythonic parses calls written as a Python list of function calls with
// keyword arguments (Llama-3.2 and Llama-4 pythonic templates):
//
//	[get_weather(city='Paris', days=3), now()]
//
// Llama 4 may wrap the list in <|python_start|>…<|python_end|>. Argument
// values are Python literals (strings, numbers, True/False/None, lists,
// tuples, dicts) and become JSON as Python's json.dumps writes them; the
// arguments keep the order written.
//
// When the whole turn (markers and white space aside) is one such list, as
// vLLM requires, or the list is inside <|python_start|>…, a list that does
// not parse (a positional argument, an expression, an unclosed bracket) is
// one error and its text stays content. Elsewhere a list of calls may stand
// in prose, as SGLang finds it ("Here's a call: [f(x=1)] done"), and text
// in brackets that is not a call list ("[1] see the docs", "[f(x)]") is
// prose, not an error. Text outside the lists is content.
type pythonic struct{}

func (pythonic) parse(text string, r *Result, v *validator) {
	text = trimEnd(text, "<|eot_id|>", "<|eom_id|>", "<|eot|>", "<|eom|>")
	whole := strings.TrimSpace(strings.ReplaceAll(strings.ReplaceAll(text, pyStartTag, ""), pyEndTag, ""))
	// The "[" that starts the whole turn, when the turn is one list.
	strictAt := -1
	if strings.HasPrefix(whole, "[") && strings.HasSuffix(whole, "]") {
		strictAt = strings.IndexByte(text, '[')
	}
	var content strings.Builder
	content.Grow(len(text))
	pos, i := 0, 0
	inBlock := false
	for i < len(text) {
		k := strings.IndexAny(text[i:], "[<")
		if k < 0 {
			break
		}
		k += i
		if text[k] == '<' {
			switch {
			case strings.HasPrefix(text[k:], pyStartTag):
				content.WriteString(text[pos:k])
				inBlock = true
				i, pos = k+len(pyStartTag), k+len(pyStartTag)
			case strings.HasPrefix(text[k:], pyEndTag):
				content.WriteString(text[pos:k])
				inBlock = false
				i, pos = k+len(pyEndTag), k+len(pyEndTag)
			default:
				i = k + 1
			}
			continue
		}
		strict := inBlock || k == strictAt
		if !strict && !startsPyCall(text[k+1:]) {
			i = k + 1
			continue
		}
		calls, n, bad, msg := parsePyCalls(text[k:])
		if msg != "" {
			if strict {
				r.addError("%s: %s: %s", r.ordinal(), msg, snippet(text[k:]))
				// One error per block: the rest of a block whose list did
				// not parse is read as prose, so "[[[[…" is one error, not
				// one per bracket (each quoting the rest of the text).
				inBlock = false
			}
			i = k + max(bad, 1)
			continue
		}
		content.WriteString(text[pos:k])
		for _, c := range calls {
			v.check(r, r.ordinal(), c.name, c.args)
		}
		i, pos = k+n, k+n
	}
	content.WriteString(text[pos:])
	r.Content = content.String()
}

// startsPyCall reports whether s (after a "[") starts like a call:
// optional space, an identifier, optional space, "(".
func startsPyCall(s string) bool {
	s = strings.TrimLeft(s, jsonSpace)
	j := 0
	for j < len(s) && (isIdentByte(s, j) || s[j] == '.') {
		j++
	}
	if j == 0 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	return strings.HasPrefix(strings.TrimLeft(s[j:], " \t"), "(")
}

type pyCall struct{ name, args string }

// parsePyCalls parses the list of calls at the start of s. On success it
// returns the calls and the list's length; on failure msg says what is
// wrong and bad is how far parsing got.
func parsePyCalls(s string) (calls []pyCall, n, bad int, msg string) {
	p := &valueParser{s: s}
	fail := func(format string, args ...any) ([]pyCall, int, int, string) {
		return nil, 0, p.i, fmt.Sprintf(format, args...)
	}
	p.i++ // '['
	p.skipPySpace()
	if p.lit("]") {
		return fail("an empty call list")
	}
	for {
		p.skipPySpace()
		start := p.i
		for p.i < len(s) && (isIdentByte(s, p.i) || s[p.i] == '.') {
			p.i++
		}
		name := s[start:p.i]
		if !validFuncName(name) || name[0] >= '0' && name[0] <= '9' {
			return fail("expected a function name")
		}
		p.skipPySpace()
		if !p.lit("(") {
			return fail("expected ( after %s", name)
		}
		args := newPyDict()
		for {
			p.skipPySpace()
			if p.lit(")") {
				break
			}
			ks := p.i
			for p.i < len(s) && isIdentByte(s, p.i) {
				p.i++
			}
			key := s[ks:p.i]
			p.skipPySpace()
			if key == "" || key[0] >= '0' && key[0] <= '9' || !p.lit("=") || p.lit("=") {
				return fail("call to %s: arguments must be keyword=value", name)
			}
			val, ok := p.pyValue(0)
			if !ok {
				return fail("call to %s: the value of %s is not a Python literal", name, key)
			}
			if hasNonFinite(val) {
				return fail("call to %s: the value of %s is not finite", name, key)
			}
			args.set(key, val)
			p.skipPySpace()
			if p.lit(",") {
				continue
			}
			if !p.lit(")") {
				return fail("call to %s: expected , or )", name)
			}
			break
		}
		var b strings.Builder
		pyDumps(&b, args)
		calls = append(calls, pyCall{name: name, args: b.String()})
		p.skipPySpace()
		if p.lit(",") {
			continue
		}
		if p.lit("]") {
			return calls, p.i, -1, ""
		}
		return fail("expected , or ] after the call to %s", name)
	}
}
