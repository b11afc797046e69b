#!/usr/bin/python3
"""Times Python jinja2 (configured as transformers configures it) rendering
the Qwen3 chat template on the multi_step_tools context of
../shared/golden/chat_qwen3.jsonl: the peer of BenchmarkRenderQwen3MultiStepTools.

Run from the repository root:
    /usr/bin/python3 tokenizer/jinja/testdata/bench_jinja2.py
Prints the median µs per render over several repeats.
"""
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from gen_golden import make_env  # noqa: E402

SHARED = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "shared"))


def main():
    with open(os.path.join(HERE, "templates", "qwen3.jinja"), encoding="utf-8") as f:
        template = make_env().from_string(f.read())
    ctx = None
    with open(os.path.join(SHARED, "golden", "chat_qwen3.jsonl"), encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            if rec["name"] == "multi_step_tools":
                ctx, want = rec["context"], rec["text"]
    assert template.render(**ctx) == want
    number = 2000
    wall, cpu = [], []
    for _ in range(7):
        w0, c0 = time.perf_counter(), time.process_time()
        for _ in range(number):
            template.render(**ctx)
        wall.append((time.perf_counter() - w0) / number * 1e6)
        cpu.append((time.process_time() - c0) / number * 1e6)
    print("python jinja2 %s: median %.1f µs/render wall, %.1f µs/render CPU (%d×%d renders)" % (
        __import__("jinja2").__version__, statistics.median(wall), statistics.median(cpu), len(wall), number))
    with open(os.path.join(HERE, "templates", "qwen3.jinja"), encoding="utf-8") as f:
        src = f.read()
    env = make_env()
    cpu = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(20):
            env.from_string(src)  # from_string compiles anew on every call
        cpu.append((time.process_time() - c0) / 20 * 1e6)
    print("python jinja2 compile of the Qwen3 template: median %.0f µs CPU" % statistics.median(cpu))

    # Peer of BenchmarkFromJSONToolSchema (the same 440-byte tool schema).
    schema = ('{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather for a city.", '
              '"parameters": {"type": "object", "properties": {"city": {"type": "string", "description": "City name, e.g. Paris"}, '
              '"unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}, "days": {"type": "integer", '
              '"description": "Forecast days"}, "ratio": {"type": "number", "default": 0.5}}, "required": ["city"]}}}')
    cpu = []
    for _ in range(5):
        c0 = time.process_time()
        for _ in range(20000):
            json.loads(schema)
        cpu.append((time.process_time() - c0) / 20000 * 1e6)
    print("python json.loads of the tool schema: median %.2f µs CPU" % statistics.median(cpu))


if __name__ == "__main__":
    main()
