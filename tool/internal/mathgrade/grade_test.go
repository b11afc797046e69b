package mathgrade

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type golden struct {
	Grade []struct {
		Source      string `json:"source"`
		Given       string `json:"given"`
		GroundTruth string `json:"ground_truth"`
		Want        bool   `json:"want"`
	} `json:"grade"`
	Boxed []struct {
		Source string `json:"source"`
		Text   string `json:"text"`
		Want   string `json:"want"`
	} `json:"boxed"`
	Normalize []struct {
		Source string  `json:"source"`
		In     string  `json:"in"`
		Mathd  string  `json:"mathd"`
		Grader *string `json:"grader"`
	} `json:"normalize"`
}

func loadGolden(t testing.TB) golden {
	t.Helper()
	b, err := os.ReadFile("testdata/grade_golden.json")
	require.NoError(t, err)
	var g golden
	require.NoError(t, json.Unmarshal(b, &g))
	require.NotEmpty(t, g.Grade)
	return g
}

// notCovered are the golden cases where sympy proves an equality that
// GradeAnswer's evaluation does not cover (see its doc comment): symbolic
// equivalence, and a decimal coefficient cancelling an exact irrational
// one. GradeAnswer says false there; every other case must agree.
var notCovered = map[[2]string]bool{
	{"x+1", "1+x"}:                          true,
	{"2x", "x2"}:                            true,
	{`\frac{3\pi}{2}`, `1.5\pi`}:            true,
	{`2.4\sqrt{3}`, `\frac{12\sqrt{3}}{5}`}: true,
}

// TestGradeAnswerGolden checks GradeAnswer against mathruler's own
// grade_answer on every case of gen_grade.py.
func TestGradeAnswerGolden(t *testing.T) {
	g := loadGolden(t)
	seen := 0
	for _, c := range g.Grade {
		got := GradeAnswer(c.Given, c.GroundTruth)
		if notCovered[[2]string{c.Given, c.GroundTruth}] {
			seen++
			assert.True(t, c.Want, "%s: %q %q is listed as not covered but sympy says false", c.Source, c.Given, c.GroundTruth)
			assert.False(t, got, "%q %q: now covered, drop it from notCovered", c.Given, c.GroundTruth)
			continue
		}
		assert.Equal(t, c.Want, got, "%s: grade_answer(%q, %q)", c.Source, c.Given, c.GroundTruth)
	}
	assert.Equal(t, len(notCovered), seen)
}

// TestExtractBoxedContentGolden checks ExtractBoxedContent against
// mathruler's extract_boxed_content.
func TestExtractBoxedContentGolden(t *testing.T) {
	g := loadGolden(t)
	require.NotEmpty(t, g.Boxed)
	for _, c := range g.Boxed {
		assert.Equal(t, c.Want, ExtractBoxedContent(c.Text), "%s: %q", c.Source, c.Text)
	}
}

// TestNormalizeGolden checks both normalisations step for step against
// mathruler's normalize_answer and _normalize on every golden string.
// Where _normalize's LaTeX is outside latexToText's subset, normalize
// reports it (!ok) rather than guessing; those inputs are listed.
func TestNormalizeGolden(t *testing.T) {
	g := loadGolden(t)
	require.NotEmpty(t, g.Normalize)
	declined := map[string]bool{}
	for _, c := range g.Normalize {
		assert.Equal(t, c.Mathd, normalizeAnswer(c.In), "%s: normalize_answer(%q)", c.Source, c.In)
		require.NotNil(t, c.Grader, c.In)
		got, ok := normalize(c.In)
		if !ok {
			declined[c.In] = true
			continue
		}
		assert.Equal(t, *c.Grader, got, "%s: _normalize(%q)", c.Source, c.In)
	}
	assert.Equal(t, map[string]bool{`\frac1`: true, `\frac`: true, `\sqrt`: true}, declined)
}
