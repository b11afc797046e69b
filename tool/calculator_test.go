package tool

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCalculate(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1 + 2", "3"},
		{"2 * (3 + 4)", "14"},
		{"0.1 + 0.2", "0.3"},
		{"7 / 2", "3.5"},
		{"1 / 3", "0.333333333333333"},
		{"2 / 3", "0.666666666666667"},
		{"200 / 3", "66.6666666666667"},
		{"-1 / 3", "-0.333333333333333"},
		{"1 / 30000", "0.0000333333333333333"},
		{"10 ** 20 / 3", "33333333333333333333"},
		{"1 / 8", "0.125"},
		{"2 ** -10", "0.0009765625"},
		{"2 ** 3 ** 2", "512"},
		{"-2 ** 2", "-4"},
		{"(-2) ** 2", "4"},
		{"2 ** -1", "0.5"},
		{"-7 % 3", "2"},
		{"7 % -3", "-2"},
		{"7.5 % 2", "1.5"},
		{"--3", "3"},
		{"+-+3", "-3"},
		{"12 × 3 ÷ 4 − 1", "8"},
		{".5 + 5.", "5.5"},
		{"  42  ", "42"},
		{"0 ** 0", "1"},
		{"(-1) ** 1000001", "-1"},
		{"1.10 * 3", "3.3"},
		{"123456789012345678901234567890 * 10", "1234567890123456789012345678900"},
		{"1 - 1.000", "0"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := Calculate(tc.in)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestCalculateErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1 / 0", "division by zero at position 3"},
		{"1 / (2 - 2)", "division by zero at position 3"},
		{"5 % 0", "modulo by zero at position 3"},
		{"0 ** -1", "division by zero (zero to a negative power) at position 3"},
		{"2 ** 100000", "result too large (over 16384 bits) at position 3"},
		{"10 ** 10 ** 10", "result too large (over 16384 bits) at position 4"},
		{"2 ** 0.5", "exponent must be an integer (results are exact) at position 3"},
		{"2 ^ 3", `"^" is not supported; use ** for powers at position 3`},
		{"1 +", "expected a number or \"(\", found end of expression at position 4"},
		{"(1 + 2", "expected \")\" to close \"(\" at position 1, found end of expression at position 7"},
		{"1 2", "unexpected number 2 at position 3"},
		{"1.2.3", `malformed number "1.2.3" at position 1`},
		{"1e5", `unsupported character 'e' in number (write plain decimals) at position 2`},
		{"1,000", `unsupported character ',' in number (write plain decimals) at position 2`},
		{"__import__('os')", `unexpected character '_' at position 1`},
		{"x + 1", `unexpected character 'x' at position 1`},
		{"", `expected a number or "(", found end of expression at position 1`},
		{"é + 1", `unexpected character 'é' at position 1`},
		{"\xff", "invalid UTF-8 at position 1"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), "expression nested too deeply (limit 64) at position 65"},
		{strings.Repeat("-", 100) + "1", "expression nested too deeply (limit 64) at position 65"},
		{strings.Repeat("1+", 6000) + "1", "expression too long (12001 bytes, limit 10000)"},
	}
	for _, tc := range tests {
		t.Run(tc.in[:min(len(tc.in), 20)], func(t *testing.T) {
			_, err := Calculate(tc.in)
			require.EqualError(t, err, tc.want)
		})
	}
}

