package tool

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Calculator limits. They keep a hostile expression from using unbounded
// memory or time: every intermediate value is checked against MaxCalcBits.
const (
	// MaxCalcInput is the longest expression accepted, in bytes.
	MaxCalcInput = 10000
	// MaxCalcDepth bounds nesting of parentheses, signs and powers.
	MaxCalcDepth = 64
	// MaxCalcBits bounds the numerator and the denominator of every
	// intermediate value (16384 bits is about 4932 decimal digits).
	MaxCalcBits = 16384
	// CalcSignificantDigits is how many significant digits a result whose
	// decimal expansion does not terminate is rounded to.
	CalcSignificantDigits = 15
)

// CalcError is a calculator error: what went wrong and where (Pos is the
// 1-based character position in the expression, 0 when not tied to one).
type CalcError struct {
	Pos int
	Msg string
}

func (e *CalcError) Error() string {
	if e.Pos > 0 {
		return fmt.Sprintf("%s at position %d", e.Msg, e.Pos)
	}
	return e.Msg
}

// Calculate evaluates an arithmetic expression exactly and formats the
// result (see Evaluate and FormatDecimal for the rules).
func Calculate(expr string) (string, error) {
	r, err := Evaluate(expr)
	if err != nil {
		return "", err
	}
	return FormatDecimal(r), nil
}

// Evaluate computes an arithmetic expression with exact rational
// arithmetic. It accepts integers and decimals (12, 3.5, .5, 5.),
// + - * / % ** and parentheses, unary minus and plus, and the Unicode
// operators × ÷ − (U+2212). Precedence and associativity are Python's:
// ** binds tighter than unary minus on its left (-2**2 == -4) and is right
// associative (2**3**2 == 512); % is the floored modulo (-7 % 3 == 2, the
// sign of the divisor). An exponent must be an integer. Nothing but these
// tokens is accepted: no names, no function calls, no code.
func Evaluate(expr string) (*big.Rat, error) {
	if len(expr) > MaxCalcInput {
		return nil, &CalcError{Msg: fmt.Sprintf("expression too long (%d bytes, limit %d)", len(expr), MaxCalcInput)}
	}
	toks, err := lex(expr)
	if err != nil {
		return nil, err
	}
	p := &calcParser{toks: toks}
	v, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, &CalcError{Pos: t.pos, Msg: fmt.Sprintf("unexpected %s", t)}
	}
	return v, nil
}

type tokKind int

const (
	tEOF tokKind = iota
	tNum
	tPlus
	tMinus
	tMul
	tDiv
	tMod
	tPow
	tLParen
	tRParen
)

type calcTok struct {
	kind tokKind
	pos  int    // 1-based character position
	text string // the number's spelling
}

func (t calcTok) String() string {
	switch t.kind {
	case tEOF:
		return "end of expression"
	case tNum:
		return "number " + t.text
	}
	return fmt.Sprintf("%q", []string{"", "", "+", "-", "*", "/", "%", "**", "(", ")"}[t.kind])
}

func lex(s string) ([]calcTok, error) {
	var toks []calcTok
	pos := 0 // characters consumed
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		pos++
		start := pos
		switch {
		case r == utf8.RuneError && w == 1:
			return nil, &CalcError{Pos: pos, Msg: "invalid UTF-8"}
		case unicode.IsSpace(r):
			i += w
			continue
		case r >= '0' && r <= '9' || r == '.':
			j := i
			digits, dots := 0, 0
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				if s[j] == '.' {
					dots++
				} else {
					digits++
				}
				j++
			}
			text := s[i:j]
			if dots > 1 || digits == 0 {
				return nil, &CalcError{Pos: start, Msg: fmt.Sprintf("malformed number %q", text)}
			}
			if j < len(s) && (s[j] == 'e' || s[j] == 'E' || s[j] == '_' || s[j] == ',') {
				return nil, &CalcError{Pos: start + (j - i), Msg: fmt.Sprintf("unsupported character %q in number (write plain decimals)", s[j])}
			}
			toks = append(toks, calcTok{kind: tNum, pos: start, text: text})
			pos += j - i - 1
			i = j
			continue
		case r == '*' && i+1 < len(s) && s[i+1] == '*':
			toks = append(toks, calcTok{kind: tPow, pos: start})
			pos++
			i += 2
			continue
		}
		var k tokKind
		switch r {
		case '+':
			k = tPlus
		case '-', '−':
			k = tMinus
		case '*', '×':
			k = tMul
		case '/', '÷':
			k = tDiv
		case '%':
			k = tMod
		case '(':
			k = tLParen
		case ')':
			k = tRParen
		case '^':
			return nil, &CalcError{Pos: start, Msg: `"^" is not supported; use ** for powers`}
		default:
			return nil, &CalcError{Pos: start, Msg: fmt.Sprintf("unexpected character %q", r)}
		}
		toks = append(toks, calcTok{kind: k, pos: start})
		i += w
	}
	return append(toks, calcTok{kind: tEOF, pos: pos + 1}), nil
}

