package parser

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file reproduces the few Python semantics that vLLM's qwen3_coder
// parser relies on to turn XML parameter text into JSON: int(), float(),
// json.loads, the JSON-representable part of ast.literal_eval, and
// json.dumps(..., ensure_ascii=False) with its ", " and ": " separators.
// Matching them byte for byte means a trajectory parsed here carries the
// same argument text a vLLM server would have produced.

// pyValue is a Python value that json.dumps can write: nil (None), bool,
// *big.Int (int), float64 (float), string, []pyValue (list or tuple) or
// *pyDict.
type pyValue any

// pyDict keeps insertion order like a Python dict. Keys are compared by
// Python equality (1, 1.0 and True are one key; the string "1" is
// another) and setting an existing key keeps its first spelling and
// position and replaces its value.
type pyDict struct {
	keys []string // as json.dumps writes them
	vals []pyValue
	pos  map[string]int // identity → index
	// nonFinite records a float key that is NaN or infinite, which
	// json.dumps(allow_nan=False) rejects like a value.
	nonFinite bool
}

func newPyDict() *pyDict { return &pyDict{pos: map[string]int{}} }

// set adds a string key (all JSON object keys are strings).
func (d *pyDict) set(k string, v pyValue) { d.setID("s"+k, k, v) }

func (d *pyDict) setID(id, key string, v pyValue) {
	if i, ok := d.pos[id]; ok {
		d.vals[i] = v
		return
	}
	d.pos[id] = len(d.keys)
	d.keys = append(d.keys, key)
	d.vals = append(d.vals, v)
}

// pyDumps writes v as json.dumps(v, ensure_ascii=False) does.
func pyDumps(b *strings.Builder, v pyValue) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		if x {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case *big.Int:
		b.WriteString(x.String())
	case float64:
		b.WriteString(pyFloatRepr(x))
	case string:
		pyDumpString(b, x)
	case []pyValue:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteString(", ")
			}
			pyDumps(b, e)
		}
		b.WriteByte(']')
	case *pyDict:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteString(", ")
			}
			pyDumpString(b, k)
			b.WriteString(": ")
			pyDumps(b, x.vals[i])
		}
		b.WriteByte('}')
	}
}

func pyDumpString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[c>>4])
				b.WriteByte(hex[c&15])
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// pyFloatRepr formats f as Python's repr(float) (and json.dumps) does:
// the shortest digits that round-trip, scientific notation when the
// decimal exponent is below -4 or at least 16, and ".0" on integral values.
func pyFloatRepr(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. -1.2345e+06
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	e := strings.IndexByte(s, 'e')
	digits := strings.Replace(s[:e], ".", "", 1)
	exp, _ := strconv.Atoi(s[e+1:])
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		ed := strconv.Itoa(exp)
		if len(ed) < 2 {
			ed = "0" + ed
		}
		return sign + m + "e" + es + ed
	}
	if exp < 0 {
		return sign + "0." + strings.Repeat("0", -exp-1) + digits
	}
	if len(digits) <= exp+1 {
		return sign + digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
	}
	return sign + digits[:exp+1] + "." + digits[exp+1:]
}

// pyStrip trims what Python's str.strip() trims (Unicode white space).
func pyStrip(s string) string { return strings.TrimSpace(s) }

// pyInt parses s as Python's int(s) does for ASCII digits: surrounding
// white space, an optional sign, decimal digits with single underscores
// between them (leading zeros allowed).
func pyInt(s string) (*big.Int, bool) {
	s = pyStrip(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	digits, ok := pyDigits(s)
	if !ok {
		return nil, false
	}
	n, ok := new(big.Int).SetString(digits, 10)
	if !ok {
		return nil, false
	}
	if neg {
		n.Neg(n)
	}
	return n, true
}

// pyDigits checks a run of ASCII digits with single underscores between
// digits and returns it without the underscores.
func pyDigits(s string) (string, bool) {
	if s == "" || s[0] == '_' || s[len(s)-1] == '_' {
		return "", false
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			b.WriteByte(c)
		case c == '_' && s[i-1] != '_':
		default:
			return "", false
		}
	}
	return b.String(), true
}

