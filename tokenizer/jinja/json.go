package jinja

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// FromJSON decodes JSON into template values the way Python's json.loads
// does: objects become *Dict with their key order kept (a repeated key keeps
// its first position and its last value), arrays []any, strings string,
// true/false bool, null nil, and numbers int64 when written without a
// fraction or exponent (float64 otherwise, as Python gives int vs float).
// Integers beyond int64 (such as a model_max_length of 1e30 written out in
// full) keep their exact digits: they print and serialize as Python would,
// and arithmetic on them is an error. It accepts exactly what json.Valid
// accepts; invalid UTF-8 in strings becomes U+FFFD as in encoding/json.
func FromJSON(data []byte) (any, error) {
	p := jsonParserPool.Get().(*jsonParser)
	// One copy of the input backs every string without escapes.
	p.data, p.src, p.pos = data, string(data), 0
	v, err := p.parse()
	p.data, p.src = nil, ""
	clear(p.vals)
	p.keys, p.vals = p.keys[:0], p.vals[:0]
	jsonParserPool.Put(p)
	return v, err
}

var jsonParserPool = sync.Pool{New: func() any { return &jsonParser{} }}

func (p *jsonParser) parse() (any, error) {
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errorf("unexpected data after the top-level value")
	}
	return v, nil
}

// jsonParser is a small recursive-descent JSON decoder: chat templates get
// every message and tool schema through FromJSON, and encoding/json's token
// API costs tens of microseconds per schema.
type jsonParser struct {
	data []byte
	src  string // data as a string
	pos  int
	// Stacks of the keys and values of the objects and arrays being read;
	// each container is copied out at its exact size when it closes, so
	// it costs one allocation instead of one per doubling.
	keys []string
	vals []any
}

// maxJSONDepth matches encoding/json's nesting limit.
const maxJSONDepth = 10000

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("jinja: decode JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		if depth >= maxJSONDepth {
			return nil, p.errorf("nested too deeply")
		}
		return p.object(depth + 1)
	case c == '[':
		if depth >= maxJSONDepth {
			return nil, p.errorf("nested too deeply")
		}
		return p.array(depth + 1)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case p.literal("true"):
		return true, nil
	case p.literal("false"):
		return false, nil
	case p.literal("null"):
		return nil, nil
	}
	return nil, p.errorf("invalid character %q looking for a value", p.data[p.pos])
}

func (p *jsonParser) literal(word string) bool {
	if len(p.data)-p.pos >= len(word) && string(p.data[p.pos:p.pos+len(word)]) == word {
		p.pos += len(word)
		return true
	}
	return false
}

func (p *jsonParser) object(depth int) (any, error) {
	p.pos++ // {
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return &Dict{}, nil
	}
	baseK, baseV := len(p.keys), len(p.vals)
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("object key must be a string")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		p.keys = append(p.keys, k)
		p.vals = append(p.vals, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case '}':
			p.pos++
			return p.closeObject(baseK, baseV), nil
		default:
			return nil, p.errorf("expected ',' or '}' in object")
		}
	}
}

// closeObject builds the Dict of the entries pushed since baseK/baseV
// (arrays share the value stack, so the two stacks have separate bases).
func (p *jsonParser) closeObject(baseK, baseV int) *Dict {
	n := len(p.keys) - baseK
	d := &Dict{keys: make([]string, 0, n), vals: make([]any, 0, n)}
	for i := 0; i < n; i++ {
		d.Set(p.keys[baseK+i], p.vals[baseV+i]) // Set: a repeated key keeps its first slot
	}
	clear(p.vals[baseV:])
	p.keys, p.vals = p.keys[:baseK], p.vals[:baseV]
	return d
}

func (p *jsonParser) array(depth int) (any, error) {
	p.pos++ // [
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return []any{}, nil
	}
	base := len(p.vals)
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		p.vals = append(p.vals, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
			p.skipSpace()
		case ']':
			p.pos++
			l := append([]any(nil), p.vals[base:]...)
			clear(p.vals[base:])
			p.vals = p.vals[:base]
			return l, nil
		default:
			return nil, p.errorf("expected ',' or ']' in array")
		}
	}
}

func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			s := p.src[start:p.pos]
			p.pos++
			if !utf8.ValidString(s) {
				return replaceInvalidUTF8(s), nil
			}
			return s, nil
		case c == '\\':
			return p.strSlow(start)
		case c < 0x20:
			return "", p.errorf("control character in string")
		}
		p.pos++
	}
	return "", p.errorf("unterminated string")
}

// strSlow decodes a string with escapes, starting over at start.
func (p *jsonParser) strSlow(start int) (string, error) {
	b := append([]byte(nil), p.data[start:p.pos]...)
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			if !utf8.Valid(b) {
				return replaceInvalidUTF8(string(b)), nil
			}
			return string(b), nil
		case c < 0x20:
			return "", p.errorf("control character in string")
		case c != '\\':
			b = append(b, c)
			p.pos++
			continue
		}
		if p.pos+1 >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		e := p.data[p.pos+1]
		p.pos += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A pair decodes to one rune; a lone surrogate becomes
				// U+FFFD (Go strings cannot hold it; Python would).
				save := p.pos
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					p.pos += 2
					if r2, ok := p.hex4(); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							b = utf8.AppendRune(b, d)
							continue
						}
					}
					p.pos = save
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
		default:
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	var r rune
	for _, c := range p.data[p.pos : p.pos+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r*16 + rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r*16 + rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r*16 + rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	p.pos += 4
	return r, true
}

