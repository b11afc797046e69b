package parser

import (
	"encoding/json"
	"strings"
)

const (
	llamaPythonTag = "<|python_tag|>"
	llamaEOT       = "<|eot_id|>"
	llamaEOM       = "<|eom_id|>"
)

// llama3JSON parses Llama-3.x JSON tool calls: {"name": ..., "parameters":
// {...}} (or "arguments"), optionally after <|python_tag|>, several
// separated by ";" as vLLM and SGLang accept.
//
// Text before <|python_tag|> is content. Without the tag the turn is a
// call only if it starts (after white space) with an object whose first
// key is "name", "parameters" or "arguments": Llama writes a call as the
// whole message, and other text, even JSON, is prose.
// After the calls, text that does not start another call is content.
// A JSON value that does not parse is an error and ends the calls: JSON has
// no reliable point to resynchronise at. A JSON array of call objects (what
// Llama 3.2 writes under a JSON-schema constraint, and SGLang accepts) is
// read as its calls when the whole rest of the turn is such an array;
// otherwise text starting with "[" is content.
type llama3JSON struct{}

// parseLlamaArray reads s as a JSON array of {"name": ...} objects and, if
// it is one, adds its calls and reports true.
func parseLlamaArray(s string, r *Result, v *validator) bool {
	var elems []json.RawMessage
	if json.Unmarshal([]byte(strings.TrimRight(s, jsonSpace)), &elems) != nil || len(elems) == 0 {
		return false
	}
	for _, e := range elems {
		if len(e) == 0 || e[0] != '{' || !strings.Contains(string(e), `"name"`) {
			return false
		}
	}
	for _, e := range elems {
		which := r.ordinal()
		name, args, msg := nameAndArgs(string(e), "parameters", "arguments")
		if msg != "" {
			r.addError("%s: %s: %s", which, msg, snippet(string(e)))
			continue
		}
		v.check(r, which, name, args)
	}
	return true
}

func (llama3JSON) parse(text string, r *Result, v *validator) {
	text = trimEnd(text, llamaEOT, llamaEOM)
	var action string
	if i := strings.Index(text, llamaPythonTag); i >= 0 {
		r.Content = text[:i]
		action = text[i+len(llamaPythonTag):]
	} else if t := strings.TrimLeft(text, jsonSpace); strings.HasPrefix(t, "{") && looksLikeCall(t) {
		action = t
	} else if strings.HasPrefix(t, "[") && parseLlamaArray(t, r, v) {
		return
	} else {
		r.Content = text
		return
	}
	if t := strings.TrimLeft(action, jsonSpace); strings.HasPrefix(t, "[") && parseLlamaArray(t, r, v) {
		return
	}
	rest := strings.TrimLeft(action, jsonSpace)
	for rest != "" && rest[0] == '{' {
		which := r.ordinal()
		raw, n, err := decodeOne(rest)
		if err != nil {
			r.addError("%s: invalid JSON (%v): %s", which, err, snippet(rest))
			return
		}
		name, args, msg := nameAndArgs(string(raw), "parameters", "arguments")
		if msg != "" {
			r.addError("%s: %s: %s", which, msg, snippet(string(raw)))
		} else {
			v.check(r, which, name, args)
		}
		rest = strings.TrimLeft(rest[n:], jsonSpace)
		if strings.HasPrefix(rest, ";") {
			rest = strings.TrimLeft(rest[1:], jsonSpace)
		}
	}
	r.Content += rest
}

const jsonSpace = " \t\r\n"

// looksLikeCall reports whether the object starting s begins with one of
// the keys of a call, which tells a (possibly malformed) call from prose
// that happens to start with "{".
func looksLikeCall(s string) bool {
	t := strings.TrimLeft(s[1:], jsonSpace)
	for _, k := range []string{`"name"`, `"parameters"`, `"arguments"`} {
		if strings.HasPrefix(t, k) {
			return true
		}
	}
	return false
}

// decodeOne decodes the JSON value at the start of s and returns its exact
// text and the number of bytes it took.
func decodeOne(s string) (json.RawMessage, int, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, 0, err
	}
	return raw, int(dec.InputOffset()), nil
}

// trimEnd removes one trailing end-of-turn marker (and white space around
// it), for text decoded with special tokens kept.
func trimEnd(text string, markers ...string) string {
	t := strings.TrimRight(text, jsonSpace)
	for _, m := range markers {
		if strings.HasSuffix(t, m) {
			return t[:len(t)-len(m)]
		}
	}
	return text
}
