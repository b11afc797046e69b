package parser

import (
	"strings"
)

const (
	k3ThinkOpen     = "<|open|>think<|sep|>"
	k3ThinkClose    = "<|close|>think<|sep|>"
	k3ResponseOpen  = "<|open|>response<|sep|>"
	k3ResponseClose = "<|close|>response<|sep|>"
	k3ToolsOpen     = "<|open|>tools<|sep|>"
	k3ToolsClose    = "<|close|>tools<|sep|>"
	k3MessageClose  = "<|close|>message<|sep|>"
	k3EndOfMsg      = "<|end_of_msg|>"
	k3CallOpen      = "<|open|>call"
	k3CallClose     = "<|close|>call<|sep|>"
	k3ArgOpen       = "<|open|>argument"
	k3ArgClose      = "<|close|>argument<|sep|>"
	k3JSONOpen      = "<|open|>json"
	k3JSONClose     = "<|close|>json<|sep|>"
	k3Sep           = "<|sep|>"
)

// kimiK3 parses Kimi-K3's XTML channels:
//
//	<|open|>response<|sep|>text<|close|>response<|sep|>
//	<|open|>tools<|sep|>
//	<|open|>call tool="NAME" index="1"<|sep|>
//	<|open|>argument key="K" type="string"<|sep|>raw text<|close|>argument<|sep|>
//	<|open|>argument key="N" type="number"<|sep|>42<|close|>argument<|sep|>
//	<|close|>call<|sep|>
//	<|close|>tools<|sep|>
//	<|close|>message<|sep|>
//
// as SGLang's kimi_k3 detector reads them (srt/function_call/kimik3_detector.py):
// a string argument is its raw text, another type's text is JSON (kept as
// a string when it is not), attribute values undo the template's &amp; and
// &quot;, and the arguments are written as json.dumps writes them, in the
// order written. A call whose arguments are one <|open|>json …<|sep|>
// block (the template writes one for arguments given as a JSON string)
// takes that JSON. The response channel's text (and text outside the
// channels) is content, without the channel markers; a trailing
// <|close|>message<|sep|> and <|end_of_msg|> are not content. The tools
// channel may be left unclosed, as SGLang accepts; anything in it other
// than calls and white space is an error, as is a call without a tool
// name or without its closing marker. Reasoning is the think channel
// (Options.ThinkAware), whose opening marker the generation prompt
// writes.
type kimiK3 struct{}

func (kimiK3) parse(text string, r *Result, v *validator) {
	text = trimEnd(trimEnd(text, k3EndOfMsg), k3MessageClose)
	var content strings.Builder
	content.Grow(len(text))
	for {
		i := strings.Index(text, k3ToolsOpen)
		if i < 0 {
			content.WriteString(text)
			break
		}
		content.WriteString(text[:i])
		text = k3Tools(text[i+len(k3ToolsOpen):], r, v)
	}
	c := content.String()
	for _, m := range []string{k3ResponseOpen, k3ResponseClose, k3MessageClose} {
		c = strings.ReplaceAll(c, m, "")
	}
	r.Content = c
}

// k3Tools reads the calls of one tools channel and returns the text after
// it.
func k3Tools(s string, r *Result, v *validator) string {
	for {
		s = strings.TrimLeft(s, jsonSpace)
		switch {
		case s == "":
			return "" // unclosed channel: its calls stand, as in SGLang
		case strings.HasPrefix(s, k3ToolsClose):
			return s[len(k3ToolsClose):]
		case strings.HasPrefix(s, k3CallOpen):
			var ok bool
			if s, ok = k3Call(s[len(k3CallOpen):], r, v); !ok {
				return ""
			}
		default:
			r.addError("%s: expected %s… or %s in the tools channel, got %s", r.ordinal(), k3CallOpen, k3ToolsClose, snippet(s))
			if j := strings.Index(s, k3ToolsClose); j >= 0 {
				return s[j+len(k3ToolsClose):]
			}
			return ""
		}
	}
}