// pyFloat parses s as Python's float(s) does: white space, sign,
// inf/infinity/nan in any case, or a decimal number with optional
// fraction and exponent and underscores between digits.
func pyFloat(s string) (float64, bool) {
	s = pyStrip(s)
	body := s
	if body != "" && (body[0] == '+' || body[0] == '-') {
		body = body[1:]
	}
	switch strings.ToLower(body) {
	case "inf", "infinity", "nan":
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil
	}
	mant, exp := body, ""
	if i := strings.IndexAny(body, "eE"); i >= 0 {
		mant, exp = body[:i], body[i+1:]
		if exp != "" && (exp[0] == '+' || exp[0] == '-') {
			exp = exp[1:]
		}
		if _, ok := pyDigits(exp); !ok {
			return 0, false
		}
	}
	intPart, frac, hasDot := strings.Cut(mant, ".")
	if intPart == "" && frac == "" {
		return 0, false
	}
	if intPart != "" {
		if _, ok := pyDigits(intPart); !ok {
			return 0, false
		}
	}
	if hasDot && frac != "" {
		if _, ok := pyDigits(frac); !ok {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil {
		// Out of range parses to ±Inf in Python, as here; anything else
		// was rejected above.
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, true
		}
		return 0, false
	}
	return f, true
}

// floatToInt is Python's int(f) for a finite float: exact, any size.
func floatToInt(f float64) *big.Int {
	n, _ := new(big.Float).SetFloat64(math.Trunc(f)).Int(nil)
	return n
}

// maxDepth bounds nesting in the value parsers; Python's recursion limit
// makes deeper input fail there too.
const maxDepth = 512

// pyJSONLoads parses s as Python's json.loads does (NaN and ±Infinity
// accepted, ints of any size, control characters in strings rejected,
// a repeated key keeping its first position and last value).
func pyJSONLoads(s string) (pyValue, bool) {
	p := &valueParser{s: s}
	p.skipJSONSpace()
	v, ok := p.jsonValue(0)
	if !ok {
		return nil, false
	}
	p.skipJSONSpace()
	return v, p.i == len(p.s)
}

type valueParser struct {
	s string
	i int
}

func (p *valueParser) skipJSONSpace() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *valueParser) lit(w string) bool {
	if strings.HasPrefix(p.s[p.i:], w) {
		p.i += len(w)
		return true
	}
	return false
}

// jsonItems reads the comma-separated items of an object or array whose
// opening bracket has been read, up to and including closing; item reads
// one item, which starts after white space.
func (p *valueParser) jsonItems(closing string, item func() bool) bool {
	p.skipJSONSpace()
	if p.lit(closing) {
		return true
	}
	for {
		p.skipJSONSpace()
		if !item() {
			return false
		}
		p.skipJSONSpace()
		if p.lit(closing) {
			return true
		}
		if !p.lit(",") {
			return false
		}
	}
}

func (p *valueParser) jsonValue(depth int) (pyValue, bool) {
	if p.i >= len(p.s) || depth > maxDepth {
		return nil, false
	}
	switch c := p.s[p.i]; {
	case c == '{':
		p.i++
		d := newPyDict()
		ok := p.jsonItems("}", func() bool {
			if p.i >= len(p.s) || p.s[p.i] != '"' {
				return false
			}
			k, ok := p.jsonString()
			if !ok {
				return false
			}
			p.skipJSONSpace()
			if !p.lit(":") {
				return false
			}
			p.skipJSONSpace()
			v, ok := p.jsonValue(depth + 1)
			d.set(k, v)
			return ok
		})
		if !ok {
			return nil, false
		}
		return d, true
	case c == '[':
		p.i++
		l := []pyValue{}
		ok := p.jsonItems("]", func() bool {
			v, ok := p.jsonValue(depth + 1)
			l = append(l, v)
			return ok
		})
		if !ok {
			return nil, false
		}
		return l, true
	case c == '"':
		return p.jsonString()
	case p.lit("null"):
		return nil, true
	case p.lit("true"):
		return true, true
	case p.lit("false"):
		return false, true
	case p.lit("NaN"):
		return math.NaN(), true
	case p.lit("Infinity"):
		return math.Inf(1), true
	case p.lit("-Infinity"):
		return math.Inf(-1), true
	default:
		return p.jsonNumber()
	}
}

