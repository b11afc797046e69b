// Package mathgrade is mathruler's answer grader (hiyouga/MathRuler,
// mathruler/grader.py and mathruler/math_normalize.py at commit 14dadeb)
// in Go: GradeAnswer and ExtractBoxedContent, the checks behind verl's
// geo3k reward and its Geo3kTool. Normalisation follows the Python step by
// step; sympy's simplify, which the Python uses last, is replaced by an
// exact evaluation of numeric expressions (GradeAnswer says what it does
// not cover).
package mathgrade