func (p *jsonParser) number() (any, error) {
	start := p.pos
	d := p.data
	if d[p.pos] == '-' {
		p.pos++
	}
	digits := func() int {
		n := 0
		for p.pos < len(d) && d[p.pos] >= '0' && d[p.pos] <= '9' {
			p.pos++
			n++
		}
		return n
	}
	switch {
	case p.pos < len(d) && d[p.pos] == '0':
		p.pos++
	case digits() == 0:
		return nil, p.errorf("invalid number")
	}
	isFloat := false
	if p.pos < len(d) && d[p.pos] == '.' {
		p.pos++
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits after '.'")
		}
		isFloat = true
	}
	if p.pos < len(d) && (d[p.pos] == 'e' || d[p.pos] == 'E') {
		p.pos++
		if p.pos < len(d) && (d[p.pos] == '+' || d[p.pos] == '-') {
			p.pos++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number: no digits in exponent")
		}
		isFloat = true
	}
	text := p.src[start:p.pos]
	if !isFloat {
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			// Python keeps it as an exact int; so do we, for printing and
			// tojson.
			return bigInt(text), nil
		}
		return i, nil
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return nil, p.errorf("number %s: %v", text, err)
	}
	return f, nil // out of range gives ±Inf, as Python's float() does
}

// replaceInvalidUTF8 turns every byte that is not part of valid UTF-8 into
// U+FFFD, as encoding/json does.
func replaceInvalidUTF8(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// jsonOpts are the arguments of transformers' tojson filter, which calls
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys).
type jsonOpts struct {
	indent    string
	hasIndent bool
	itemSep   string
	keySep    string
	sortKeys  bool
}

func newJSONOpts() jsonOpts { return jsonOpts{itemSep: ", ", keySep: ": "} }

// plain reports whether o are the default arguments.
func (o *jsonOpts) plain() bool {
	return !o.hasIndent && !o.sortKeys && o.itemSep == ", " && o.keySep == ": "
}

// appendJSON appends json.dumps(v) with Python's formatting.
func appendJSON(b []byte, v any, o *jsonOpts, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("tojson: value nested too deeply")
	}
	switch x := v.(type) {
	case *Dict:
		// A frozen dict's text with the default arguments was made by
		// this function when it was frozen; it is used only where writing
		// the dict again would not hit the depth limit.
		if fd := x.frozen; fd != nil && fd.jsonOK && o.plain() && depth+fd.height <= maxDepth {
			return append(b, fd.json...), nil
		}
	case nil:
		return append(b, "null"...), nil
	case bool:
		if x {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case string:
		return appendJSONString(b, x), nil
	case float64, float32:
		f, _ := toFloat(x)
		switch {
		case math.IsNaN(f):
			return append(b, "NaN"...), nil
		case math.IsInf(f, 1):
			return append(b, "Infinity"...), nil
		case math.IsInf(f, -1):
			return append(b, "-Infinity"...), nil
		}
		return appendFloatRepr(b, f), nil
	case *undefined:
		//lint:ignore ST1005 the text is Python json.dumps's own message, which templates may surface
		return b, errors.New("Object of type Undefined is not JSON serializable")
	case bigInt:
		return append(b, x...), nil
	}
	if i, ok := toInt(v); ok {
		return strconv.AppendInt(b, i, 10), nil
	}
	if isMapping(v) {
		if _, ok := v.(*namespace); ok {
			//lint:ignore ST1005 the text is Python json.dumps's own message, which templates may surface
			return b, errors.New("Object of type Namespace is not JSON serializable")
		}
		keys := mapKeys(v)
		if len(keys) == 0 {
			return append(b, "{}"...), nil
		}
		if o.sortKeys {
			keys = sortedCopy(keys)
		}
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, o.itemSep...)
			}
			b = jsonNewline(b, o, depth+1)
			b = appendJSONString(b, k)
			b = append(b, o.keySep...)
			e, _ := mapGet(v, k)
			var err error
			if b, err = appendJSON(b, e, o, depth+1); err != nil {
				return b, err
			}
		}
		b = jsonNewline(b, o, depth)
		return append(b, '}'), nil
	}
	if l, ok := toList(v); ok {
		if len(l) == 0 {
			return append(b, "[]"...), nil
		}
		b = append(b, '[')
		for i, e := range l {
			if i > 0 {
				b = append(b, o.itemSep...)
			}
			b = jsonNewline(b, o, depth+1)
			var err error
			if b, err = appendJSON(b, e, o, depth+1); err != nil {
				return b, err
			}
		}
		b = jsonNewline(b, o, depth)
		return append(b, ']'), nil
	}
	//lint:ignore ST1005 the text is Python json.dumps's own message, which templates may surface
	return b, fmt.Errorf("Object of type %s is not JSON serializable", typeName(v))
}

func jsonNewline(b []byte, o *jsonOpts, depth int) []byte {
	if !o.hasIndent {
		return b
	}
	b = append(b, '\n')
	for i := 0; i < depth; i++ {
		b = append(b, o.indent...)
	}
	return b
}

func sortedCopy(keys []string) []string {
	out := append([]string(nil), keys...)
	sortStrings(out)
	return out
}

// appendJSONString writes s as json.dumps(s, ensure_ascii=False) does: only
// the quote, backslash and control characters below 0x20 are escaped.
func appendJSONString(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		// Python strings cannot hold invalid UTF-8; write U+FFFD rather than
		// emitting invalid JSON.
		s = replaceInvalidUTF8(s)
	}
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			b = append(b, `\u00`...)
			b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
