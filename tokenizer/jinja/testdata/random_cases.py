#!/usr/bin/python3
"""Differential random testing against jinja2: generates random templates
(expressions over mixed Python types, filters, tests, str methods, and
whitespace-control-heavy block structures), renders them with jinja2 as
transformers configures it, and writes golden_random.jsonl for
TestGoldenRandom. Larger runs can be written elsewhere and checked with
JINJA_RANDOM_GOLDEN=path go test -run TestGoldenRandom ./tokenizer/jinja/

Run from the repository root:
    /usr/bin/python3 tokenizer/jinja/testdata/random_cases.py [seed] [count] [out]
"""
import json
import os
import random
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_golden import render  # noqa: E402
from feature_cases import V  # noqa: E402

random.seed(int(sys.argv[1]) if len(sys.argv) > 1 else 1)
ATOMS = ["1", "0", "-2", "3", "2.5", "0.1", "1e3", "'a'", "'Hello World'", "''", "' x '", "'a,b'", "none", "true", "false",
         "[1, 2, 3]", "[]", "['b', 'a']", "{'k': 1, 'j': 'v'}", "{}", "(1, 'x')", "xs", "words", "s", "d", "n", "f", "t",
         "empty", "uni", "nested", "people", "msgs", "x", "d.a", "d.c.z", "msgs[0]", "msgs[2].tool_calls", "people[1].name", "xs[0]", "xs[-1]"]
BIN = ["+", "-", "*", "/", "//", "%", "**", "~", "==", "!=", "<", ">=", "in", "not in", "and", "or"]
FILTERS = ["length", "string", "upper", "lower", "title", "capitalize", "trim", "first", "last", "list", "join(',')", "join",
           "reverse|list", "sort", "unique|list", "tojson", "tojson(indent=2)", "abs", "int", "float", "round", "round(1)",
           "default('D')", "default('D', true)", "items|list", "map('string')|list", "select|list", "reject|list",
           "wordcount", "replace('a', 'Z')", "indent(2)", "center(9)", "sum", "min", "max", "count", "dictsort",
           "selectattr('name')|list", "map(attribute='name')|list", "e", "safe", "batch(2)|list", "slice(2)|list", "truncate(5)"]
TESTS = ["defined", "undefined", "none", "string", "number", "integer", "float", "mapping", "iterable", "sequence",
         "odd", "even", "divisibleby 2", "eq 1", "in [1, 'a']", "true", "false", "boolean", "lower", "upper", "callable"]
METHODS = ["strip()", "upper()", "split(',')", "split()", "startswith('a')", "endswith(('d', 'x'))", "replace('l', 'L')",
           "title()", "find('o')", "count('l')", "lstrip('H ')", "rstrip()", "splitlines()", "format(1, 2)", "zfill(5)",
           "capitalize()", "isdigit()", "join(['x', 'y'])", "center(7, '*')", "partition(',')", "rsplit(',', 1)", "lower()"]

def expr(depth=0):
    r = random.random()
    if depth > 2 or r < 0.3:
        return random.choice(ATOMS)
    if r < 0.5:
        return "(%s %s %s)" % (expr(depth + 1), random.choice(BIN), expr(depth + 1))
    if r < 0.65:
        return "%s|%s" % (expr(depth + 1), random.choice(FILTERS))
    if r < 0.75:
        return "(%s is %s%s)" % (expr(depth + 1), random.choice(["", "not "]), random.choice(TESTS))
    if r < 0.85:
        return "%s.%s" % (random.choice(["s", "'a,b c'", "uni", "'Hello World'", "empty", "words[0]"]), random.choice(METHODS))
    if r < 0.9:
        return "(%s if %s else %s)" % (expr(depth + 1), expr(depth + 1), expr(depth + 1))
    if r < 0.95:
        return "%s[%s]" % (random.choice(["xs", "s", "uni", "words", "'abcdef'", "nested"]), random.choice(["1:", ":-1", "::-1", "::2", "-2:", "0", "-1", "1:3"]))
    return "'%%s|%%r|%%d' %% (%s, %s, 3)" % (expr(depth + 1), expr(depth + 1))

WS = ["", " ", "  ", "\n", "\n  ", "  \n", "\t", "\n\n", " x ", "\r\n"]
def tag(body):
    l = random.choice(["", "", "-", "+"])
    r = random.choice(["", "", "-", "+"])
    return "{%" + l + " " + body + " " + r + "%}"
def vtag(body):
    l = random.choice(["", "", "-"])
    r = random.choice(["", "", "-"])
    return "{{" + l + " " + body + " " + r + "}}"
def ws_template():
    out = []
    for _ in range(random.randint(1, 4)):
        k = random.random()
        w = lambda: random.choice(WS)
        if k < 0.3:
            out.append(w() + tag("if %s" % random.choice(["t", "not t", "xs", "x"])) + w() + vtag(random.choice(["n", "s", "'a'"])) + w() + tag("else") + w() + "E" + w() + tag("endif") + w())
        elif k < 0.55:
            out.append(w() + tag("for i in xs") + w() + vtag("i") + w() + tag("endfor") + w())
        elif k < 0.7:
            out.append(w() + "{#" + random.choice(["", "-", "+"]) + " c " + random.choice(["", "-", "+"]) + "#}" + w())
        elif k < 0.8:
            out.append(w() + tag("raw") + w() + "{{ r }}" + w() + tag("endraw") + w())
        elif k < 0.9:
            out.append(w() + tag("set v = %s" % expr(2)) + w() + vtag("v") + w())
        else:
            out.append(w() + tag("macro m(a)") + w() + vtag("a") + w() + tag("endmacro") + w() + vtag("m(1)") + w())
    return "".join(out)

def template():
    if random.random() < 0.5:
        return ws_template()
    parts = []
    for _ in range(random.randint(1, 3)):
        r = random.random()
        if r < 0.5:
            parts.append("{{ %s }}" % expr())
        elif r < 0.7:
            parts.append("{%% for i in %s %%}[{{ i }}{{ loop.index }}]{%% else %%}E{%% endfor %%}" % expr())
        elif r < 0.85:
            parts.append("{%% if %s %%}Y{%% else %%}N{%% endif %%}" % expr())
        else:
            parts.append("{%% set v = %s %%}{{ v }}" % expr())
        parts.append(random.choice(["", " ", "\n", "  \n  ", "|"]))
    return "".join(parts)

class Timeout(Exception):
    pass


def on_alarm(*_):
    raise Timeout()


signal.signal(signal.SIGALRM, on_alarm)
n = int(sys.argv[2]) if len(sys.argv) > 2 else 400
out = open(sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, "golden_random.jsonl"), "w", encoding="utf-8")
# The variables are written once, in a header record.
out.write(json.dumps({"name": "_vars", "vars": V}, ensure_ascii=False) + "\n")
for i in range(n):
    tpl = template()
    signal.alarm(2)
    try:
        res = render(tpl, json.loads(json.dumps(V)))
    except Timeout:
        continue
    except BaseException as e:
        res = {"error": {"kind": "render", "message": "%s: %s" % (type(e).__name__, e)}}
    signal.alarm(0)
    # Skip what cannot be compared: Python object addresses, jinja2's Markup
    # (|e results) in reprs, huge outputs.
    if "output" in res and ("object at 0x" in res["output"] or "Markup(" in res["output"] or len(res["output"]) > 100000):
        continue
    rec = {"name": "r%d" % i, "template": tpl}
    rec.update(res)
    out.write(json.dumps(rec, ensure_ascii=False) + "\n")
