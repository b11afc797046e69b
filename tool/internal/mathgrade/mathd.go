package mathgrade

import (
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// textRe is `^\\text\{(?P<text>.+?)\}$` of both mathruler files; Python's
// `$` also matches before a final newline, hence `\n?\z`.
var textRe = regexp.MustCompile(`^\\text\{(.+?)\}\n?\z`)

// normalizeAnswer is math_normalize.normalize_answer: the Hendrycks MATH
// normalisation. Where the Python raises inside _strip_string (and its
// caller returns the answer as it was), the steps here report !ok.
func normalizeAnswer(answer string) string {
	answer = pyStrip(answer)
	if m := textRe.FindStringSubmatch(answer); m != nil {
		answer = pyStrip(m[1])
	}
	if s, ok := stripString(answer); ok {
		return s
	}
	return answer
}

func stripString(s string) (string, bool) {
	s = strings.ReplaceAll(s, "\n", "")
	s = strings.ReplaceAll(s, `\!`, "")
	s = strings.ReplaceAll(s, `\\`, `\`)
	s = strings.ReplaceAll(s, "tfrac", "frac")
	s = strings.ReplaceAll(s, "dfrac", "frac")
	s = strings.ReplaceAll(s, `\left`, "")
	s = strings.ReplaceAll(s, `\right`, "")
	s = strings.ReplaceAll(s, `^{\circ}`, "")
	s = strings.ReplaceAll(s, `^\circ`, "")
	s = strings.ReplaceAll(s, `\$`, "")
	// _remove_right_units: asserts that "\text{ " occurs once.
	if strings.Contains(s, `\text{ `) {
		parts := strings.Split(s, `\text{ `)
		if len(parts) != 2 {
			return "", false
		}
		s = parts[0]
	}
	s = strings.ReplaceAll(s, `\%`, "")
	s = strings.ReplaceAll(s, `%`, "")
	s = strings.ReplaceAll(s, " .", " 0.")
	s = strings.ReplaceAll(s, "{.", "{0.")
	if s == "" {
		return s, true
	}
	if s[0] == '.' {
		s = "0" + s
	}
	if parts := strings.Split(s, "="); len(parts) == 2 && utf8.RuneCountInString(parts[0]) <= 2 {
		s = parts[1]
	}
	s, ok := fixSqrt(s)
	if !ok {
		return "", false
	}
	s = strings.ReplaceAll(s, " ", "")
	s, ok = fixFracs(s)
	if !ok {
		return "", false
	}
	if s == "0.5" {
		s = `\frac{1}{2}`
	}
	return fixASlashB(s), true
}

// firstRune splits s into its first code point and the rest (Python
// indexes strings by code point).
func firstRune(s string) (string, string) {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n], s[n:]
}

// fixFracs is _fix_fracs: \frac12 → \frac{1}{2}, \frac1{2} → \frac{1}{2}.
// An empty piece after "\frac" is an IndexError in the Python (!ok).
func fixFracs(s string) (string, bool) {
	subs := strings.Split(s, `\frac`)
	var b strings.Builder
	b.WriteString(subs[0])
	for _, sub := range subs[1:] {
		b.WriteString(`\frac`)
		if sub == "" {
			return "", false
		}
		if sub[0] == '{' {
			b.WriteString(sub)
			continue
		}
		if utf8.RuneCountInString(sub) < 2 {
			return s, true // the Python returns the string unchanged here
		}
		a, rest := firstRune(sub)
		c, post := firstRune(rest)
		if c != "{" {
			b.WriteString("{" + a + "}{" + c + "}" + post)
		} else {
			b.WriteString("{" + a + "}" + c + post)
		}
	}
	return b.String(), true
}

var canonInt = regexp.MustCompile(`^(0|-?[1-9][0-9]*)$`)

// fixASlashB is _fix_a_slash_b: "a/b" of two ints as Python spells them
// (int() then the assert that str(a)/str(b) gives the string back).
func fixASlashB(s string) string {
	parts := strings.Split(s, "/")
	if len(parts) != 2 || !canonInt.MatchString(parts[0]) || !canonInt.MatchString(parts[1]) {
		return s
	}
	return `\frac{` + parts[0] + "}{" + parts[1] + "}"
}

// fixSqrt is _fix_sqrt: \sqrt3 → \sqrt{3}; an empty piece is an IndexError.
func fixSqrt(s string) (string, bool) {
	if !strings.Contains(s, `\sqrt`) {
		return s, true
	}
	parts := strings.Split(s, `\sqrt`)
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			return "", false
		}
		if p[0] != '{' {
			a, rest := firstRune(p)
			b.WriteString(`\sqrt{` + a + "}" + rest)
		} else {
			b.WriteString(`\sqrt` + p)
		}
	}
	return b.String(), true
}

// pyStrip is str.strip(): Python's whitespace includes the ASCII
// separators 0x1c–0x1f, which Go's unicode.IsSpace does not.
func pyStrip(s string) string {
	return strings.TrimFunc(s, isPySpace)
}

func isPySpace(r rune) bool {
	switch r {
	case 0x1c, 0x1d, 0x1e, 0x1f:
		return true
	}
	return unicode.IsSpace(r)
}
