package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// jscan is a small JSON scanner for the two big parts of tokenizer.json,
// model.vocab and model.merges (hundreds of thousands of entries):
// encoding/json spends over half a second on them; this takes a tenth of
// that. Everything else goes through encoding/json. Errors name the byte
// offset.
type jscan struct {
	s   string
	pos int
}

func (j *jscan) errf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrInvalid, j.pos, fmt.Sprintf(format, args...))
}

func (j *jscan) ws() {
	for j.pos < len(j.s) {
		switch j.s[j.pos] {
		case ' ', '\t', '\n', '\r':
			j.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (j *jscan) peek() byte {
	j.ws()
	if j.pos >= len(j.s) {
		return 0
	}
	return j.s[j.pos]
}

func (j *jscan) expect(c byte) error {
	if j.peek() != c {
		if j.pos >= len(j.s) {
			return j.errf("unexpected end of JSON, want %q", c)
		}
		return j.errf("want %q, got %q", c, j.s[j.pos])
	}
	j.pos++
	return nil
}

// str reads a string. Without escapes it is a substring of the input.
func (j *jscan) str() (string, error) {
	if err := j.expect('"'); err != nil {
		return "", err
	}
	start := j.pos
	escaped := false
	for j.pos < len(j.s) {
		c := j.s[j.pos]
		switch {
		case c == '"':
			j.pos++
			if !escaped {
				return j.s[start : j.pos-1], nil
			}
			var out string
			if err := json.Unmarshal([]byte(j.s[start-1:j.pos]), &out); err != nil {
				return "", j.errf("bad string: %v", err)
			}
			return out, nil
		case c == '\\':
			escaped = true
			j.pos += 2
		case c < 0x20:
			return "", j.errf("control character in string")
		default:
			j.pos++
		}
	}
	return "", j.errf("unterminated string")
}

func (j *jscan) integer() (int64, error) {
	j.ws()
	start := j.pos
	if j.pos < len(j.s) && j.s[j.pos] == '-' {
		j.pos++
	}
	for j.pos < len(j.s) && j.s[j.pos] >= '0' && j.s[j.pos] <= '9' {
		j.pos++
	}
	n, err := strconv.ParseInt(j.s[start:j.pos], 10, 64)
	if err != nil {
		return 0, j.errf("want an integer, got %.20q", j.s[start:min(len(j.s), start+20)])
	}
	return n, nil
}

// skip passes over one value of any kind and returns its text.
func (j *jscan) skip() (string, error) {
	j.ws()
	start := j.pos
	depth := 0
	for j.pos < len(j.s) {
		switch c := j.s[j.pos]; c {
		case '"':
			if _, err := j.str(); err != nil {
				return "", err
			}
		case '{', '[':
			depth++
			j.pos++
		case '}', ']':
			depth--
			if depth < 0 {
				return "", j.errf("unexpected %q", c)
			}
			j.pos++
		case ',', ':':
			if depth == 0 {
				return "", j.errf("unexpected %q", c)
			}
			j.pos++
		default:
			j.pos++
		}
		if depth == 0 {
			j.ws()
			if j.pos >= len(j.s) || j.s[j.pos] == ',' || j.s[j.pos] == '}' || j.s[j.pos] == ']' {
				if j.pos == start {
					return "", j.errf("missing value")
				}
				return j.s[start:j.pos], nil
			}
			if j.s[start] == '"' || j.s[start] == '{' || j.s[start] == '[' {
				return "", j.errf("unexpected %q after value", j.s[j.pos])
			}
		}
	}
	return "", j.errf("unexpected end of JSON")
}

// object calls f for each key of an object; f must consume the value.
func (j *jscan) object(f func(key string) error) error {
	if err := j.expect('{'); err != nil {
		return err
	}
	if j.peek() == '}' {
		j.pos++
		return nil
	}
	for {
		k, err := j.str()
		if err != nil {
			return err
		}
		if err := j.expect(':'); err != nil {
			return err
		}
		if err := f(k); err != nil {
			return err
		}
		switch j.peek() {
		case ',':
			j.pos++
		case '}':
			j.pos++
			return nil
		default:
			return j.errf("want ',' or '}' in object")
		}
	}
}

// array calls f for each element of an array; f must consume it.
func (j *jscan) array(f func(i int) error) error {
	if err := j.expect('['); err != nil {
		return err
	}
	if j.peek() == ']' {
		j.pos++
		return nil
	}
	for i := 0; ; i++ {
		if err := f(i); err != nil {
			return err
		}
		switch j.peek() {
		case ',':
			j.pos++
		case ']':
			j.pos++
			return nil
		default:
			return j.errf("want ',' or ']' in array")
		}
	}
}

// rawJSON is the parsed top level of tokenizer.json: the vocab and merges
// already decoded, everything else as raw JSON for encoding/json.
type rawJSON struct {
	sections map[string]json.RawMessage
	model    map[string]json.RawMessage
	vocab    []vocabEntry
	hasVocab bool
	merges   [][2]string
	mergesOK bool
}

type vocabEntry struct {
	tok string
	id  int64
}

func scanTokenizerJSON(data []byte) (*rawJSON, error) {
	j := &jscan{s: string(data)}
	r := &rawJSON{sections: map[string]json.RawMessage{}, model: map[string]json.RawMessage{}}
	err := j.object(func(key string) error {
		if key != "model" || j.peek() != '{' {
			v, err := j.skip()
			r.sections[key] = json.RawMessage(v)
			return err
		}
		r.sections[key] = json.RawMessage("{}")
		return j.object(func(mkey string) error {
			switch {
			case mkey == "vocab" && j.peek() == '{':
				r.hasVocab = true
				return j.object(func(tok string) error {
					id, err := j.integer()
					r.vocab = append(r.vocab, vocabEntry{tok, id})
					return err
				})
			case mkey == "merges" && j.peek() == '[':
				r.mergesOK = true
				return j.array(func(i int) error {
					if j.peek() == '[' {
						var pair [2]string
						n := 0
						err := j.array(func(k int) error {
							s, err := j.str()
							if k < 2 {
								pair[k] = s
							}
							n++
							return err
						})
						if err == nil && n != 2 {
							err = j.errf("merges[%d] has %d elements, want 2", i, n)
						}
						r.merges = append(r.merges, pair)
						return err
					}
					s, err := j.str()
					if err != nil {
						return err
					}
					a, b, ok := cutSpace(s)
					if !ok {
						return j.errf("merges[%d] %q is not a pair", i, s)
					}
					r.merges = append(r.merges, [2]string{a, b})
					return nil
				})
			}
			v, err := j.skip()
			r.model[mkey] = json.RawMessage(v)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if j.peek() != 0 {
		return nil, j.errf("trailing data after the top-level object")
	}
	return r, nil
}

func cutSpace(s string) (a, b string, ok bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}
