#!/usr/bin/python3
"""Regenerates roundtrip.jsonl: assistant tool-call turns rendered through
each model's own chat template, with the calls, content and reasoning that
parsing them must give back. Run from the repository root:

    /usr/bin/python3 parser/testdata/roundtrip.py > parser/testdata/roundtrip.jsonl

Templates: see templates/README.md. Jinja is set up as Hugging Face
transformers does for apply_chat_template (trim_blocks, lstrip_blocks,
loopcontrols, tojson = json.dumps(ensure_ascii=False) keeping key order,
raise_exception, strftime_now).

Each record also keeps the conversation ("messages") and the assistant
header, so that the Go test can render the same turn with the tokenizer
package's Jinja engine. Each turn is cut out of the full rendering: the rendering of the
conversation without its last (assistant) message is a prefix of it, and
what follows, minus the assistant header, is the text the model would have
sampled (with its end-of-turn token).
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(msg):
    raise jinja2.exceptions.TemplateError(msg)


def load(src):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda f: datetime.datetime(2026, 1, 2).strftime(f)
    return env.from_string(src)


def shared_template(name):
    with open(f"../shared/testdata/tokenizers/{name}/tokenizer_config.json", encoding="utf-8") as f:
        return json.load(f)["chat_template"]


def local_template(name):
    with open(f"parser/testdata/templates/{name}", encoding="utf-8") as f:
        return f.read()


def dumps(args):
    return json.dumps(args, ensure_ascii=False)


def call(name, args):
    return {"type": "function", "function": {"name": name, "arguments": args}}


USER = {"role": "user", "content": "What's the weather in Paris and in 北京?"}
A = {"city": "Paris"}
B = {"city": "北京", "days": 3, "units": {"temp": "C", "wind": ["km/h", "m/s"]}}
C = {"code": "print(\"</tool_call>\")\nx = {'a': 1}  # \\n stays", "flag": True, "ratio": 0.25, "tags": ["a", "b"]}
D = {}

CODER_TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
        "type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "units": {"type": "object"}}}}},
    {"type": "function", "function": {"name": "run", "description": "Run code.", "parameters": {
        "type": "object", "properties": {
            "code": {"type": "string"}, "flag": {"type": "boolean"},
            "ratio": {"type": "number"}, "tags": {"type": "array"}}}}},
    {"type": "function", "function": {"name": "now", "description": "Time.", "parameters": {
        "type": "object", "properties": {}}}},
]


def render(tmpl, messages, tools, extra):
    kw = dict(messages=messages, add_generation_prompt=False, bos_token="", eos_token="")
    if tools is not None:
        kw["tools"] = tools
    kw.update(extra)
    return tmpl.render(**kw)


LAST = {}


def turn(tmpl, messages, header, tools=None, extra=None):
    LAST.update(messages=messages, header=header)
    extra = extra or {}
    full = render(tmpl, messages, tools, extra)
    prefix = render(tmpl, messages[:-1], tools, extra)
    assert full.startswith(prefix), (prefix[-80:], full[-200:])
    rest = full[len(prefix):]
    assert rest.startswith(header), (header, rest[:80])
    return rest[len(header):]


DSML = "｜DSML｜"
DS_EOS = "<｜end▁of▁sentence｜>"


def ds4_turn(content, reasoning, calls, block, invoke, param):
    """The encoder's assistant message: "{reasoning}</think>{content}" then,
    with calls, "\n\n" and the block, then the end-of-sentence token."""
    def to_json(v):
        return json.dumps(v, ensure_ascii=False)

    def arguments(args):
        return "\n".join(f'<{DSML}{param} name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
                         f'{v if isinstance(v, str) else to_json(v)}</{DSML}{param}>' for k, v in args.items())

    tc = ""
    if calls:
        invokes = [f'<{DSML}{invoke} name="{n}">\n{arguments(a)}\n</{DSML}{invoke}>' for n, a in calls]
        tc = "\n\n" + f"<{DSML}{block}>\n" + "\n".join(invokes) + f"\n</{DSML}{block}>"
    return reasoning + "</think>" + content + tc + DS_EOS


def main():
    out = []

    def emit(fmt, case, text, calls, content="", reasoning="", think=False, tools=None):
        rec = {"format": fmt, "case": case, "think_aware": think, "text": text, "content": content,
               "reasoning": reasoning, "calls": [{"name": n, "arguments": a} for n, a in calls],
               "messages": LAST["messages"], "header": LAST["header"]}
        if tools is not None:
            rec["tools"] = tools
        out.append(rec)

    # hermes: Qwen3
    q = load(shared_template("qwen3"))
    h = "<|im_start|>assistant\n"
    for case, msg, calls in [
        ("one call", {"role": "assistant", "content": "", "tool_calls": [call("get_weather", A)]}, [("get_weather", A)]),
        ("content and two calls", {"role": "assistant", "content": "Let me check both.", "tool_calls": [call("get_weather", A), call("get_weather", B)]}, [("get_weather", A), ("get_weather", B)]),
        ("tricky strings", {"role": "assistant", "content": "", "tool_calls": [call("run", C)]}, [("run", C)]),
        ("no arguments", {"role": "assistant", "content": "", "tool_calls": [call("now", D)]}, [("now", D)]),
        ("reasoning", {"role": "assistant", "content": "Sure.", "reasoning_content": "Need <tool_call> weather.", "tool_calls": [call("get_weather", B)]}, [("get_weather", B)]),
    ]:
        text = turn(q, [USER, msg], h)
        emit("hermes", case, text, [(n, dumps(a)) for n, a in calls], content=msg["content"],
             reasoning=msg.get("reasoning_content", ""), think=True)
    # the last assistant turn after a tool result
    msgs = [USER, {"role": "assistant", "content": "", "tool_calls": [call("get_weather", A)]},
            {"role": "tool", "content": "sunny"},
            {"role": "assistant", "content": "", "tool_calls": [call("get_weather", B)]}]
    emit("hermes", "after a tool result", turn(q, msgs, h), [("get_weather", dumps(B))], think=True)

    # llama3_json: the shared Llama-3.1 template has no tool-call branch,
    # so vLLM's Llama-3.1 JSON tool template is used (one call per message)
    ll = load(local_template("llama3_json_calls.jinja"))
    h = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    for case, name, args in [("one call", "get_weather", B), ("tricky strings", "run", C), ("no arguments", "now", D)]:
        text = turn(ll, [USER, {"role": "assistant", "content": "", "tool_calls": [call(name, args)]}], h)
        emit("llama3_json", case, text, [(name, dumps(args))])

    # qwen3_coder
    qc = load(local_template("qwen3_coder.jinja"))
    h = "<|im_start|>assistant\n"
    for case, msg, calls in [
        ("one call", {"role": "assistant", "content": "", "tool_calls": [call("get_weather", B)]}, [("get_weather", B)]),
        ("content and two calls", {"role": "assistant", "content": "Checking.", "tool_calls": [call("get_weather", A), call("run", C)]}, [("get_weather", A), ("run", C)]),
        ("no arguments", {"role": "assistant", "content": "", "tool_calls": [call("now", D)]}, [("now", D)]),
    ]:
        text = turn(qc, [USER, msg], h, tools=CODER_TOOLS)
        emit("qwen3_coder", case, text, [(n, dumps(a)) for n, a in calls], content=msg["content"], tools=CODER_TOOLS)

    # deepseek_v3: DeepSeek-R1 template (arguments are strings there)
    ds = load(local_template("deepseek_r1.jinja"))
    h = "<｜Assistant｜>"
    pretty = json.dumps(B, ensure_ascii=False, indent=2)
    for case, content, calls in [
        ("one call", None, [("get_weather", dumps(A))]),
        ("content and two calls", "Let me check.", [("get_weather", dumps(A)), ("get_weather", pretty)]),
        ("tricky strings", None, [("run", dumps(C))]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        text = turn(ds, [USER, msg], h)
        emit("deepseek_v3", case, text, calls, content=content or "")

    # gpt_oss (one call per message; content goes to the analysis channel)
    go = load(local_template("gpt_oss_messages.jinja"))
    h = "<|start|>assistant"
    for case, content, name, args in [("one call", "", "get_weather", B), ("analysis then call", "Need the weather.", "get_weather", A),
                                      ("tricky strings", "", "run", C)]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(name, args)]}
        text = turn(go, [USER, msg], h)
        emit("gpt_oss", case, text, [(name, dumps(args))], reasoning=content)

    # deepseek_v31: DeepSeek-V3.1's template (arguments are strings there)
    d31 = load(local_template("deepseek_v31.jinja"))
    h = "<｜Assistant｜></think>"
    for case, content, calls in [
        ("one call", None, [("get_weather", dumps(A))]),
        ("content and two calls", "Let me check.", [("get_weather", dumps(A)), ("get_weather", pretty)]),
        ("tricky strings", None, [("run", dumps(C))]),
        ("no arguments", None, [("now", dumps(D))]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        text = turn(d31, [USER, msg], h)
        emit("deepseek_v31", case, text, calls, content=content or "")

    # kimi_k2: Kimi-K2-Thinking's template (the call id carries the name)
    kk = load(local_template("kimi_k2_thinking.jinja"))
    h = "<|im_assistant|>assistant<|im_middle|>"
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", A)]),
        ("content, reasoning and two calls", "Let me check both.", "Two cities.", [("get_weather", A), ("get_weather", B)]),
        ("tricky strings", "", "", [("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        tcs = []
        for i, (n, a) in enumerate(calls):
            tc = call(n, a)
            tc["id"] = f"functions.{n}:{i}"
            tcs.append(tc)
        msg = {"role": "assistant", "content": content, "reasoning_content": rc, "tool_calls": tcs}
        text = turn(kk, [USER, msg], h)
        emit("kimi_k2", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True)

    # glm45: GLM-4.5's template (values as text, non-strings as JSON)
    gl = load(local_template("glm45.jinja"))
    h = "<|assistant|>"
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        if rc:
            msg["reasoning_content"] = rc
        text = turn(gl, [USER, msg], h, tools=CODER_TOOLS)
        emit("glm45", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True, tools=CODER_TOOLS)

    # pythonic: vLLM's Llama-3.2 pythonic template. It prints each value
    # with "%s" (Python str()), which leaves top-level strings unquoted, so
    # the goldens' top-level values are not strings.
    py = load(local_template("llama3.2_pythonic.jinja"))
    h = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    P1 = {"days": 3, "units": {"temp": "C", "wind": ["km/h", "m/s"]}}
    P2 = {"flag": True, "ratio": 0.25, "tags": ["a", "</tool_call>", "it's"], "limit": None}
    for case, calls in [("one call", [("get_weather", P1)]), ("two calls", [("get_weather", P1), ("run", P2)]),
                        ("no arguments", [("now", D)])]:
        msg = {"role": "assistant", "content": "", "tool_calls": [call(n, a) for n, a in calls]}
        text = turn(py, [USER, msg], h)
        emit("pythonic", case, text, [(n, dumps(a)) for n, a in calls])

    # mistral: vLLM's parallel Mistral template ([TOOL_CALLS] [...] with ids)
    mi = load(local_template("mistral_parallel.jinja"))
    for case, calls in [("one call", [("get_weather", A)]), ("two calls", [("get_weather", B), ("run", C)]),
                        ("no arguments", [("now", D)])]:
        tcs = []
        for i, (n, a) in enumerate(calls):
            tc = call(n, a)
            tc["id"] = f"call{i}abcdef"
            tcs.append(tc)
        text = turn(mi, [USER, {"role": "assistant", "content": "", "tool_calls": tcs}], "", extra={"eos_token": "</s>"})
        emit("mistral", case, text, [(n, dumps(a)) for n, a in calls])

    # deepseek_v32: llama.cpp's template for DeepSeek-V3.2's DSML encoding
    d32 = load(local_template("deepseek_v32.jinja"))
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        msg = {"role": "assistant", "content": content, "reasoning_content": rc, "tool_calls": [call(n, a) for n, a in calls]}
        text = turn(d32, [USER, msg], "")
        emit("deepseek_v32", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True)

    # minimax_m2: MiniMax-M2's template with Unsloth's fixes, as llama.cpp
    # keeps it (values as text, non-strings as JSON; ends turns with [e~[)
    mm = load(local_template("minimax_m2.jinja"))
    h = "]~b]ai\n"
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        if rc:
            msg["reasoning_content"] = rc
        text = turn(mm, [USER, msg], h, tools=CODER_TOOLS)
        emit("minimax_m2", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True, tools=CODER_TOOLS)

    # seed_oss: ByteDance Seed-OSS's template as llama.cpp keeps it (values
    # written with Python's str(), so objects as Python reprs; reasoning in
    # <seed:think>)
    so = load(local_template("seed_oss.jinja"))
    h = "<seed:bos>assistant"
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        if rc:
            msg["reasoning_content"] = rc
        text = turn(so, [USER, msg], h, tools=CODER_TOOLS)
        emit("seed_oss", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True, tools=CODER_TOOLS)

    # gemma4: Google Gemma 4's template (google/gemma-4-31B-it) as llama.cpp
    # keeps it. Arguments are written key-sorted (dictsort), strings in
    # <|"|>, other values with Python's str() (None as None), reasoning in
    # <|channel>thought\n…<channel|> before the calls and content after them.
    g4 = load(local_template("gemma4.jinja"))
    h = "<|turn>model\n"

    def sorted_deep(v):
        if isinstance(v, dict):
            return {k: sorted_deep(v[k]) for k in sorted(v)}
        if isinstance(v, list):
            return [sorted_deep(x) for x in v]
        return v

    E = {"n": None, "items": [{"b": 1, "a": "x"}], "neg": -2, "big": 12345678901234567890}
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
        ("null, nested list of objects, big int", "", "", [("run", E)]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        if rc:
            msg["reasoning_content"] = rc
        text = turn(g4, [USER, msg], h, tools=CODER_TOOLS)
        emit("gemma4", case, text, [(n, dumps(sorted_deep(a))) for n, a in calls], content=content, reasoning=rc,
             think=True, tools=CODER_TOOLS)

    # kimi_k3: Kimi-K3's template as llama.cpp keeps it (XTML channels;
    # string arguments raw, others tojson; thinking on by default, so the
    # generation prompt opens the think channel)
    k3 = load(local_template("kimi_k3.jinja"))
    h = '<|open|>message role="assistant"<|sep|><|open|>think<|sep|>'
    for case, content, rc, calls in [
        ("one call", "", "", [("get_weather", B)]),
        ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
        ("no arguments", "", "", [("now", D)]),
    ]:
        msg = {"role": "assistant", "content": content, "tool_calls": [call(n, a) for n, a in calls]}
        if rc:
            msg["reasoning_content"] = rc
        text = turn(k3, [USER, msg], h, tools=CODER_TOOLS)
        emit("kimi_k3", case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True, tools=CODER_TOOLS)

    # deepseek_v4, deepseek_v41: DeepSeek publishes these chat formats as a
    # Python encoder, not a Jinja template. ds4_turn transcribes the
    # assistant branch of the encoder's render_message (thinking mode, the
    # turn after the last user message), as vLLM vendors it:
    # vllm/tokenizers/deepseek_v4_encoding.py at
    # 591f7b5eab1ab5be7e9a893926ebaa486974fea6 and
    # vllm/tokenizers/deepseek_v41_encoding.py at
    # 6394ab4d1ab21fad703c6f9163612b5c7f9a2512. The records say "encoder"
    # so that the Go template test knows there is no template to render.
    for fmt, block, invoke, param in [("deepseek_v4", "tool_calls", "invoke", "parameter"),
                                      ("deepseek_v41", " calls", " invoke", " parameter")]:
        for case, content, rc, calls in [
            ("one call", "", "", [("get_weather", B)]),
            ("content, reasoning and two calls", "Let me check.", "Two cities.", [("get_weather", A), ("run", C)]),
            ("no arguments", "", "", [("now", D)]),
        ]:
            text = ds4_turn(content, rc, calls, block, invoke, param)
            LAST.update(messages=[USER, {"role": "assistant", "content": content, "reasoning_content": rc,
                                         "tool_calls": [call(n, a) for n, a in calls]}], header="")
            emit(fmt, case, text, [(n, dumps(a)) for n, a in calls], content=content, reasoning=rc, think=True)
            out[-1]["encoder"] = fmt + "_encoding.py"

    for rec in out:
        sys.stdout.write(json.dumps(rec, ensure_ascii=False) + "\n")


main()
