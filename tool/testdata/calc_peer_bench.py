# Peer measurement for BenchmarkCalculate: the same expression evaluated
# exactly in Python with fractions.Fraction (literals rewritten to Fraction,
# then eval with no builtins), as a Python tool would do it.
# Run: /usr/bin/python3 tool/testdata/calc_peer_bench.py
import re
import timeit
from fractions import Fraction

EXPR = "(12.5 + 3) * 4 - 7 / 2"


def calc(expr):
    src = re.sub(r"(\d+\.\d*|\d+)", lambda m: "Fraction('%s')" % m.group(1), expr)
    v = eval(src, {"__builtins__": {}, "Fraction": Fraction})
    return str(v)


assert calc(EXPR) == "117/2", calc(EXPR)
n = 20000
runs = sorted(timeit.repeat(lambda: calc(EXPR), number=n, repeat=7))
print("python Fraction calc: median %.0f ns/op, min %.0f ns/op" % (runs[3] / n * 1e9, runs[0] / n * 1e9))