type calcParser struct {
	toks []calcTok
	i    int
}

func (p *calcParser) peek() calcTok { return p.toks[p.i] }
func (p *calcParser) next() calcTok { t := p.toks[p.i]; p.i++; return t }

func tooDeep(t calcTok) error {
	return &CalcError{Pos: t.pos, Msg: fmt.Sprintf("expression nested too deeply (limit %d)", MaxCalcDepth)}
}

// expr := term (('+'|'-') term)*
func (p *calcParser) expr(depth int) (*big.Rat, error) {
	v, err := p.term(depth)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tPlus && t.kind != tMinus {
			return v, nil
		}
		p.next()
		w, err := p.term(depth)
		if err != nil {
			return nil, err
		}
		if t.kind == tPlus {
			v = new(big.Rat).Add(v, w)
		} else {
			v = new(big.Rat).Sub(v, w)
		}
		if err := checkSize(v, t); err != nil {
			return nil, err
		}
	}
}

// term := unary (('*'|'/'|'%') unary)*
func (p *calcParser) term(depth int) (*big.Rat, error) {
	v, err := p.unary(depth)
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind != tMul && t.kind != tDiv && t.kind != tMod {
			return v, nil
		}
		p.next()
		w, err := p.unary(depth)
		if err != nil {
			return nil, err
		}
		switch t.kind {
		case tMul:
			v = new(big.Rat).Mul(v, w)
		case tDiv:
			if w.Sign() == 0 {
				return nil, &CalcError{Pos: t.pos, Msg: "division by zero"}
			}
			v = new(big.Rat).Quo(v, w)
		case tMod:
			if w.Sign() == 0 {
				return nil, &CalcError{Pos: t.pos, Msg: "modulo by zero"}
			}
			v = floorMod(v, w)
		}
		if err := checkSize(v, t); err != nil {
			return nil, err
		}
	}
}

// unary := ('-'|'+') unary | power
func (p *calcParser) unary(depth int) (*big.Rat, error) {
	t := p.peek()
	if t.kind != tMinus && t.kind != tPlus {
		return p.power(depth)
	}
	if depth >= MaxCalcDepth {
		return nil, tooDeep(t)
	}
	p.next()
	v, err := p.unary(depth + 1)
	if err != nil {
		return nil, err
	}
	if t.kind == tMinus {
		v = new(big.Rat).Neg(v)
	}
	return v, nil
}

// power := primary ['**' unary]
func (p *calcParser) power(depth int) (*big.Rat, error) {
	base, err := p.primary(depth)
	if err != nil {
		return nil, err
	}
	t := p.peek()
	if t.kind != tPow {
		return base, nil
	}
	if depth >= MaxCalcDepth {
		return nil, tooDeep(t)
	}
	p.next()
	exp, err := p.unary(depth + 1)
	if err != nil {
		return nil, err
	}
	return ratPow(base, exp, t)
}

// primary := number | '(' expr ')'
func (p *calcParser) primary(depth int) (*big.Rat, error) {
	t := p.next()
	switch t.kind {
	case tNum:
		v, ok := new(big.Rat).SetString(t.text)
		if !ok {
			return nil, &CalcError{Pos: t.pos, Msg: fmt.Sprintf("malformed number %q", t.text)}
		}
		if err := checkSize(v, t); err != nil {
			return nil, err
		}
		return v, nil
	case tLParen:
		if depth >= MaxCalcDepth {
			return nil, tooDeep(t)
		}
		v, err := p.expr(depth + 1)
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != tRParen {
			return nil, &CalcError{Pos: c.pos, Msg: fmt.Sprintf("expected \")\" to close \"(\" at position %d, found %s", t.pos, c)}
		}
		return v, nil
	}
	return nil, &CalcError{Pos: t.pos, Msg: fmt.Sprintf("expected a number or \"(\", found %s", t)}
}

func checkSize(v *big.Rat, at calcTok) error {
	if v.Num().BitLen() > MaxCalcBits || v.Denom().BitLen() > MaxCalcBits {
		return &CalcError{Pos: at.pos, Msg: fmt.Sprintf("result too large (over %d bits)", MaxCalcBits)}
	}
	return nil
}

