#!/usr/bin/python3
"""Writes bench_hermes_4k.txt, the ~4 KB hermes turn with 3 calls used by
BenchmarkHermes4KB3Calls and by bench_peer.py. Run from the repo root:

    /usr/bin/python3 parser/testdata/bench_hermes_4k.py
"""
import json

para = ("The user wants the weather in three cities and a unit conversion. I will call the tools "
        "one after the other and then summarise the answers in a short table. ")
calls = [
    ("get_weather", {"city": "San Francisco", "days": 3, "units": {"temp": "F", "wind": ["mph", "knots"]},
                     "include": ["humidity", "uv_index", "sunrise", "sunset"]}),
    ("search", {"query": "北京 天气 预报 </tool_call> quoted", "top_k": 5,
                "filters": {"lang": ["zh", "en"], "since": "2026-01-01", "safe": True}}),
    ("convert_units", {"value": 72.5, "from": "F", "to": "C", "precision": 2,
                       "note": "a \"quoted\" note with \\ backslash"}),
]
text = ""
for name, args in calls:
    text += para * 7 + "\n"
    text += "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>\n"
text += para * 2
with open("parser/testdata/bench_hermes_4k.txt", "w", encoding="utf-8") as f:
    f.write(text)
