package jinja

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

type tokKind uint8

const (
	tEOF tokKind = iota
	tData
	tVarBegin
	tVarEnd
	tBlockBegin
	tBlockEnd
	tName
	tString
	tInt
	tFloat
	tOp
)

type token struct {
	kind tokKind
	val  string // data text, name, unescaped string, operator
	ival int64
	fval float64
	pos  int // byte offset in the normalized source
}

// SyntaxError is returned by Parse for malformed templates. Line and Col are
// 1-based (Col counts characters) in the template with its newlines
// normalized to "\n".
type SyntaxError struct {
	Line, Col int
	Msg       string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("jinja: syntax error at %d:%d: %s", e.Line, e.Col, e.Msg)
}

// isPySpace is Python's str.isspace for one rune (what \s matches in re).
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

func rstripSpace(s string) string {
	return strings.TrimRightFunc(s, isPySpace)
}

func skipSpace(s string, i int) int {
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isPySpace(r) {
			break
		}
		i += n
	}
	return i
}

// normalizeSource does what jinja2's lexer does before tokenizing: every
// \r\n and \r becomes \n, and one trailing newline is dropped
// (keep_trailing_newline=False).
func normalizeSource(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

type lexer struct {
	src          string
	toks         []token
	lineStarting bool
}

func (lx *lexer) errAt(pos int, format string, args ...any) error {
	line, col := lineCol(lx.src, pos)
	return &SyntaxError{Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}
}

func lineCol(src string, pos int) (int, int) {
	if pos > len(src) {
		pos = len(src)
	}
	line := 1 + strings.Count(src[:pos], "\n")
	lineStart := strings.LastIndexByte(src[:pos], '\n') + 1
	return line, 1 + utf8.RuneCountInString(src[lineStart:pos])
}

// lex splits a normalized template into tokens, applying jinja2's
// whitespace control exactly as transformers configures it: trim_blocks
// (drop the first newline after a block or comment tag), lstrip_blocks
// (drop spaces before a block or comment tag that starts its line) and the
// explicit - and + markers.
func lex(src string) ([]token, error) {
	lx := &lexer{src: src, lineStarting: true, toks: make([]token, 0, len(src)/8+4)}
	pos := 0
	for pos < len(src) {
		start := findTagStart(src, pos)
		if start < 0 {
			lx.toks = append(lx.toks, token{kind: tData, val: src[pos:], pos: pos})
			break
		}
		kind := src[start+1]
		inner := start + 2
		sign := byte(0)
		if inner < len(src) && (src[inner] == '-' || src[inner] == '+') {
			sign = src[inner]
			inner++
		}
		isRaw, rawEnd := false, 0
		if kind == '%' {
			isRaw, rawEnd = matchRawBegin(src, inner)
		}
		text := src[pos:start]
		text = lx.stripBefore(text, sign, kind != '{')
		if text != "" {
			lx.toks = append(lx.toks, token{kind: tData, val: text, pos: pos})
		}
		var err error
		switch {
		case isRaw:
			pos, err = lx.lexRaw(rawEnd)
		case kind == '#':
			pos, err = lx.lexComment(start, inner)
		case kind == '{':
			lx.toks = append(lx.toks, token{kind: tVarBegin, pos: start})
			pos, err = lx.lexTag(inner, false)
		default:
			lx.toks = append(lx.toks, token{kind: tBlockBegin, pos: start})
			pos, err = lx.lexTag(inner, true)
		}
		if err != nil {
			return nil, err
		}
	}
	lx.toks = append(lx.toks, token{kind: tEOF, pos: len(src)})
	return lx.toks, nil
}

// stripBefore applies the whitespace rules to the text before a tag.
func (lx *lexer) stripBefore(text string, sign byte, lstrip bool) string {
	switch {
	case sign == '-':
		return rstripSpace(text)
	case sign == '+' || !lstrip:
		return text
	}
	lpos := strings.LastIndexByte(text, '\n') + 1
	if lpos > 0 || lx.lineStarting {
		tail := text[lpos:]
		if tail != "" && strings.TrimLeftFunc(tail, isPySpace) == "" {
			return text[:lpos]
		}
	}
	return text
}

func findTagStart(src string, pos int) int {
	for {
		i := strings.IndexByte(src[pos:], '{')
		if i < 0 {
			return -1
		}
		i += pos
		if i+1 < len(src) {
			switch src[i+1] {
			case '{', '%', '#':
				return i
			}
		}
		pos = i + 1
	}
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at i.
func matchRawBegin(src string, i int) (bool, int) {
	j := skipSpace(src, i)
	if !strings.HasPrefix(src[j:], "raw") {
		return false, 0
	}
	j = skipSpace(src, j+3)
	switch {
	case strings.HasPrefix(src[j:], "-%}"):
		return true, skipSpace(src, j+3)
	case strings.HasPrefix(src[j:], "%}"):
		return true, j + 2
	}
	return false, 0
}

func (lx *lexer) lexRaw(pos int) (int, error) {
	lx.lineStarting = pos > 0 && lx.src[pos-1] == '\n'
	src := lx.src
	if pos == len(src) {
		return pos, nil // as for comments: nothing after {% raw %} is no error
	}
	for p := pos; ; {
		i := strings.Index(src[p:], "{%")
		if i < 0 {
			return 0, lx.errAt(pos, "missing end of raw directive")
		}
		i += p
		j := i + 2
		sign := byte(0)
		if j < len(src) && (src[j] == '-' || src[j] == '+') {
			sign = src[j]
			j++
		}
		j = skipSpace(src, j)
		if strings.HasPrefix(src[j:], "endraw") {
			k := skipSpace(src, j+6)
			end := -1
			switch {
			case strings.HasPrefix(src[k:], "+%}"):
				end = k + 3
			case strings.HasPrefix(src[k:], "-%}"):
				end = skipSpace(src, k+3)
			case strings.HasPrefix(src[k:], "%}"):
				end = k + 2
				if end < len(src) && src[end] == '\n' {
					end++
				}
			}
			if end >= 0 {
				text := lx.stripBefore(src[pos:i], sign, true)
				if text != "" {
					lx.toks = append(lx.toks, token{kind: tData, val: text, pos: pos})
				}
				lx.lineStarting = src[end-1] == '\n'
				return end, nil
			}
		}
		p = i + 2
	}
}

func (lx *lexer) lexComment(start, inner int) (int, error) {
	src := lx.src
	i := strings.Index(src[inner:], "#}")
	if i < 0 {
		if inner == len(src) {
			// jinja2's lexer stops quietly when a comment opens at the
			// very end of the template (its "missing end" rule needs one
			// more character to match).
			return inner, nil
		}
		return 0, lx.errAt(start, "missing end of comment tag")
	}
	i += inner
	end := i + 2
	switch {
	case i > inner && src[i-1] == '-':
		end = skipSpace(src, end)
	case i > inner && src[i-1] == '+':
	default:
		if end < len(src) && src[end] == '\n' {
			end++
		}
	}
	lx.lineStarting = src[end-1] == '\n'
	return end, nil
}

// lexTag tokenizes the inside of {{ }} or {% %} from pos and consumes the
// closing delimiter. End delimiters only count outside brackets, as in
// jinja2, so {{ {'a': {'b': 1}} }} works.
func (lx *lexer) lexTag(pos int, block bool) (int, error) {
	src := lx.src
	var stack []byte
	for {
		if len(stack) == 0 {
			if block {
				switch {
				case strings.HasPrefix(src[pos:], "+%}"):
					return lx.endTag(pos, pos+3, tBlockEnd), nil
				case strings.HasPrefix(src[pos:], "-%}"):
					return lx.endTag(pos, skipSpace(src, pos+3), tBlockEnd), nil
				case strings.HasPrefix(src[pos:], "%}"):
					end := pos + 2
					if end < len(src) && src[end] == '\n' {
						end++
					}
					return lx.endTag(pos, end, tBlockEnd), nil
				}
			} else {
				switch {
				case strings.HasPrefix(src[pos:], "-}}"):
					return lx.endTag(pos, skipSpace(src, pos+3), tVarEnd), nil
				case strings.HasPrefix(src[pos:], "}}"):
					return lx.endTag(pos, pos+2, tVarEnd), nil
				}
			}
		}
		if pos >= len(src) {
			lx.toks = append(lx.toks, token{kind: tEOF, pos: pos})
			return pos, nil
		}
		c := src[pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			pos++
		case c >= '0' && c <= '9':
			np, err := lx.lexNumber(pos)
			if err != nil {
				return 0, err
			}
			pos = np
		case c == '_' || (c|0x20) >= 'a' && (c|0x20) <= 'z' || c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(src[pos:])
			if c >= utf8.RuneSelf && !unicode.IsLetter(r) {
				if isPySpace(r) {
					pos += n
					continue
				}
				return 0, lx.errAt(pos, "unexpected char %q", r)
			}
			end := pos + n
			for end < len(src) {
				r, n := utf8.DecodeRuneInString(src[end:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				end += n
			}
			lx.toks = append(lx.toks, token{kind: tName, val: src[pos:end], pos: pos})
			pos = end
		case c == '\'' || c == '"':
			np, err := lx.lexString(pos)
			if err != nil {
				return 0, err
			}
			pos = np
		default:
			op := ""
			if pos+1 < len(src) {
				switch two := src[pos : pos+2]; two {
				case "//", "**", "==", "!=", ">=", "<=":
					op = two
				}
			}
			if op == "" {
				if strings.IndexByte("+-/*%~[](){}=<>.:|,;", c) < 0 {
					r, _ := utf8.DecodeRuneInString(src[pos:])
					return 0, lx.errAt(pos, "unexpected char %q", r)
				}
				op = src[pos : pos+1]
			}
			switch op {
			case "(":
				stack = append(stack, ')')
			case "[":
				stack = append(stack, ']')
			case "{":
				stack = append(stack, '}')
			case ")", "]", "}":
				if len(stack) == 0 {
					return 0, lx.errAt(pos, "unexpected '%s'", op)
				}
				if want := stack[len(stack)-1]; want != op[0] {
					return 0, lx.errAt(pos, "unexpected '%s', expected '%c'", op, want)
				}
				stack = stack[:len(stack)-1]
			}
			lx.toks = append(lx.toks, token{kind: tOp, val: op, pos: pos})
			pos += len(op)
		}
	}
}

func (lx *lexer) endTag(pos, end int, kind tokKind) int {
	lx.toks = append(lx.toks, token{kind: kind, pos: pos})
	lx.lineStarting = end > 0 && lx.src[end-1] == '\n'
	return end
}

func scanDigits(src string, i int) int {
	// (\d+_)*\d+
	for {
		j := i
		for j < len(src) && src[j] >= '0' && src[j] <= '9' {
			j++
		}
		if j == i {
			return i
		}
		if j+1 < len(src) && src[j] == '_' && src[j+1] >= '0' && src[j+1] <= '9' {
			i = j + 1
			continue
		}
		return j
	}
}

func (lx *lexer) lexNumber(pos int) (int, error) {
	src := lx.src
	if src[pos] == '0' && pos+1 < len(src) {
		base := 0
		switch src[pos+1] | 0x20 {
		case 'b':
			base = 2
		case 'o':
			base = 8
		case 'x':
			base = 16
		}
		if base != 0 {
			end := pos + 2
			for end < len(src) && (isHex(src[end]) || src[end] == '_') {
				end++
			}
			v, err := strconv.ParseInt(strings.ReplaceAll(src[pos+2:end], "_", ""), base, 64)
			if err != nil {
				return 0, lx.errAt(pos, "invalid integer literal %q", src[pos:end])
			}
			lx.toks = append(lx.toks, token{kind: tInt, ival: v, pos: pos})
			return end, nil
		}
	}
	end := scanDigits(src, pos)
	isFloat := false
	if end+1 < len(src) && src[end] == '.' && src[end+1] >= '0' && src[end+1] <= '9' {
		end = scanDigits(src, end+1)
		isFloat = true
	}
	if end < len(src) && (src[end]|0x20) == 'e' {
		j := end + 1
		if j < len(src) && (src[j] == '+' || src[j] == '-') {
			j++
		}
		if j < len(src) && src[j] >= '0' && src[j] <= '9' {
			end = scanDigits(src, j)
			isFloat = true
		}
	}
	text := strings.ReplaceAll(src[pos:end], "_", "")
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) {
			return 0, lx.errAt(pos, "invalid float literal %q", text)
		}
		lx.toks = append(lx.toks, token{kind: tFloat, fval: f, pos: pos})
		return end, nil
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, lx.errAt(pos, "integer literal %s is too large", text)
	}
	lx.toks = append(lx.toks, token{kind: tInt, ival: v, pos: pos})
	return end, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || (c|0x20) >= 'a' && (c|0x20) <= 'f'
}

func (lx *lexer) lexString(pos int) (int, error) {
	src := lx.src
	q := src[pos]
	i := pos + 1
	hasEsc := false
	for i < len(src) && src[i] != q {
		if src[i] == '\\' {
			hasEsc = true
			i++
		}
		i++
	}
	if i >= len(src) {
		return 0, lx.errAt(pos, "unterminated string")
	}
	body := src[pos+1 : i]
	if hasEsc {
		var err error
		body, err = unescapePy(body)
		if err != nil {
			return 0, lx.errAt(pos, "%v", err)
		}
	}
	lx.toks = append(lx.toks, token{kind: tString, val: body, pos: pos})
	return i + 1, nil
}

// unescapePy decodes Python "unicode-escape" sequences; unknown escapes are
// kept with their backslash, as Python does.
func unescapePy(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			if c == '\\' {
				return "", fmt.Errorf("\\ at end of string")
			}
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+1+n > len(s) {
				return "", fmt.Errorf("truncated \\%cXX escape", e)
			}
			v, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", fmt.Errorf("truncated \\%cXX escape", e)
			}
			if v > unicode.MaxRune || (v >= 0xd800 && v < 0xe000) {
				return "", fmt.Errorf("illegal Unicode character in \\%c escape", e)
			}
			b.WriteRune(rune(v))
			i += n
		case '0', '1', '2', '3', '4', '5', '6', '7':
			v := 0
			j := i
			for ; j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7'; j++ {
				v = v*8 + int(s[j]-'0')
			}
			b.WriteRune(rune(v))
			i = j - 1
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return b.String(), nil
}