// floorMod is Python's % on rationals: a - b*floor(a/b).
func floorMod(a, b *big.Rat) *big.Rat {
	q := new(big.Rat).Quo(a, b)
	fl := new(big.Int).Div(q.Num(), q.Denom()) // Euclidean division; denominators are positive, so this floors
	return new(big.Rat).Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(fl)))
}

func ratPow(base, exp *big.Rat, at calcTok) (*big.Rat, error) {
	if !exp.IsInt() {
		return nil, &CalcError{Pos: at.pos, Msg: "exponent must be an integer (results are exact)"}
	}
	e := exp.Num()
	neg := e.Sign() < 0
	absE := new(big.Int).Abs(e)
	if base.Sign() == 0 {
		if neg {
			return nil, &CalcError{Pos: at.pos, Msg: "division by zero (zero to a negative power)"}
		}
		if absE.Sign() == 0 {
			return big.NewRat(1, 1), nil
		}
		return new(big.Rat), nil
	}
	if base.Num().CmpAbs(base.Denom()) == 0 { // ±1
		if base.Sign() < 0 && absE.Bit(0) == 1 {
			return big.NewRat(-1, 1), nil
		}
		return big.NewRat(1, 1), nil
	}
	// |base| != 1, so some part has at least 2 bits of size that grows
	// linearly with the exponent: reject before computing.
	bits := max(base.Num().BitLen(), base.Denom().BitLen())
	if !absE.IsInt64() || (bits-1)*int(min(absE.Int64(), MaxCalcBits+1)) > MaxCalcBits {
		return nil, &CalcError{Pos: at.pos, Msg: fmt.Sprintf("result too large (over %d bits)", MaxCalcBits)}
	}
	num := new(big.Int).Exp(base.Num(), absE, nil)
	den := new(big.Int).Exp(base.Denom(), absE, nil)
	if neg {
		num, den = den, num
	}
	r := new(big.Rat).SetFrac(num, den)
	if err := checkSize(r, at); err != nil {
		return nil, err
	}
	return r, nil
}

// FormatDecimal writes r in plain decimal notation. Integers and values whose
// decimal expansion terminates are written exactly (0.125, -2.5); other values
// are rounded to CalcSignificantDigits significant digits (halves away from
// zero), keeping at least the whole integer part, with trailing zeros
// dropped: 1/3 → 0.333333333333333, 200/3 → 66.6666666666667.
func FormatDecimal(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	if frac, ok := terminatingDigits(r.Denom()); ok {
		return r.FloatString(frac)
	}
	e := floorLog10(new(big.Rat).Abs(r))
	s := r.FloatString(max(0, CalcSignificantDigits-1-e))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// terminatingDigits reports whether 1/d has a finite decimal expansion and
// how many fractional digits it needs (the larger power of 2 or 5 in d).
func terminatingDigits(d *big.Int) (int, bool) {
	x := new(big.Int).Set(d)
	twos := int(x.TrailingZeroBits())
	x.Rsh(x, uint(twos))
	fives := 0
	five := big.NewInt(5)
	q, m := new(big.Int), new(big.Int)
	for {
		q.QuoRem(x, five, m)
		if m.Sign() != 0 {
			break
		}
		x.Set(q)
		fives++
	}
	return max(twos, fives), x.Cmp(big.NewInt(1)) == 0
}

// floorLog10 returns floor(log10(x)) for x > 0.
func floorLog10(x *big.Rat) int {
	e := len(x.Num().String()) - len(x.Denom().String())
	// 10^e <= x < 10^(e+1) holds for e or e-1; test e.
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(abs(e))), nil)
	lhs, rhs := new(big.Int).Set(x.Num()), new(big.Int).Set(x.Denom())
	if e >= 0 {
		rhs.Mul(rhs, p)
	} else {
		lhs.Mul(lhs, p)
	}
	if lhs.Cmp(rhs) < 0 { // x < 10^e
		return e - 1
	}
	return e
}

func abs(i int) int {
	if i < 0 {
		return -i
	}
	return i
}

type calcArgs struct {
	Expression string `json:"expression" jsonschema:"Arithmetic expression with numbers, + - * / % ** and parentheses, e.g. (12.5 + 3) * 4"`
}

// NewCalculator returns the "calculator" tool: {"expression": "..."} →
// the exact result (see Evaluate and FormatDecimal). Errors in the
// expression come back as execution errors naming the position.
func NewCalculator() Tool {
	f, err := NewFunc("calculator", "Evaluate an arithmetic expression exactly.",
		func(_ context.Context, a calcArgs) (string, error) { return Calculate(a.Expression) })
	if err != nil {
		// calcArgs is a fixed struct; deriving its schema cannot fail.
		panic(err)
	}
	return f
}
