package parser

import (
	"strings"
	"unicode"
)

const (
	gemmaCall      = "<|tool_call>"
	gemmaCallEnd   = "<tool_call|>" // also the stop token verl samples calls with
	gemmaQuote     = `<|"|>`
	gemmaTurnEnd   = "<turn|>"
	gemmaThinkOpen = "<|channel>thought"
	gemmaThinkEnd  = "<channel|>"
)

// gemma4 parses Google Gemma 4's calls, a compact notation of its own:
//
//	<|tool_call>call:NAME{key:<|"|>text<|"|>,n:42,flag:true,o:{k:1},l:[1,<|"|>a<|"|>]}<tool_call|>
//
// Keys are bare (or quoted with <|"|>), strings are delimited by <|"|>,
// other values are bare: true, false, null (also None and nil, in any
// case), numbers read as Python reads them (with a "." as float(),
// otherwise int()), anything else a string. The arguments are written as
// json.dumps writes the dict vLLM's gemma4 parser builds
// (vllm/tool_parsers/gemma4_tool_parser.py, _parse_gemma4_args), in the
// order written. Calls follow each other with nothing between them; text
// outside them is content, and a trailing <turn|> is not.
//
// The envelope is strict: <|tool_call> must be followed by call:, a name
// of letters, digits, "_", "-" and ".", the braced arguments and
// <tool_call|>. vLLM's offline helper also takes bare "call:f{…}" in
// prose, "<|tool_call>:call:" and <turn|> as the closer; here those are
// errors or text, so that a reward never credits a call the model did
// not write. Reasoning is written in <|channel>thought…<channel|>, which
// Options.ThinkAware splits off.
type gemma4 struct{}

func (gemma4) parse(text string, r *Result, v *validator) {
	text = trimEnd(text, gemmaTurnEnd)
	var content strings.Builder
	content.Grow(len(text))
	for {
		i := strings.Index(text, gemmaCall)
		if i < 0 {
			content.WriteString(text)
			break
		}
		content.WriteString(text[:i])
		text = gemmaOneCall(text[i+len(gemmaCall):], r, v)
	}
	r.Content = content.String()
}

// gemmaOneCall reads one call after <|tool_call> and returns the text after
// it. A malformed call is reported and skipped up to the next
// <tool_call|> (or to the end).
func gemmaOneCall(s string, r *Result, v *validator) string {
	which := r.ordinal()
	skip := func(format string, args ...any) string {
		r.addError(which+": "+format, args...)
		if j := strings.Index(s, gemmaCallEnd); j >= 0 {
			return s[j+len(gemmaCallEnd):]
		}
		return ""
	}
	if !strings.HasPrefix(s, "call:") {
		return skip("expected call:NAME{…} after %s, got %s", gemmaCall, snippet(s))
	}
	rest := s[len("call:"):]
	// The name is read up to the first byte that cannot be in one, so
	// that text with no '{' is not searched to its end once per call.
	brace := strings.IndexFunc(rest, func(c rune) bool { return !gemmaNameRune(c) })
	switch {
	case brace == 0 && strings.HasPrefix(rest, "{"):
		return skip("missing function name")
	case brace < 0 || rest[brace] != '{':
		if brace < 0 {
			brace = len(rest)
		}
		return skip("expected { after the function name %s, got %s (names are letters, digits, _, - and .)", snippet(rest[:brace]), snippet(rest[brace:]))
	}
	name := rest[:brace]
	p := gemmaArgs{s: rest, i: brace + 1}
	args, ok := p.object(1)
	if !ok {
		r.addError("%s to %q: %s", which, name, p.err)
		return ""
	}
	after := rest[p.i:]
	if !strings.HasPrefix(after, gemmaCallEnd) {
		return skip("call to %q: expected %s after the arguments, got %s", name, gemmaCallEnd, snippet(after))
	}
	var b strings.Builder
	pyDumps(&b, args)
	v.check(r, which, name, b.String())
	return after[len(gemmaCallEnd):]
}

// gemmaNameRune is vLLM's [\w\-\.] for function names.
func gemmaNameRune(c rune) bool {
	return c == '_' || c == '-' || c == '.' || unicode.IsLetter(c) || unicode.IsDigit(c) || unicode.Is(unicode.Mn, c)
}

// gemmaArgs reads the argument notation in one pass: each container is
// read once, up to its closing bracket, so the work is linear in the text
// (vLLM finds each container's end with a scan and then parses the inside,
// which rescans nested containers once per level). On well-formed
// arguments both read the same values; on malformed ones each follows
// vLLM's rules where they apply: a key without ':' ends the object, a
// value that is empty ends it, an array's bare item ends at ',' or ']'.
type gemmaArgs struct {
	s   string
	i   int
	err string
}

func (p *gemmaArgs) fail(msg string) bool {
	if p.err == "" {
		p.err = msg
	}
	return false
}

