package mathgrade

import (
	"errors"
	"math"
	"math/big"
	"strings"
)

// equalUnderEval stands in for are_equal_under_sympy: the difference
// "(gt)-(given)", if should_allow_eval lets it through, must evaluate to
// zero. What sympy would parse but this evaluator does not cover (see
// GradeAnswer) is false, as sympy's own failures are.
func equalUnderEval(gt, given string) bool {
	expr := "(" + gt + ")-(" + given + ")"
	if !shouldAllowEval(expr) {
		return false
	}
	e := evaluator{src: strings.ReplaceAll(expr, "^", "**")}
	if err := e.tokenize(); err != nil {
		return false
	}
	v, err := e.expr(0)
	if err != nil || e.pos != len(e.toks) {
		return false
	}
	switch v.kind {
	case kindRat:
		return v.rat.Sign() == 0
	case kindFloat:
		return v.f == 0
	default:
		// 2^-200 of the largest magnitude seen: far below what a short
		// expression of small numbers can leave without being zero, far
		// above the rounding of 256-bit arithmetic.
		tol := new(big.Float).SetPrec(irrPrec).SetMantExp(big.NewFloat(1), -200)
		tol.Mul(tol, e.maxMag)
		d := new(big.Float).Abs(v.irr)
		return d.Cmp(tol) <= 0
	}
}

const (
	irrPrec     = 256
	maxRatBits  = 1 << 14
	maxEvalDeep = 100
	maxPow      = 64
	maxExponent = 1 << 16 // of an irrational value's binary exponent
)

var errNotCovered = errors.New("not covered")

type kind int

const (
	kindRat   kind = iota // exact: integers and their quotients (sympy Rational)
	kindFloat             // touched by a decimal literal (sympy Float, 53 bits)
	kindIrr               // exact in sympy (sqrt, pi), 256-bit here
)

type value struct {
	kind kind
	rat  *big.Rat
	f    float64
	irr  *big.Float
}

type token struct {
	op  string // "+", "-", "*", "/", "**", "(", ")", "num", "pi", "sqrt"
	num string
}

type evaluator struct {
	src    string
	toks   []token
	pos    int
	maxMag *big.Float
}

func (e *evaluator) tokenize() error {
	e.maxMag = big.NewFloat(1).SetPrec(irrPrec)
	s := e.src
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '*' && i+1 < len(s) && s[i+1] == '*':
			e.toks = append(e.toks, token{op: "**"})
			i += 2
		case strings.IndexByte("+-*/()", c) >= 0:
			e.toks = append(e.toks, token{op: string(c)})
			i++
		case c >= '0' && c <= '9' || c == '.':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.') {
				j++
			}
			if j+1 < len(s) && (s[j] == 'e' || s[j] == 'E') && s[j+1] >= '0' && s[j+1] <= '9' {
				j++
				for j < len(s) && s[j] >= '0' && s[j] <= '9' {
					j++
				}
			}
			num := s[i:j]
			if num == "." || strings.Count(num, ".") > 1 {
				return errNotCovered
			}
			// "03" is not a Python number literal.
			if len(num) > 1 && num[0] == '0' && num[1] >= '0' && num[1] <= '9' && !strings.ContainsAny(num, ".eE") {
				return errNotCovered
			}
			e.toks = append(e.toks, token{op: "num", num: num})
			i = j
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_':
			j := i
			for j < len(s) && (s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] == '_' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name := s[i:j]
			if name != "pi" && name != "sqrt" {
				return errNotCovered // a symbol or another function
			}
			e.toks = append(e.toks, token{op: name})
			i = j
		default:
			return errNotCovered
		}
	}
	return nil
}

func (e *evaluator) peek() string {
	if e.pos < len(e.toks) {
		return e.toks[e.pos].op
	}
	return ""
}

// expr := term (("+"|"-") term)*
func (e *evaluator) expr(depth int) (value, error) {
	if depth > maxEvalDeep {
		return value{}, errNotCovered
	}
	v, err := e.term(depth)
	if err != nil {
		return v, err
	}
	for op := e.peek(); op == "+" || op == "-"; op = e.peek() {
		e.pos++
		w, err := e.term(depth)
		if err != nil {
			return w, err
		}
		if v, err = e.arith(op, v, w); err != nil {
			return v, err
		}
	}
	return v, nil
}

