package mathgrade

import (
	"strings"
	"testing"
)

// FuzzGradeAnswer: any pair of texts grades without a panic, and a
// text always matches itself (grade_answer's first check). The seeds are
// the golden cases and the shapes that stress each step: nested braces and
// parentheses, long comma runs, towers of powers, unclosed macros.
func FuzzGradeAnswer(f *testing.F) {
	for _, c := range loadGolden(f).Grade {
		f.Add(c.Given, c.GroundTruth)
	}
	for _, s := range []string{
		strings.Repeat("{", 5000) + "1" + strings.Repeat("}", 5000),
		strings.Repeat(`\sqrt{`, 200) + "2" + strings.Repeat("}", 200),
		strings.Repeat("(", 300) + "2" + strings.Repeat(")", 300),
		"1" + strings.Repeat(",000", 1000),
		strings.Repeat("(2^9)^9", 50), "((((2^9)^9)^9)^9)^9", "((((pi^9)^9)^9)^9)^9",
		`\frac`, `\sqrt`, `\frac{1}`, `\boxed{`, `\sqrt[3`, "1/0", "0.1^-9", "1e999", "nan", "-inf",
		strings.Repeat(`\frac{1}{`, 100), strings.Repeat("9", MaxLen),
	} {
		f.Add(s, "2")
		f.Add("1", s)
	}
	f.Fuzz(func(t *testing.T, given, gt string) {
		GradeAnswer(given, gt)
		ExtractBoxedContent(given)
		if len(given) <= MaxLen && !GradeAnswer(given, given) {
			t.Fatalf("%q does not grade equal to itself", given)
		}
	})
}