func (p *gemmaArgs) skipSet(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

// object reads the inside of {…} after its '{' up to and including '}'.
func (p *gemmaArgs) object(depth int) (*pyDict, bool) {
	if depth > maxDepth {
		return nil, p.fail("arguments nested too deeply")
	}
	d := newPyDict()
	for {
		p.skipSet(" ,\n\t")
		if p.i >= len(p.s) {
			return nil, p.fail("unclosed arguments: missing }" + gemmaCallEnd)
		}
		if p.s[p.i] == '}' {
			p.i++
			return d, true
		}
		// A key runs to ':'; without one the object has no more entries.
		start := p.i
		for p.i < len(p.s) && p.s[p.i] != ':' && p.s[p.i] != '}' {
			p.i++
		}
		if p.i >= len(p.s) || p.s[p.i] == '}' {
			return d, p.close(depth)
		}
		key := pyStrip(p.s[start:p.i])
		if len(key) >= 2*len(gemmaQuote) && strings.HasPrefix(key, gemmaQuote) && strings.HasSuffix(key, gemmaQuote) {
			key = key[len(gemmaQuote) : len(key)-len(gemmaQuote)]
		}
		p.i++ // ':'
		p.skipSet(" \n\t")
		if p.i >= len(p.s) {
			return nil, p.fail("unclosed arguments: missing }" + gemmaCallEnd)
		}
		if p.s[p.i] == '}' {
			d.set(key, "") // "key:" at the end: vLLM's empty string
			continue
		}
		val, ok, more := p.value(depth, ",}]")
		if !ok {
			return nil, false
		}
		if !more {
			return d, p.close(depth)
		}
		d.set(key, val)
	}
}

// close skips to the end of the current object (vLLM stops reading it but
// its scan had already found where it ends), consuming nested containers.
func (p *gemmaArgs) close(depth int) bool {
	for p.i < len(p.s) {
		switch {
		case strings.HasPrefix(p.s[p.i:], gemmaQuote):
			if !p.skipString() {
				return p.fail("unclosed arguments: unterminated " + gemmaQuote + " string")
			}
			continue
		case p.s[p.i] == '{':
			p.i++
			if _, ok := p.object(depth + 1); !ok {
				return false
			}
			continue
		case p.s[p.i] == '}':
			p.i++
			return true
		}
		p.i++
	}
	return p.fail("unclosed arguments: missing }" + gemmaCallEnd)
}

func (p *gemmaArgs) skipString() bool {
	j := strings.Index(p.s[p.i+len(gemmaQuote):], gemmaQuote)
	if j < 0 {
		p.i = len(p.s)
		return false
	}
	p.i += len(gemmaQuote) + j + len(gemmaQuote)
	return true
}

// value reads one value; stops are the bytes that end a bare value. more
// is false when the value was empty, which ends the container in vLLM.
func (p *gemmaArgs) value(depth int, stops string) (v pyValue, ok, more bool) {
	switch {
	case strings.HasPrefix(p.s[p.i:], gemmaQuote):
		start := p.i + len(gemmaQuote)
		if !p.skipString() {
			return nil, p.fail("unclosed arguments: unterminated " + gemmaQuote + " string"), false
		}
		return p.s[start : p.i-len(gemmaQuote)], true, true
	case p.s[p.i] == '{':
		p.i++
		d, ok := p.object(depth + 1)
		return d, ok, true
	case p.s[p.i] == '[':
		p.i++
		l, ok := p.array(depth + 1)
		return l, ok, true
	}
	start := p.i
	for p.i < len(p.s) && strings.IndexByte(stops, p.s[p.i]) < 0 {
		p.i++
	}
	if p.i == start {
		return nil, true, false
	}
	return gemmaBare(p.s[start:p.i]), true, true
}

// array reads the inside of […] after its '[' up to and including ']'.
func (p *gemmaArgs) array(depth int) ([]pyValue, bool) {
	if depth > maxDepth {
		return nil, p.fail("arguments nested too deeply")
	}
	items := []pyValue{}
	for {
		p.skipSet(" ,\n\t")
		if p.i >= len(p.s) {
			return nil, p.fail("unclosed arguments: missing ]")
		}
		if p.s[p.i] == ']' {
			p.i++
			return items, true
		}
		val, ok, _ := p.value(depth, ",]")
		if !ok {
			return nil, false
		}
		items = append(items, val)
	}
}

// gemmaBare is vLLM's _parse_gemma4_value.
func gemmaBare(s string) pyValue {
	s = pyStrip(s)
	switch {
	case s == "":
		return ""
	case s == "true":
		return true
	case s == "false":
		return false
	}
	switch strings.ToLower(s) {
	case "null", "none", "nil":
		return nil
	}
	if strings.Contains(s, ".") {
		if f, ok := pyFloat(s); ok {
			return f
		}
		return s
	}
	if n, ok := pyInt(s); ok {
		return n
	}
	return s
}
