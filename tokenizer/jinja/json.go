package jinja

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// FromJSON decodes JSON into template values the way Python's json.loads
// does: objects become *Dict with their key order kept, arrays []any,
// strings string, true/false bool, null nil, and numbers int64 when written
// without a fraction or exponent (float64 otherwise, as Python gives int vs
// float). Integers beyond int64 (such as a model_max_length of 1e30 written
// out in full) keep their exact digits: they print and serialize as Python
// would, and arithmetic on them is an error.
func FromJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeJSONValue(dec)
	if err != nil {
		return nil, fmt.Errorf("jinja: decode JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("jinja: decode JSON: unexpected data after the top-level value at offset %d", dec.InputOffset())
	}
	return v, nil
}

func decodeJSONValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if err == io.EOF {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %v, not a string", kt)
				}
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				d.Set(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return d, nil
		case '[':
			l := []any{}
			for dec.More() {
				v, err := decodeJSONValue(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return l, nil
		}
		return nil, fmt.Errorf("unexpected delimiter %q", rune(t))
	case json.Number:
		s := string(t)
		if !strings.ContainsAny(s, ".eE") {
			i, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				// Python keeps it as an exact int; so do we, for printing and
				// tojson (arithmetic on it is an error).
				return bigInt(s), nil
			}
			return i, nil
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("number %s: %w", s, err)
		}
		return f, nil
	default:
		return t, nil // string, bool, nil
	}
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

// appendJSON appends json.dumps(v) with Python's formatting.
func appendJSON(b []byte, v any, o *jsonOpts, depth int) ([]byte, error) {
	if depth > maxDepth {
		return b, errors.New("tojson: value nested too deeply")
	}
	switch x := v.(type) {
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
		return b, errors.New("Object of type Undefined is not JSON serializable")
	case bigInt:
		return append(b, x...), nil
	}
	if i, ok := toInt(v); ok {
		return strconv.AppendInt(b, i, 10), nil
	}
	if isMapping(v) {
		if _, ok := v.(*namespace); ok {
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
		s = strings.ToValidUTF8(s, "\uFFFD")
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