func (p *valueParser) jsonNumber() (pyValue, bool) {
	start := p.i
	p.lit("-")
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, false
	}
	isFloat := false
	if p.lit(".") {
		isFloat = true
		if digits() == 0 {
			return nil, false
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		isFloat = true
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	num := p.s[start:p.i]
	if !isFloat {
		n, ok := new(big.Int).SetString(num, 10)
		return n, ok
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !isRangeErr(err) {
		return nil, false
	}
	return f, true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func (p *valueParser) jsonString() (string, bool) {
	p.i++ // opening quote
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return b.String(), true
		case c < 0x20:
			return "", false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '"', '\\', '/':
				b.WriteByte(e)
			case 'b', 'f', 'n', 'r', 't':
				b.WriteByte(controlEscapes[e])
			case 'u':
				r, ok := p.hexRune(4)
				if !ok {
					return "", false
				}
				if r >= 0xd800 && r < 0xdc00 && strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if r2, ok := p.hexRune(4); ok && r2 >= 0xdc00 && r2 < 0xe000 {
						r = 0x10000 + (r-0xd800)<<10 + (r2 - 0xdc00)
					} else {
						p.i = save
					}
				}
				b.WriteRune(r) // a lone surrogate becomes U+FFFD: Go strings are UTF-8
			default:
				return "", false
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", false
}

// controlEscapes are the bytes of the one-letter escapes of control
// characters: JSON has \b \f \n \r \t, Python also \a and \v.
var controlEscapes = [256]byte{'a': '\a', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}

func (p *valueParser) hexRune(n int) (rune, bool) {
	if p.i+n > len(p.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(p.s[p.i:p.i+n], 16, 32)
	if err != nil || strings.ContainsAny(p.s[p.i:p.i+n], "+-_") {
		return 0, false
	}
	p.i += n
	return rune(v), true
}

// pyLiteralEval parses the part of Python's ast.literal_eval that
// json.dumps can write: None/True/False, ints (decimal, 0x, 0o, 0b),
// floats, strings in single or double quotes (adjacent ones joined),
// lists, tuples and dicts with str, int, float, bool or None keys (which
// json.dumps turns into strings). Sets, bytes, complex numbers and
// triple-quoted or prefixed strings are not accepted; vLLM would fail on
// the first three in json.dumps, and the value stays a string here.
func pyLiteralEval(s string) (pyValue, bool) {
	p := &valueParser{s: strings.TrimLeft(s, " \t")}
	v, ok := p.pyValue(0)
	if !ok {
		return nil, false
	}
	p.skipPySpace()
	return v, p.i == len(p.s)
}

func (p *valueParser) skipPySpace() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r', '\f':
			p.i++
		case '#':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *valueParser) pyValue(depth int) (pyValue, bool) {
	p.skipPySpace()
	if p.i >= len(p.s) || depth > maxDepth {
		return nil, false
	}
	c := p.s[p.i]
	switch {
	case c == '[' || c == '(':
		closer := byte(']')
		if c == '(' {
			closer = ')'
		}
		p.i++
		l := []pyValue{}
		sawComma := false
		for {
			p.skipPySpace()
			if p.lit(string(closer)) {
				// (x) is x, not a tuple; (x,) and [x] are sequences.
				if c == '(' && len(l) == 1 && !sawComma {
					return l[0], true
				}
				return l, true
			}
			v, ok := p.pyValue(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
			p.skipPySpace()
			sawComma = false
			if p.lit(",") {
				sawComma = true
				continue
			}
			p.skipPySpace()
			if !strings.HasPrefix(p.s[p.i:], string(closer)) {
				return nil, false
			}
		}
	case c == '{':
		p.i++
		d := newPyDict()
		for {
			p.skipPySpace()
			if p.lit("}") {
				return d, true
			}
			k, ok := p.pyValue(depth + 1)
			if !ok {
				return nil, false
			}
			id, key, ok := pyDictKey(k)
			if !ok {
				return nil, false
			}
			if f, isF := k.(float64); isF && (math.IsInf(f, 0) || math.IsNaN(f)) {
				d.nonFinite = true
			}
			p.skipPySpace()
			if !p.lit(":") {
				return nil, false // a set, or not a literal
			}
			v, ok := p.pyValue(depth + 1)
			if !ok {
				return nil, false
			}
			d.setID(id, key, v)
			p.skipPySpace()
			if !p.lit(",") {
				p.skipPySpace()
				if !strings.HasPrefix(p.s[p.i:], "}") {
					return nil, false
				}
			}
		}
	case c == '\'' || c == '"':
		var b strings.Builder
		for p.i < len(p.s) && (p.s[p.i] == '\'' || p.s[p.i] == '"') {
			s, ok := p.pyString()
			if !ok {
				return nil, false
			}
			b.WriteString(s)
			p.skipPySpace()
		}
		return b.String(), true
	case c == '-' || c == '+':
		// literal_eval allows a sign only directly on a number literal.
		p.i++
		p.skipPySpace()
		if p.i >= len(p.s) || !(p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.') {
			return nil, false
		}
		v, ok := p.pyNumber()
		if !ok || c == '+' {
			return v, ok
		}
		if n, isInt := v.(*big.Int); isInt {
			return n.Neg(n), true
		}
		return -v.(float64), true
	case c >= '0' && c <= '9' || c == '.':
		return p.pyNumber()
	default:
		for _, kw := range []struct {
			w string
			v pyValue
		}{{"None", nil}, {"True", true}, {"False", false}} {
			if strings.HasPrefix(p.s[p.i:], kw.w) && !isIdentByte(p.s, p.i+len(kw.w)) {
				p.i += len(kw.w)
				return kw.v, true
			}
		}
		return nil, false
	}
}

func isIdentByte(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// pyDictKey returns a literal dict key's identity under Python equality
// (numbers equal in value are one key, True is 1) and the string
// json.dumps writes for it.
func pyDictKey(k pyValue) (id, key string, ok bool) {
	switch x := k.(type) {
	case string:
		return "s" + x, x, true
	case nil:
		return "none", "null", true
	case bool:
		if x {
			return "n1", "true", true
		}
		return "n0", "false", true
	case *big.Int:
		return "n" + x.String(), x.String(), true
	case float64:
		if !math.IsInf(x, 0) && !math.IsNaN(x) && x == math.Trunc(x) {
			return "n" + floatToInt(x).String(), pyFloatRepr(x), true
		}
		return "f" + pyFloatRepr(x), pyFloatRepr(x), true
	}
	return "", "", false
}

func (p *valueParser) pyNumber() (pyValue, bool) {
	start := p.i
	for p.i < len(p.s) && (isIdentByte(p.s, p.i) || p.s[p.i] == '.' ||
		(p.s[p.i] == '+' || p.s[p.i] == '-') && p.i > start && (p.s[p.i-1] == 'e' || p.s[p.i-1] == 'E')) {
		p.i++
	}
	lit := strings.ToLower(p.s[start:p.i])
	if len(lit) > 2 && lit[0] == '0' && strings.IndexByte("xob", lit[1]) >= 0 {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[lit[1]]
		body := strings.TrimPrefix(lit[2:], "_")
		if body == "" || strings.HasSuffix(body, "_") || strings.Contains(body, "__") {
			return nil, false
		}
		n, ok := new(big.Int).SetString(strings.ReplaceAll(body, "_", ""), base)
		return n, ok
	}
	if !strings.ContainsAny(lit, ".e") {
		digits, ok := pyDigits(lit)
		if !ok || len(digits) > 1 && strings.Trim(digits, "0") != "" && digits[0] == '0' {
			return nil, false // 007 is a syntax error in Python 3
		}
		n, ok := new(big.Int).SetString(digits, 10)
		return n, ok
	}
	if strings.ContainsAny(lit, "ij") || strings.Contains(lit, "inf") || strings.Contains(lit, "nan") {
		return nil, false
	}
	f, ok := pyFloat(lit)
	return f, ok
}

// pyString reads one '…' or "…" literal with Python's escapes.
func (p *valueParser) pyString() (string, bool) {
	q := p.s[p.i]
	if strings.HasPrefix(p.s[p.i:], string([]byte{q, q, q})) {
		return "", false // triple-quoted strings are not supported
	}
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == q:
			p.i++
			return b.String(), true
		case c == '\n':
			return "", false
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return "", false
			}
			e := p.s[p.i+1]
			p.i += 2
			switch e {
			case '\n':
			case '\\', '\'', '"':
				b.WriteByte(e)
			case 'a', 'b', 'f', 'n', 'r', 't', 'v':
				b.WriteByte(controlEscapes[e])
			case 'x', 'u', 'U':
				n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
				r, ok := p.hexRune(n)
				if !ok || r > utf8.MaxRune {
					return "", false
				}
				b.WriteRune(r)
			default:
				if e >= '0' && e <= '7' {
					v := int(e - '0')
					for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
						v = v*8 + int(p.s[p.i]-'0')
						p.i++
					}
					b.WriteRune(rune(v))
				} else {
					// Unknown escapes keep the backslash in Python.
					b.WriteByte('\\')
					b.WriteByte(e)
				}
			}
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return "", false
}