// term := unary (("*"|"/"|implicit) unary)*: sympy's implicit
// multiplication inserts "*" before a number, name or "(" that follows
// an operand.
func (e *evaluator) term(depth int) (value, error) {
	v, err := e.unary(depth)
	if err != nil {
		return v, err
	}
	for {
		op := e.peek()
		switch op {
		case "*", "/":
			e.pos++
		case "num", "pi", "sqrt", "(":
			op = "*"
		default:
			return v, nil
		}
		w, err := e.unary(depth)
		if err != nil {
			return w, err
		}
		if v, err = e.arith(op, v, w); err != nil {
			return v, err
		}
	}
}

// unary := ("+"|"-") unary | power
func (e *evaluator) unary(depth int) (value, error) {
	if depth > maxEvalDeep {
		return value{}, errNotCovered
	}
	switch e.peek() {
	case "+":
		e.pos++
		return e.unary(depth + 1)
	case "-":
		e.pos++
		v, err := e.unary(depth + 1)
		if err != nil {
			return v, err
		}
		return e.arith("-", value{kind: kindRat, rat: new(big.Rat)}, v)
	}
	return e.power(depth)
}

// power := atom ["**" unary] (Python: right-associative, and the
// exponent may carry a sign: 2**-1).
func (e *evaluator) power(depth int) (value, error) {
	v, err := e.atom(depth)
	if err != nil {
		return v, err
	}
	if e.peek() != "**" {
		return v, nil
	}
	e.pos++
	x, err := e.unary(depth + 1)
	if err != nil {
		return x, err
	}
	if x.kind != kindRat || !x.rat.IsInt() {
		return value{}, errNotCovered
	}
	n := x.rat.Num()
	if !n.IsInt64() || n.Int64() > maxPow || n.Int64() < -maxPow {
		return value{}, errNotCovered
	}
	k := n.Int64()
	one := value{kind: kindRat, rat: big.NewRat(1, 1)}
	if v.kind == kindFloat {
		// sympy: Float**Integer evaluates in 53 bits.
		return e.check(value{kind: kindFloat, f: math.Pow(v.f, float64(k))})
	}
	r := one
	base := v
	neg := k < 0
	if neg {
		k = -k
	}
	for ; k > 0; k-- {
		if r, err = e.arith("*", r, base); err != nil {
			return r, err
		}
	}
	if neg {
		return e.arith("/", one, r)
	}
	return r, nil
}

// atom := number | "pi" | "sqrt" "(" expr ")" | "(" expr ")"
func (e *evaluator) atom(depth int) (value, error) {
	if e.pos >= len(e.toks) {
		return value{}, errNotCovered
	}
	t := e.toks[e.pos]
	e.pos++
	switch t.op {
	case "num":
		if strings.ContainsAny(t.num, ".eE") {
			f, ok := pyFloat(t.num)
			if !ok {
				return value{}, errNotCovered
			}
			return e.check(value{kind: kindFloat, f: f})
		}
		r, ok := new(big.Rat).SetString(t.num)
		if !ok {
			return value{}, errNotCovered
		}
		return e.check(value{kind: kindRat, rat: r})
	case "pi":
		return e.check(value{kind: kindIrr, irr: piFloat()})
	case "(":
		v, err := e.expr(depth + 1)
		if err != nil {
			return v, err
		}
		if e.peek() != ")" {
			return value{}, errNotCovered
		}
		e.pos++
		return v, nil
	case "sqrt":
		if e.peek() != "(" {
			return value{}, errNotCovered
		}
		e.pos++
		v, err := e.expr(depth + 1)
		if err != nil {
			return v, err
		}
		if e.peek() != ")" {
			return value{}, errNotCovered
		}
		e.pos++
		return e.sqrt(v)
	}
	return value{}, errNotCovered
}

