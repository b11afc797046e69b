#!/usr/bin/python3
"""Peer measurement for BenchmarkHermes4KB3Calls: the approach of verl's
and vLLM's hermes parsers (one non-greedy DOTALL regex over the turn, then
json.loads of each block and json.dumps of its arguments), written here
from their description, timed with timeit on the same input. Run from the
repo root:

    /usr/bin/python3 parser/testdata/bench_peer.py          # timeit, wall clock
    /usr/bin/time -f "%U %S" /usr/bin/python3 parser/testdata/bench_peer.py 40000
                                                        # N runs, for CPU time

Note the regex ends a block at the first "</tool_call>" even inside a JSON
string, so on this input the second call fails to parse (as it would in
verl, where it is then dropped); the timing still covers all three blocks.
"""
import json
import re
import sys
import timeit

text = open("parser/testdata/bench_hermes_4k.txt", encoding="utf-8").read()
pattern = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)


def parse():
    calls, errors = [], 0
    for block in pattern.findall(text):
        try:
            obj = json.loads(block.strip())
            calls.append((obj["name"], json.dumps(obj["arguments"], ensure_ascii=False)))
        except Exception:
            errors += 1
    content = pattern.sub("", text).strip()
    return content, calls, errors


if len(sys.argv) > 1:
    for _ in range(int(sys.argv[1])):
        parse()
    sys.exit(0)

content, calls, errors = parse()
n = 20000
runs = timeit.repeat(parse, number=n, repeat=5)
runs.sort()
print(f"python hermes regex+json: {len(text.encode())} bytes, {len(calls)} calls ok, {errors} failed; "
      f"median {runs[2] / n * 1e9:.0f} ns/op (min {runs[0] / n * 1e9:.0f})")