// k3Call reads one call after "<|open|>call"; false when it took the rest
// of the text.
func k3Call(s string, r *Result, v *validator) (string, bool) {
	which := r.ordinal()
	attrs, body, ok := k3Head(s)
	if ok && attrs != "" && !strings.ContainsRune(" \t\n", rune(attrs[0])) {
		r.addError("%s: expected white space after %s, got %s", which, k3CallOpen, snippet(attrs))
		if j := strings.Index(body, k3CallClose); j >= 0 {
			return body[j+len(k3CallClose):], true
		}
		return "", false
	}
	if !ok {
		r.addError("%s: unclosed call header: missing %s", which, k3Sep)
		return "", false
	}
	end := strings.Index(body, k3CallClose)
	if end < 0 {
		r.addError("%s: unclosed call: missing %s", which, k3CallClose)
		return "", false
	}
	rest := body[end+len(k3CallClose):]
	body = body[:end]
	name := k3Attrs(attrs)["tool"]
	if name == "" {
		r.addError("%s: missing tool name (tool=\"…\" in %s)", which, snippet(k3CallOpen+attrs+k3Sep))
		return rest, true
	}
	args, msg := k3Arguments(body)
	if msg != "" {
		r.addError("%s to %q: %s", which, name, msg)
		return rest, true
	}
	v.check(r, which, name, args)
	return rest, true
}

// k3Head splits "ATTRS<|sep|>BODY" after an opening tag's name; the
// attributes must be empty or start with white space.
func k3Head(s string) (attrs, body string, ok bool) {
	j := strings.Index(s, k3Sep)
	if j < 0 {
		return "", "", false
	}
	return s[:j], s[j+len(k3Sep):], true
}

// k3Attrs reads key="value" pairs as SGLang's (\w+)="([^"]*)" finds them,
// undoing the template's escaping.
func k3Attrs(s string) map[string]string {
	out := map[string]string{}
	for {
		eq := strings.Index(s, `="`)
		if eq < 0 {
			return out
		}
		k := eq
		for k > 0 && isWordByte(s[k-1]) {
			k--
		}
		key := s[k:eq]
		s = s[eq+2:]
		q := strings.IndexByte(s, '"')
		if q < 0 {
			return out
		}
		if key != "" {
			if _, dup := out[key]; !dup {
				out[key] = strings.ReplaceAll(strings.ReplaceAll(s[:q], "&quot;", `"`), "&amp;", "&")
			}
		}
		s = s[q+1:]
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// k3Arguments builds a call's arguments JSON from its body, or says what
// is wrong with it.
func k3Arguments(body string) (string, string) {
	if t := strings.TrimSpace(body); strings.HasPrefix(t, k3JSONOpen) {
		_, in, ok := k3Head(t[len(k3JSONOpen):])
		end := strings.Index(in, k3JSONClose)
		if !ok || end < 0 {
			return "", "unclosed json block: missing " + k3JSONClose
		}
		if rest := strings.TrimSpace(in[end+len(k3JSONClose):]); rest != "" {
			return "", "unexpected text after the json block: " + snippet(rest)
		}
		return in[:end], ""
	}
	d := newPyDict()
	for {
		body = strings.TrimLeft(body, jsonSpace)
		if body == "" {
			break
		}
		if !strings.HasPrefix(body, k3ArgOpen) {
			return "", "expected " + k3ArgOpen + "… or " + k3CallClose + ", got " + snippet(body)
		}
		attrs, val, ok := k3Head(body[len(k3ArgOpen):])
		end := strings.Index(val, k3ArgClose)
		if !ok || end < 0 {
			return "", "unclosed argument: missing " + k3ArgClose
		}
		body = val[end+len(k3ArgClose):]
		val = val[:end]
		a := k3Attrs(attrs)
		typ, ok := a["type"]
		if !ok {
			typ = "string"
		}
		if typ == "string" {
			d.set(a["key"], val)
		} else if x, ok := pyJSONLoads(val); ok {
			d.set(a["key"], x)
		} else {
			d.set(a["key"], val)
		}
	}
	var b strings.Builder
	pyDumps(&b, d)
	return b.String(), ""
}
