package mathgrade

import (
	"strings"
)

// latexToText is the part of pylatexenc's LatexNodes2Text().latex_to_text
// (2.10, the version mathruler's _parse_latex runs) that answers use:
// groups lose their braces; \frac{a}{b} is "a/b" (no parentheses, as
// pylatexenc writes it: "\frac{1+2}{3}" is "1+2/3"); \sqrt[n]{a} is "√(a)"
// (the index dropped); the symbols and spacing macros below, and a few
// macros it drops (\boxed); a letter
// macro eats the whitespace after it; an argument is a group, a macro or
// one character. Any other macro or special character (pylatexenc knows
// hundreds, and drops unknown ones) and a macro short of its arguments
// give !ok: the caller then has no normalised form, where the Python
// could still have one.
func latexToText(s string) (string, bool) {
	p := latexParser{s: s}
	var b strings.Builder
	if !p.nodes(&b, false, 0) {
		return "", false
	}
	return b.String(), true
}

// maxLatexDepth bounds the nesting of groups and arguments: the parser
// recurses per level, and adversarial answers nest deeply.
const maxLatexDepth = 64

var latexSymbols = map[string]string{
	"pi": "π", "cdot": "·", "times": "×", "infty": "∞", "cup": "∪", "circ": "∘",
	"pm": "±", "div": "÷", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠",
	"approx": "≈", "angle": "∠", "ldots": "…", "dots": "…", "cdots": "⋯",
	"left": "", "right": "", "degree": "", "quad": "  ", "qquad": "    ",
	// Macros pylatexenc has no spec for: dropped, their braces left as a
	// plain group ("\boxed{5}" is "5").
	"boxed": "", "displaystyle": "", "fbox": "", "hbox": "", "textbf": "", "textit": "",
	"mathit": "", "emph": "",
}

// latexTextMacros take one argument and write its text.
var latexTextMacros = map[string]bool{
	"text": true, "mathrm": true, "textrm": true, "operatorname": true, "mbox": true,
	"overline": true, "textnormal": true,
}

// latexEscapes are the one-character macros: "\{" is "{", "\," a space.
var latexEscapes = map[byte]string{
	'{': "{", '}': "}", '%': "%", '$': "$", '_': "_", '#': "#", '&': "&",
	',': " ", ';': " ", ':': " ", '>': " ", ' ': " ", '!': "", '\\': "\n",
}

type latexParser struct {
	s string
	i int
}

// nodes writes nodes until the end or, inside a group, its "}". A stray
// "}" at the top level writes nothing, as in pylatexenc.
func (p *latexParser) nodes(b *strings.Builder, inGroup bool, depth int) bool {
	for p.i < len(p.s) {
		if p.s[p.i] == '}' {
			p.i++
			if inGroup {
				return true
			}
			continue
		}
		if !p.node(b, depth) {
			return false
		}
	}
	return true // an unclosed group ends at the end of the text
}

// node writes one node: a character, a group or a macro with its arguments.
func (p *latexParser) node(b *strings.Builder, depth int) bool {
	if depth > maxLatexDepth {
		return false
	}
	c := p.s[p.i]
	switch c {
	case '{':
		p.i++
		return p.nodes(b, true, depth+1)
	case '~', '%', '&', '#', '$':
		return false
	case '\\':
		return p.macro(b, depth)
	}
	b.WriteByte(c)
	p.i++
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (p *latexParser) macro(b *strings.Builder, depth int) bool {
	p.i++ // the backslash
	if p.i >= len(p.s) {
		return false
	}
	if !isLetter(p.s[p.i]) {
		out, ok := latexEscapes[p.s[p.i]]
		if !ok {
			return false
		}
		p.i++
		b.WriteString(out)
		return true
	}
	j := p.i
	for j < len(p.s) && isLetter(p.s[j]) {
		j++
	}
	name := p.s[p.i:j]
	p.i = j
	p.skipSpace()
	switch {
	case name == "frac":
		num, ok := p.arg(depth)
		if !ok {
			return false
		}
		den, ok := p.arg(depth)
		if !ok {
			return false
		}
		b.WriteString(num + "/" + den)
	case name == "sqrt":
		if p.i < len(p.s) && p.s[p.i] == '[' {
			k := strings.IndexByte(p.s[p.i:], ']')
			if k < 0 {
				return false
			}
			p.i += k + 1
			p.skipSpace()
		}
		a, ok := p.arg(depth)
		if !ok {
			return false
		}
		b.WriteString("√(" + a + ")")
	case latexTextMacros[name]:
		a, ok := p.arg(depth)
		if !ok {
			return false
		}
		b.WriteString(a)
	default:
		out, ok := latexSymbols[name]
		if !ok {
			return false
		}
		b.WriteString(out)
	}
	return true
}

func (p *latexParser) skipSpace() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

// arg reads a macro argument: a group, a macro or one character.
func (p *latexParser) arg(depth int) (string, bool) {
	p.skipSpace()
	if p.i >= len(p.s) || p.s[p.i] == '}' {
		return "", false
	}
	var b strings.Builder
	if p.s[p.i] != '{' && p.s[p.i] != '\\' {
		_, rest := firstRune(p.s[p.i:])
		b.WriteString(p.s[p.i : len(p.s)-len(rest)])
		p.i = len(p.s) - len(rest)
		return b.String(), true
	}
	if !p.node(&b, depth+1) {
		return "", false
	}
	return b.String(), true
}
