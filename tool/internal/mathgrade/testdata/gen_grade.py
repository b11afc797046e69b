"""Writes grade_golden.json: mathruler's own grade_answer and
extract_boxed_content run on the cases below.

mathruler is hiyouga/MathRuler at commit 14dadeb (mathruler/grader.py,
mathruler/math_normalize.py); it needs sympy, pylatexenc and tqdm (Debian:
python3-sympy, python3-pylatexenc, python3-tqdm). Regenerate with

    PYTHONPATH=MATHRULER_CHECKOUT python3 gen_grade.py > grade_golden.json

The cases are geo3k-style answers (numbers, decimals, fractions, roots,
pi, degrees, units, tuples, text) and the edges of each normalisation
step in grader.py and math_normalize.py.
"""

import json
import sys

from mathruler.grader import _normalize, extract_boxed_content, grade_answer
from mathruler.math_normalize import normalize_answer

COMMIT = "14dadeb"

GRADE = [
    # given, ground truth
    ("3", "3"), ("3.0", "3"), ("3.00", "3"), ("03", "3"), ("4", "3"), (" 3 ", "3"),
    ("52.3", "52.3"), ("52.30", "52.3"), ("52.2", "52.3"), ("52", "52.3"),
    ("1,000", "1000"), ("1,000,000", "1000000"), ("1,00", "100"),
    ("12 cm", "12"), ("12 centimeters", "12"), ("60 degrees", "60"), ("60^\\circ", "60"),
    ("60^{\\circ}", "60"), ("5 feet", "5"), ("3 inches", "3"), ("2 hours", "2"),
    ("\\$5", "5"), ("$5$", "5"), ("50\\%", "50"), ("50%", "50"), ("x = 3", "3"), ("x=3", "3"),
    ("\\text{3}", "3"), ("\\text{ cm}", "3"), ("3\\text{ cm}", "3"),
    ("\\frac{1}{2}", "0.5"), ("0.5", "\\frac{1}{2}"), ("1/2", "\\frac{1}{2}"), ("\\frac12", "\\frac{1}{2}"),
    ("\\dfrac{1}{2}", "\\frac{1}{2}"), ("\\tfrac{1}{2}", "1/2"), ("2/4", "1/2"), ("2/4", "\\frac{1}{2}"),
    ("\\frac{2}{4}", "\\frac{1}{2}"), (".5", "0.5"), ("0.50", "\\frac{1}{2}"), ("0.25", "\\frac{1}{4}"),
    ("\\frac{1}{4}", "0.25"), ("1/3", "0.333"), ("0.333", "\\frac{1}{3}"), ("\\frac{10}{3}", "3.333"),
    ("\\frac{7}{2}", "3.5"), ("3.5", "\\frac{7}{2}"), ("7/2", "3.5"), ("3 \\frac{1}{2}", "\\frac{7}{2}"),
    ("3 1/2", "3.5"), ("-\\frac{1}{2}", "-0.5"), ("- 2", "-2"), ("-2", "-2.0"),
    ("\\sqrt{2}", "\\sqrt2"), ("\\sqrt{18}", "3\\sqrt{2}"), ("3\\sqrt{2}", "\\sqrt{18}"),
    ("3 \\sqrt 2", "3\\sqrt{2}"), ("\\frac{\\sqrt{3}}{2}", "\\frac{\\sqrt3}{2}"),
    ("\\frac{\\sqrt{3}}{2}", "\\frac{1}{2}\\sqrt{3}"), ("\\sqrt{3}/2", "\\frac{\\sqrt{3}}{2}"),
    ("2\\sqrt{3}", "\\sqrt{12}"), ("4\\sqrt{3}", "6.93"), ("6.93", "4\\sqrt{3}"), ("\\sqrt{12}", "2\\sqrt{3}"),
    ("\\frac{2}{\\sqrt{2}}", "\\sqrt{2}"), ("\\sqrt{8}", "2\\sqrt{2}"), ("\\sqrt{2}\\cdot\\sqrt{2}", "2"),
    ("\\sqrt{4}", "2"), ("2", "\\sqrt{4}"), ("\\sqrt{2}^2", "2"), ("(\\sqrt{2})^2", "2"),
    ("5\\sqrt{2}", "5 \\sqrt { 2 }"), ("10\\sqrt{3}", "10 \\sqrt 3"), ("\\sqrt[3]{8}", "2"),
    ("2\\pi", "2 \\pi"), ("\\pi", "3.14"), ("3.14", "\\pi"), ("4\\pi", "\\pi \\cdot 4"), ("\\pi r^2", "\\pi r^2"),
    ("16\\pi", "16 \\pi"), ("\\frac{\\pi}{2}", "\\frac{1}{2}\\pi"), ("\\frac{3\\pi}{2}", "1.5\\pi"),
    ("2\\times 3", "6"), ("2 \\times 3", "6.0"), ("2\\cdot3", "6"), ("6", "2\\cdot 3"),
    ("2^3", "8"), ("8", "2^3"), ("2^{3}", "8"), ("2^10", "1024"), ("\\frac{1}{2}^2", "\\frac{1}{4}"),
    ("(1,2)", "(1,2)"), ("(1, 2)", "(1,2)"), ("(2,1)", "(1,2)"), ("[1,2]", "(1,2)"), ("(1,2,3)", "(1,2)"),
    ("(0.5,2)", "(\\frac{1}{2},2)"), ("\\left(1,2\\right)", "(1,2)"), ("1,2", "1,2"), ("1, 2", "2, 1"),
    ("3 or 4", "3, 4"), ("3 and 4", "3,4"),
    ("x", "x"), ("X", "x"), ("x+1", "1+x"), ("2x", "x2"), ("A", "A"), ("B", "A"), ("\\text{A}", "A"),
    ("yes", "Yes"), ("\\text{yes}", "yes"), ("", "3"), ("3", ""), ("None", "3"), ("\\infty", "\\infty"),
    ("1.5", "3/2"), ("3/2", "1.5"), ("1.50", "3/2"), ("15", "15.0000001"), ("15", "15.00000001"),
    ("0.1+0.2", "0.3"), ("1e3", "1000"), ("1000", "1e3"), ("2.5 million", "2500000"),
    ("\\frac{1+2}{3}", "1"), ("\\frac{6}{2+1}", "2"), ("2(3)", "6"), ("(2)(3)", "6"), ("2*3", "6"),
    ("1/0", "1"), ("\\frac{1}{0}", "1"), ("0/0", "0"), ("12.5", "25/2"), ("25/2", "12.5"),
    ("-3", "3"), ("+3", "3"), ("3-", "3"), ("((3))", "3"), ("(3)", "3"), ("{3}", "3"), ("\\{3\\}", "3"),
    ("4\\sqrt{2}+1", "1+4\\sqrt{2}"), ("\\sqrt{2}+\\sqrt{3}", "\\sqrt{3}+\\sqrt{2}"),
    ("\\sqrt{5+4}", "3"), ("\\sqrt{-1}", "\\sqrt{-1}"), ("\\sqrt{2}", "1.414"), ("1.414", "\\sqrt{2}"),
    ("\\frac{9}{\\sqrt{3}}", "3\\sqrt{3}"), ("\\frac{\\sqrt{6}}{3}", "\\sqrt{\\frac{2}{3}}"),
    ("\\frac{24}{5}", "4.8"), ("4.8", "\\frac{24}{5}"), ("\\frac{48}{10}", "4.8"), ("2.4\\sqrt{3}", "\\frac{12\\sqrt{3}}{5}"),
    ("52", "52.3"), ("52.3 cm", "52.3"), ("\\boxed{52.3}", "52.3"), ("it's 52.3", "52.3"),
    ("$52.3$", "52.3"), ("\\sqrt{48}", "4\\sqrt{3}"), ("6.93", "4\\sqrt{3}"), ("\\sqrt{12}", "2\\sqrt{3}"),
    ("180-60", "120"), ("120", "180-60"), ("90^\\circ-30^\\circ", "60"),
]

