package mathgrade

import (
	"math"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// MaxLen is the longest answer or ground truth graded, in bytes. Longer
// ones are not answers; refusing them keeps every step linear-time in
// practice (the comma stripping of grader.py is a loop of rewrites).
const MaxLen = 4096

// GradeAnswer is mathruler's grade_answer(given, groundTruth): true when
// the two normalise to the same string (the Hendrycks MATH normalisation
// of math_normalize.py, or grader.py's own _normalize), or when, element by
// element of a tuple or interval, the difference evaluates to zero.
//
// grader.py hands that last step to sympy (parse_expr, then simplify).
// Here it is an exact evaluation of what _normalize leaves of numbers,
// + - * / ^, parentheses, implicit multiplication, sqrt and pi: rationals
// exactly, roots and pi at 256 bits (a difference below 2^-200 of the
// operands is zero); as in sympy, an expression with a decimal literal
// is evaluated in 53-bit floats and must come out exactly 0. Not covered
// (the answer is then false where sympy may say true): anything with
// symbols (letters other than sqrt and pi), so no symbolic equivalence
// ("x+1" against "1+x"); other functions; complex numbers; non-integer
// powers; LaTeX macros outside the subset latexToText knows; exact
// cancellation between a decimal and an irrational coefficient. Inputs
// longer than MaxLen are false.
func GradeAnswer(given, groundTruth string) bool {
	if len(given) > MaxLen || len(groundTruth) > MaxLen {
		return false
	}
	if normalizeAnswer(groundTruth) == normalizeAnswer(given) {
		return true
	}
	gt, gtOK := normalize(groundTruth)
	gv, gvOK := normalize(given)
	if !gtOK || !gvOK {
		return false
	}
	if gt == gv {
		return true
	}
	if gv == "" {
		return false
	}
	gtElems := splitTuple(gt)
	gvElems := splitTuple(gv)
	if len(gtElems) > 1 && (firstCP(gt) != firstCP(gv) || lastCP(gt) != lastCP(gv)) {
		return false
	}
	if len(gtElems) != len(gvElems) {
		return false
	}
	for i, t := range gtElems {
		g := gvElems[i]
		var ok bool
		switch {
		case isFrac(t) && isFrac(g):
			// unreduced fractions must match as written
			ok = t == g
		case strIsInt(t) != strIsInt(g):
			ok = false
		default:
			ok = equalUnderEval(t, g)
		}
		if !ok {
			return false
		}
	}
	return true
}

func firstCP(s string) rune {
	for _, r := range s {
		return r
	}
	return -1
}

func lastCP(s string) rune {
	r := []rune(s)
	if len(r) == 0 {
		return -1
	}
	return r[len(r)-1]
}

// ExtractBoxedContent is mathruler's extract_boxed_content: the text of the
// last "\boxed{...}" (braces balanced, trimmed), or "None" when there is
// none or it is not closed.
func ExtractBoxedContent(text string) string {
	start := strings.LastIndex(text, `\boxed{`)
	if start < 0 {
		return "None"
	}
	content := text[start+len(`\boxed{`):]
	depth := 0
	for i := 0; i < len(content); i++ {
		switch content[i] {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth == -1 {
			return pyStrip(content[:i])
		}
	}
	return "None"
}

var (
	unitRes = func() []*regexp.Regexp {
		var rs []*regexp.Regexp
		for _, u := range []string{"degree", "cm", "centimeter", "meter", "mile", "second", "minute",
			"hour", "day", "week", "month", "year", "foot", "feet", "inch", "yard"} {
			rs = append(rs, regexp.MustCompile(u+`(es)?(s)? *(\^[0-9]+)?`))
		}
		return rs
	}()
	circRe       = regexp.MustCompile(`\^ *\\circ`)
	thinSpaceRe  = regexp.MustCompile(`,\\! *`)
	minusSpaceRe = regexp.MustCompile(`- *`)
	mixedRe      = regexp.MustCompile(`([0-9]) +([0-9])`)
	commaRe      = regexp.MustCompile(`(\d)(,)(\d\d\d)(\z|\D)`)
	fracRe       = regexp.MustCompile(`^-?[0-9]+.?/0*[1-9][0-9]*.?\n?\z`)
)

// normalize is grader.py's _normalize. It is !ok where the LaTeX in expr
// is outside what latexToText covers.
func normalize(expr string) (string, bool) {
	if m := textRe.FindStringSubmatch(expr); m != nil {
		expr = m[1]
	}
	expr = strings.NewReplacer(`\%`, "%", `\$`, "$").Replace(expr)
	expr = strings.ReplaceAll(expr, "$", "")
	expr = strings.ReplaceAll(expr, "%", "")
	expr = strings.ReplaceAll(expr, " or ", " , ")
	expr = strings.ReplaceAll(expr, " and ", " , ")
	expr = strings.ReplaceAll(expr, "million", "*10^6")
	expr = strings.ReplaceAll(expr, "billion", "*10^9")
	expr = strings.ReplaceAll(expr, "trillion", "*10^12")
	for _, re := range unitRes {
		expr = re.ReplaceAllString(expr, "")
	}
	expr = circRe.ReplaceAllString(expr, "")
	if len(expr) > 0 && expr[0] == '{' && expr[len(expr)-1] == '}' {
		expr = expr[1 : len(expr)-1]
	}
	expr = thinSpaceRe.ReplaceAllString(expr, "")
	if f, ok := pyFloat(expr); ok && isInt(f) {
		expr = roundedInt(f)
	}
	if strings.Contains(expr, `\`) {
		s, ok := parseLatex(expr)
		if !ok {
			return "", false
		}
		expr = s
	}
	expr = minusSpaceRe.ReplaceAllString(expr, "-")
	expr = mixedRe.ReplaceAllString(expr, "${1}+${2}")
	expr = strings.ReplaceAll(expr, " ", "")
	expr = strings.ReplaceAll(expr, "{", "")
	expr = strings.ReplaceAll(expr, "}", "")
	expr = strings.ToLower(expr)
	if strIsInt(expr) {
		expr = strToInt(expr)
	}
	return expr, true
}

// parseLatex is grader.py's _parse_latex.
func parseLatex(expr string) (string, bool) {
	expr = strings.ReplaceAll(expr, `\tfrac`, `\frac`)
	expr = strings.ReplaceAll(expr, `\dfrac`, `\frac`)
	expr = strings.ReplaceAll(expr, `\frac`, ` \frac`)
	expr, ok := latexToText(expr)
	if !ok {
		return "", false
	}
	expr = strings.NewReplacer("√", "sqrt", "π", "pi", "∞", "inf", "∪", "U", "·", "*", "×", "*").Replace(expr)
	return pyStrip(expr), true
}

// splitTuple is grader.py's split_tuple.
func splitTuple(expr string) []string {
	expr = stripCommas(expr)
	if expr == "" {
		return nil
	}
	const tupleChars = "()[]"
	if len(expr) > 2 && strings.IndexByte(tupleChars, expr[0]) >= 0 &&
		strings.IndexByte(tupleChars, expr[len(expr)-1]) >= 0 &&
		!strings.ContainsAny(expr[1:len(expr)-1], tupleChars) {
		elems := strings.Split(expr[1:len(expr)-1], ",")
		for i := range elems {
			elems[i] = pyStrip(elems[i])
		}
		return elems
	}
	return []string{expr}
}

// stripCommas is _strip_properly_formatted_commas: "1,000" → "1000", tuple
// commas kept.
func stripCommas(expr string) string {
	for {
		next := commaRe.ReplaceAllString(expr, "${1}${3}${4}")
		if next == expr {
			return next
		}
		expr = next
	}
}

func isFrac(s string) bool { return fracRe.MatchString(s) }

// strIsInt is _str_is_int.
func strIsInt(s string) bool {
	f, ok := pyFloat(stripCommas(s))
	return ok && isInt(f)
}

// strToInt is str(_str_to_int(s)): int() of the float, which truncates.
func strToInt(s string) string {
	f, _ := pyFloat(strings.ReplaceAll(s, ",", ""))
	i, _ := big.NewFloat(math.Trunc(f)).Int(nil)
	return i.String()
}

// isInt is _is_int: within 1e-7 of an integer; inf and nan raise in
// Python's int(round(x)) and so are not.
func isInt(f float64) bool {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return false
	}
	return math.Abs(f-math.RoundToEven(f)) <= 1e-7
}

func roundedInt(f float64) string {
	i, _ := big.NewFloat(math.RoundToEven(f)).Int(nil)
	return i.String()
}

var pyFloatRe = regexp.MustCompile(`^[+-]?(?:(?:\d(?:_?\d)*)?\.?\d(?:_?\d)*|\d(?:_?\d)*\.)(?:[eE][+-]?\d(?:_?\d)*)?$`)

// pyFloat is Python's float(str) on what answers contain: surrounding
// whitespace, a sign, underscores between digits, an exponent, "inf",
// "infinity" and "nan" in any case. ASCII digits only (Python also takes
// other scripts' digits).
func pyFloat(s string) (float64, bool) {
	s = pyStrip(s)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return 0, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), true
		}
		return math.Inf(1), true
	case "nan":
		return math.NaN(), true
	}
	if !pyFloatRe.MatchString(s) {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(s, "_", ""), 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	return f, true // out of range: ±inf or 0, as Python gives
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// countLetters is count_unknown_letters_in_expr.
func countLetters(expr string) int {
	expr = strings.ReplaceAll(expr, "sqrt", "")
	expr = strings.ReplaceAll(expr, "frac", "")
	seen := map[rune]bool{}
	for _, r := range expr {
		if unicode.IsLetter(r) {
			seen[r] = true
		}
	}
	return len(seen)
}

var badRes = []*regexp.Regexp{regexp.MustCompile(`\^[0-9]+\^`), regexp.MustCompile(`\^[0-9][0-9]+`)}

// shouldAllowEval is should_allow_eval.
func shouldAllowEval(expr string) bool {
	if countLetters(expr) > 2 || strings.Contains(expr, "^{") || strings.Contains(expr, "^(") {
		return false
	}
	for _, re := range badRes {
		if re.MatchString(expr) {
			return false
		}
	}
	return true
}
