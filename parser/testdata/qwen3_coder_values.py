#!/usr/bin/python3
"""Regenerates qwen3_coder_values.jsonl: the expected JSON arguments for one
qwen3_coder parameter, computed with Python's own int(), float(),
json.loads, ast.literal_eval and json.dumps(ensure_ascii=False), following
the conversion rules that vLLM's qwen3_coder tool parser documents (see
convert in ../qwen3coder.go). Run from the repository root:

    /usr/bin/python3 parser/testdata/qwen3_coder_values.py > parser/testdata/qwen3_coder_values.jsonl

Each line: {"type": <schema "type" value, absent when "type" is omitted>,
"raw": <the parameter text>, "want": <json.dumps({"p": value})>}.
"""
import ast
import json
import sys

MISSING = object()


def convert(raw, typ):
    if raw.lower() == "null":
        return None
    t = "string" if typ is MISSING else str(typ).strip().lower()
    if t in ("string", "str", "text", "varchar", "char", "enum"):
        return raw
    if t.startswith(("int", "uint", "long", "short", "unsigned")):
        try:
            return int(raw)
        except ValueError:
            return raw
    if t.startswith(("num", "float")):
        try:
            f = float(raw)
            return f if f - int(f) != 0 else int(f)
        except (ValueError, OverflowError):
            return raw
    if t in ("boolean", "bool", "binary"):
        return raw.lower() == "true"
    if t in ("object", "array", "arr") or t.startswith(("dict", "list")):
        try:
            return json.loads(raw)
        except ValueError:
            pass
    try:
        return ast.literal_eval(raw)
    except Exception:
        return raw


CASES = [
    # integers
    ("integer", ["42", " 7 ", "+3", "-0", "1_000", "1__0", "_1", "0x10", "007", "3.0", "abc", "",
                 "123456789012345678901234567890", "-98765432109876543210"]),
    ("Integer ", ["12"]),
    ("uint64", ["5"]),
    # numbers
    ("number", ["3.5", "1e3", "1E400", "-1e400", "inf", "nan", "-0.0", "1_0.5", ".5", "5.", "1e-7",
                "0.1", "1e16", "1e15", "123456789.123", "1e22", "2.5e-5", "0.0001", "0.00001",
                "1.7976931348623157e308", "5e-324", "1e", "e5", "1.5.2", "0x1p3", "3", "-12.25"]),
    ("float", ["2.50"]),
    # booleans
    ("boolean", ["True", "false", "yes", "TRUE", ""]),
    # null for any type
    ("string", ["NULL", "Null", "null "]),
    # strings are kept
    ("string", ["  spaced  ", "line\nbreak", "quote\"s \\ back", "ctrl\x01\x1f", "ünï 北京", "\u2028sep", "<b>&amp;</b>"]),
    (MISSING, ["42", "[1]"]),
    # objects and arrays
    ("object", ['{"a": 1, "b": [1.0, 2e5, "x"], "a": 3}', "{'a': 1}", '{"a": NaN, "b": -Infinity}',
                "[1,2", "{'k': (1, 2)}", "{1: 'a', None: 2, True: 3, 1.5: 4}", '"\\u00e9\\ud83d\\ude00"',
                '{"big": 123456789012345678901234567890, "f": 1E2, "z": 0.1}', "  {}  ", "5"]),
    ("array", ["['x', \"y\"]", "[]", "(1,)", "(1)", "[True, None, False]", "[1, 'a' 'b']", "  [1]",
               "\t[1]", "[1] # comment", "[1, 2j]", "[b'x']", "{'a', 'b'}", "['\\x41\\u00e9\\n', '\\q']",
               "[0o17, 0b101, 0xff, 1_000]", "[-5, +2.5, -True]", "[1e400]", "[\"a\\\"b\"]", "[\n  1,\n  2\n]"]),
    ("dict", ['{"x": {"y": [1, {"z": null}]}}']),
    ("list[str]", ["['a']"]),
    # other types go through ast.literal_eval
    ("any", ["[1, 2]", "hello", "'quoted'", "0o17", "-5", "--5", "007", "1.5", "None", "True"]),
    (["integer", "null"], ["5", "x"]),
]


def main():
    out = sys.stdout
    for typ, raws in CASES:
        for raw in raws:
            v = convert(raw, typ)
            try:
                want = json.dumps({"p": v}, ensure_ascii=False, allow_nan=False)
            except TypeError:
                # vLLM fails the whole turn here (json.dumps of a set, bytes
                # or complex); agentrl keeps the text as a string instead.
                want = json.dumps({"p": raw}, ensure_ascii=False)
            except ValueError:
                # NaN or Infinity inside a value: vLLM writes them, which is
                # not JSON; agentrl keeps the text as a string instead.
                want = json.dumps({"p": raw}, ensure_ascii=False)
            rec = {"raw": raw, "want": want}
            if typ is not MISSING:
                rec = {"type": typ, **rec}
            out.write(json.dumps(rec, ensure_ascii=False) + "\n")


main()