BOXED = [
    "The answer is \\boxed{3}.", "\\boxed{\\frac{1}{2}}", "no box", "\\boxed{1} then \\boxed{2}",
    "\\boxed{ 5 }", "\\boxed{{nested}{x}}", "\\boxed{unclosed", "\\boxed{}", "\\boxed {3}",
    "<think>x</think> \\boxed{\\sqrt{3}} end", "}\\boxed{a}}}",
]

# Both normalisations of every string above, and edges of their steps.
NORMALIZE = sorted({x for pair in GRADE for x in pair} | {
    "\\frac1", "\\frac", "\\sqrt", "a\\text{ b}\\text{ c}", "k = 5", "abc = 5", "a=b=c", "\\!3",
    "\\left[1,2\\right]", "3.0e2", "1_000", " 7 ", "\\text{ 7}", "x^{2}", "\\{1\\}", "5 \\sqrt 2",
    "1,234,567.5", "12,34", "{5}", "\\frac{a}{b", "\\pi r", "2\\pi 3", "inf", "nan", "-0",
})

src_n = f"hiyouga/MathRuler mathruler/math_normalize.py@{COMMIT} normalize_answer; mathruler/grader.py@{COMMIT} _normalize"
src_g = f"hiyouga/MathRuler mathruler/grader.py@{COMMIT} grade_answer"
src_b = f"hiyouga/MathRuler mathruler/grader.py@{COMMIT} extract_boxed_content"
out = {
    "grade": [{"source": src_g, "given": g, "ground_truth": t, "want": grade_answer(g, t)} for g, t in GRADE],
    "normalize": [{"source": src_n, "in": x, "mathd": normalize_answer(x), "grader": _normalize(x)} for x in NORMALIZE],
    "boxed": [{"source": src_b, "text": s, "want": extract_boxed_content(s)} for s in BOXED],
}
json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
sys.stdout.write("\n")
