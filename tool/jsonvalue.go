package tool

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeInstance turns JSON text that json.Valid accepted into the value
// the schema validator reads: what jsonschema.UnmarshalJSON returns
// (map[string]any, []any, json.Number with the number's text, string, bool,
// nil), without a json.Decoder, its read buffer and reflection per value —
// most of the cost of validating a tool call's arguments. Strings with
// escapes or bytes that are not valid UTF-8 are handed to encoding/json, so
// their decoding is exactly its. ok is false if the text turns out not to
// be valid JSON after all (the caller then takes the encoding/json path).
func decodeInstance(data []byte) (v any, ok bool) {
	d := instDecoder{data: data}
	d.space()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	return v, d.pos == len(data)
}

type instDecoder struct {
	data []byte
	pos  int
}

// maxInstanceDepth matches encoding/json's nesting limit; deeper text goes
// to encoding/json, which reports it.
const maxInstanceDepth = 10000

func (d *instDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// separator consumes what follows a member or an element: a comma (more
// follow: done false) or the closing byte (done true); anything else is
// not JSON (ok false).
func (d *instDecoder) separator(closing byte) (done, ok bool) {
	d.space()
	if d.pos >= len(d.data) {
		return false, false
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		return false, true
	case closing:
		d.pos++
		return true, true
	}
	return false, false
}

func (d *instDecoder) value(depth int) (any, bool) {
	if d.pos >= len(d.data) || depth > maxInstanceDepth {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		d.pos++
		m := make(map[string]any)
		d.space()
		if d.pos < len(d.data) && d.data[d.pos] == '}' {
			d.pos++
			return m, true
		}
		for {
			d.space()
			k, ok := d.str()
			if !ok {
				return nil, false
			}
			d.space()
			if d.pos >= len(d.data) || d.data[d.pos] != ':' {
				return nil, false
			}
			d.pos++
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v // a repeated key: the last one wins, as in encoding/json
			done, ok := d.separator('}')
			if !ok {
				return nil, false
			}
			if done {
				return m, true
			}
		}
	case c == '[':
		d.pos++
		l := []any{} // encoding/json decodes [] as an empty, non-nil slice
		d.space()
		if d.pos < len(d.data) && d.data[d.pos] == ']' {
			d.pos++
			return l, true
		}
		for {
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			done, ok := d.separator(']')
			if !ok {
				return nil, false
			}
			if done {
				return l, true
			}
		}
	case c == '"':
		return d.str()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := d.pos
		for d.pos < len(d.data) {
			switch b := d.data[d.pos]; {
			case b >= '0' && b <= '9', b == '-', b == '+', b == '.', b == 'e', b == 'E':
				d.pos++
				continue
			}
			break
		}
		// The text was validated as a whole; keep the number as written.
		return json.Number(d.data[start:d.pos]), true
	}
	return nil, false
}

func (d *instDecoder) literal(s string) bool {
	if len(d.data)-d.pos < len(s) || string(d.data[d.pos:d.pos+len(s)]) != s {
		return false
	}
	d.pos += len(s)
	return true
}

// str decodes the string at d.pos.
func (d *instDecoder) str() (string, bool) {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return "", false
	}
	start := d.pos
	plain := true
	i := d.pos + 1
	for ; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			i++ // skip the escaped byte (an escaped quote must not end the string)
			continue
		}
		if c < 0x20 {
			return "", false
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
	}
	if i >= len(d.data) {
		return "", false
	}
	d.pos = i + 1
	body := d.data[start+1 : i]
	if plain || (bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body)) {
		return string(body), true
	}
	var s string
	if err := json.Unmarshal(d.data[start:d.pos], &s); err != nil {
		return "", false
	}
	return s, true
}