func TestCalculatorTool(t *testing.T) {
	ctx := context.Background()
	s, err := NewSet(NewCalculator())
	require.NoError(t, err)
	require.JSONEq(t, `{"type":"object","properties":{"expression":{"type":"string","description":"Arithmetic expression with numbers, + - * / % ** and parentheses, e.g. (12.5 + 3) * 4"}},"required":["expression"],"additionalProperties":false}`,
		string(s.Schemas()[0].Function.Parameters))
	ss := s.Session(nil)
	defer func() { require.NoError(t, ss.Close(ctx)) }()
	r := ss.Call(ctx, call("calculator", `{"expression": "2 * (3 + 4)"}`))
	require.NoError(t, r.Err)
	require.Equal(t, "14", r.Text)
	r = ss.Call(ctx, call("calculator", `{"expression": "1/0"}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Equal(t, `Error when executing tool "calculator": division by zero at position 2`, r.Text)
	r = ss.Call(ctx, call("calculator", `{"expression": 5}`))
	require.ErrorIs(t, r.Err, ErrInvalidArguments)
	require.Equal(t, `Error: invalid arguments for tool "calculator": /expression: expected string, got number`, r.Text)
}

// randExpr builds a random expression over small operands.
func randExpr(r *rand.Rand, depth int) string {
	if depth == 0 || r.Intn(4) == 0 {
		switch r.Intn(3) {
		case 0:
			return fmt.Sprint(r.Intn(50))
		case 1:
			return fmt.Sprintf("%d.%d", r.Intn(20), r.Intn(100))
		default:
			return fmt.Sprintf("(-%d)", r.Intn(9)+1)
		}
	}
	a, b := randExpr(r, depth-1), randExpr(r, depth-1)
	switch r.Intn(7) {
	case 0:
		return a + " + " + b
	case 1:
		return a + " - " + b
	case 2:
		return a + " * " + b
	case 3:
		return a + " / " + b
	case 4:
		return a + " % " + b
	case 5:
		return "(" + a + ") ** " + fmt.Sprint(r.Intn(7)-3)
	default:
		return "-(" + a + ")"
	}
}

// TestCalculatorMatchesPythonFractions evaluates random expressions here and
// with Python's fractions.Fraction (exact, with Python's precedence, floored
// %, and ** on rationals) and compares the exact results.
func TestCalculatorMatchesPythonFractions(t *testing.T) {
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	r := rand.New(rand.NewSource(1))
	var exprs []string
	for len(exprs) < 400 {
		exprs = append(exprs, randExpr(r, 4))
	}
	// Each literal is turned into Fraction('...'); Python does the rest.
	script := `
import sys, re
from fractions import Fraction
for line in sys.stdin:
    e = line.strip()
    src = re.sub(r'(\d+\.\d*|\d+)', lambda m: "Fraction('%s')" % m.group(1), e)
    try:
        v = eval(src, {"Fraction": Fraction})
        print("%d/%d" % (v.numerator, v.denominator))
    except ZeroDivisionError:
        print("ZeroDivisionError")
`
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = strings.NewReader(strings.Join(exprs, "\n") + "\n")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	require.NoError(t, cmd.Run())
	want := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, want, len(exprs))
	checked := 0
	for i, e := range exprs {
		got, err := Evaluate(e)
		if want[i] == "ZeroDivisionError" {
			require.Error(t, err, e)
			require.Contains(t, err.Error(), "by zero", e)
			continue
		}
		require.NoError(t, err, e)
		w, ok := new(big.Rat).SetString(want[i])
		require.True(t, ok)
		require.Equal(t, w.String(), got.String(), e)
		checked++
	}
	require.Greater(t, checked, 200)
}

func FuzzCalculate(f *testing.F) {
	for _, s := range []string{"1+2", "2**3**2", "-(1.5 % 0.25) * 3", "1/3", "((((1))))", "2 ** -3", "7 ÷ 2 × 3 − 1", "1e3", "", "(", "9" + strings.Repeat("9", 40) + " ** 9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Evaluate(s)
		if err != nil {
			var ce *CalcError
			if !asCalcError(err, &ce) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if r.Num().BitLen() > MaxCalcBits || r.Denom().BitLen() > MaxCalcBits {
			t.Fatalf("result over the size limit for %q", s)
		}
		out := FormatDecimal(r)
		back, err := Evaluate(out)
		if err != nil {
			t.Fatalf("formatted result %q of %q does not parse: %v", out, s, err)
		}
		if _, exact := terminatingDigits(r.Denom()); exact && back.Cmp(r) != 0 {
			t.Fatalf("exact result %q of %q reads back as %v, want %v", out, s, back, r)
		}
	})
}

func asCalcError(err error, target **CalcError) bool {
	ce, ok := err.(*CalcError)
	*target = ce
	return ok
}