func (e *evaluator) sqrt(v value) (value, error) {
	switch v.kind {
	case kindFloat:
		if v.f < 0 {
			return value{}, errNotCovered
		}
		return e.check(value{kind: kindFloat, f: math.Sqrt(v.f)})
	case kindRat:
		if v.rat.Sign() < 0 {
			return value{}, errNotCovered
		}
		n, d := new(big.Int).Sqrt(v.rat.Num()), new(big.Int).Sqrt(v.rat.Denom())
		if new(big.Int).Mul(n, n).Cmp(v.rat.Num()) == 0 && new(big.Int).Mul(d, d).Cmp(v.rat.Denom()) == 0 {
			return value{kind: kindRat, rat: new(big.Rat).SetFrac(n, d)}, nil
		}
		return e.check(value{kind: kindIrr, irr: new(big.Float).SetPrec(irrPrec).Sqrt(new(big.Float).SetPrec(irrPrec).SetRat(v.rat))})
	default:
		if v.irr.Sign() < 0 {
			return value{}, errNotCovered
		}
		return e.check(value{kind: kindIrr, irr: new(big.Float).SetPrec(irrPrec).Sqrt(v.irr)})
	}
}

func (e *evaluator) arith(op string, a, b value) (value, error) {
	switch {
	case a.kind == kindRat && b.kind == kindRat:
		r := new(big.Rat)
		switch op {
		case "+":
			r.Add(a.rat, b.rat)
		case "-":
			r.Sub(a.rat, b.rat)
		case "*":
			r.Mul(a.rat, b.rat)
		case "/":
			if b.rat.Sign() == 0 {
				return value{}, errNotCovered // sympy: zoo
			}
			r.Quo(a.rat, b.rat)
		}
		return e.check(value{kind: kindRat, rat: r})
	case a.kind == kindIrr && b.kind == kindFloat || a.kind == kindFloat && b.kind == kindIrr:
		// sympy keeps sqrt(2) and pi exact beside a Float; whether the
		// result simplifies to 0 is not decided here.
		return value{}, errNotCovered
	case a.kind == kindFloat || b.kind == kindFloat:
		x, y := toFloat(a), toFloat(b)
		var f float64
		switch op {
		case "+":
			f = x + y
		case "-":
			f = x - y
		case "*":
			f = x * y
		case "/":
			if y == 0 {
				return value{}, errNotCovered
			}
			f = x / y
		}
		return e.check(value{kind: kindFloat, f: f})
	default:
		x, y := toIrr(a), toIrr(b)
		r := new(big.Float).SetPrec(irrPrec)
		switch op {
		case "+":
			r.Add(x, y)
		case "-":
			r.Sub(x, y)
		case "*":
			r.Mul(x, y)
		case "/":
			if y.Sign() == 0 {
				return value{}, errNotCovered
			}
			r.Quo(x, y)
		}
		return e.check(value{kind: kindIrr, irr: r})
	}
}

// check bounds a value (no runaway rationals, no infinities, which would
// make big.Float panic on inf-inf) and records the largest magnitude.
func (e *evaluator) check(v value) (value, error) {
	switch v.kind {
	case kindRat:
		if v.rat.Num().BitLen() > maxRatBits || v.rat.Denom().BitLen() > maxRatBits {
			return value{}, errNotCovered
		}
		e.noteMag(new(big.Float).SetPrec(irrPrec).SetRat(v.rat))
	case kindFloat:
		if math.IsInf(v.f, 0) || math.IsNaN(v.f) {
			return value{}, errNotCovered
		}
	case kindIrr:
		if v.irr.IsInf() || v.irr.MantExp(nil) > maxExponent || v.irr.MantExp(nil) < -maxExponent {
			return value{}, errNotCovered
		}
		e.noteMag(v.irr)
	}
	return v, nil
}

func (e *evaluator) noteMag(f *big.Float) {
	a := new(big.Float).Abs(f)
	if a.Cmp(e.maxMag) > 0 {
		e.maxMag = a
	}
}

// toFloat is sympy's Rational → Float at 53 bits: the nearest float64.
func toFloat(v value) float64 {
	if v.kind == kindFloat {
		return v.f
	}
	f, _ := v.rat.Float64()
	return f
}

func toIrr(v value) *big.Float {
	if v.kind == kindIrr {
		return v.irr
	}
	return new(big.Float).SetPrec(irrPrec).SetRat(v.rat)
}

// piDigits is π to 80 decimal places, more than irrPrec bits.
const piDigits = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899"

func piFloat() *big.Float {
	f, _, _ := big.ParseFloat(piDigits, 10, irrPrec, big.ToNearestEven)
	return f
}
