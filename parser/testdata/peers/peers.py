#!/usr/bin/python3
"""Regenerates the *.jsonl files here: the peers' own tool-parser test cases
(vLLM, SGLang, verl), ported as data. Run from the repository root:

    /usr/bin/python3 parser/testdata/peers/peers.py

Each case is one input turn and what the peer's test asserts about it,
restated as what agentrl's parser must return: the calls (name and
arguments as a JSON value, compared as values; "arguments_exact" when the
peer's test pins the exact text), the content (null: the test asserts
nothing about it), the number of errors, and where agentrl deliberately
differs from the peer, "deliberate" says how and why (the expectation is
then agentrl's documented behaviour). "source" is repo:path:test and
"commit" the peer's commit the case was read at. The cases are the peers'
test inputs; only their Python literals are copied here.

Content is compared as agentrl documents it: the text outside calls,
trimmed, "" when there is none (a peer's None or whitespace-only content
is "").
"""
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

VLLM = "vllm-project/vllm"
SGL = "sgl-project/sglang"
VERL = "volcengine/verl"

COMMITS = {
    (VLLM, "tests/tool_parsers/test_hermes_tool_parser.py"): "0eb73d6a09be117cdd0d4da4d6239321001c0d0c",
    (VLLM, "tests/tool_parsers/test_llama3_json_tool_parser.py"): "1e499e36c5828a75c6ca8b76631d264be1187005",
    (VLLM, "tests/tool_parsers/test_qwen3coder_tool_parser.py"): "c8e462c487ef33d25414e838b308e6f76bb01286",
    (VLLM, "tests/tool_parsers/test_qwen3_xml_coder_shared.py"): "00d0a333ba9b8e40eb35fc0b54b4ae96114f30b3",
    (VLLM, "tests/tool_parsers/test_openai_tool_parser.py"): "ff583b3c92c19db2692a77174b104068526b6e07",
    (SGL, "test/srt/test_function_call_parser.py"): "03400a9e4d955eff2606cfe621c83a710c16cc97",
    (VERL, "tests/experimental/agent_loop/test_gpt_oss_tool_parser.py"): "b178a3cd56f58b2d502255daba591e92833930a7",
    (VLLM, "tests/tool_parsers/test_deepseekv31_tool_parser.py"): "42fa4c096d406754b7e5c6d93835fe390487c8af",
    (VLLM, "tests/tool_parsers/test_deepseekv3_tool_parser.py"): "0f17ee061e413bf8ab7927f926f69cdff24dc63e",
    (VLLM, "tests/tool_parsers/test_kimi_k2_tool_parser.py"): "42fa4c096d406754b7e5c6d93835fe390487c8af",
    (VLLM, "tests/tool_parsers/test_pythonic_tool_parser.py"): "dfa58d2b276954af58c069ebad06d811318e468b",
    (VLLM, "tests/tool_parsers/test_mistral_tool_parser.py"): "ff583b3c92c19db2692a77174b104068526b6e07",
    (SGL, "test/registered/function_call/test_deepseekv31_detector.py"): "9d9a7949802df64c350d211f8d0b32c15ffc8a07",
}

FILES = {}


def tool(name, props=None, top=None):
    params = top if top is not None else {"type": "object", "properties": props or {}}
    return {"type": "function", "function": {"name": name, "parameters": params}}


def case(out, fmt, repo, path, test, text, calls=(), content=None, errors=0, tools=None,
         deliberate=None, arguments_exact=None, think_aware=False, content_contains=None):
    rec = {
        "format": fmt,
        "source": f"{repo}:{path}:{test}",
        "commit": COMMITS[(repo, path)],
        "text": text,
        "calls": [{"name": n, "arguments": a} for n, a in calls],
        "content": content,
        "errors": errors,
    }
    if tools is not None:
        rec["tools"] = tools
    if deliberate:
        rec["deliberate"] = deliberate
    if arguments_exact is not None:
        rec["arguments_exact"] = arguments_exact
    if think_aware:
        rec["think_aware"] = True
    if content_contains is not None:
        rec["content_contains"] = content_contains
    FILES.setdefault(out, []).append(rec)


def write():
    for out, recs in FILES.items():
        with open(os.path.join(HERE, out), "w", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- vLLM hermes
P = "tests/tool_parsers/test_hermes_tool_parser.py"
H = "vllm_hermes.jsonl"


def vh(test, text, **kw):
    case(H, "hermes", VLLM, P, test, text, **kw)


vh("test_hermes_parser_streaming_just_forward_text",
   "This is some prior text that has nothing to do with tool calling.",
   content="This is some prior text that has nothing to do with tool calling.")
vh("test_hermes_parser_streaming_failure_case_bug_19056",
   '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>',
   calls=[("final_answer", {"trigger": True})], arguments_exact=['{"trigger": true}'], content="")
vh("test_hermes_parser_streaming",
   '<tool_call>{"name": "get_current_temperature","arguments": {"location":"San Francisco, California, United States", "unit": "celsius"}}</tool_call>',
   calls=[("get_current_temperature", {"location": "San Francisco, California, United States", "unit": "celsius"})])
vh("test_hermes_streaming_tool_call_with_stream_interval",
   '<tool_call>{"name": "get_current_temperature", "arguments": {"location": "San Francisco", "unit": "celsius"}}</tool_call>',
   calls=[("get_current_temperature", {"location": "San Francisco", "unit": "celsius"})])
vh("test_hermes_streaming_content_then_tool_call_with_stream_interval",
   'Sure, let me check the weather.<tool_call>{"name": "get_weather", "arguments": {"city": "NYC"}}</tool_call>',
   calls=[("get_weather", {"city": "NYC"})], content="Sure, let me check the weather.")
vh("test_hermes_streaming_multiple_tool_calls_with_stream_interval",
   '<tool_call>{"name": "search", "arguments": {"q": "cats"}}</tool_call><tool_call>{"name": "search", "arguments": {"q": "dogs"}}</tool_call>',
   calls=[("search", {"q": "cats"}), ("search", {"q": "dogs"})])
vh("test_hermes_streaming_boolean_args_with_stream_interval",
   '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>',
   calls=[("final_answer", {"trigger": True})])
vh("test_hermes_streaming_just_forward_text_with_stream_interval",
   "This is plain text with no tool calling involved.",
   content="This is plain text with no tool calling involved.")
vh("test_hermes_parser_non_streaming_no_tool_call", "This is not a tool call.",
   content="This is not a tool call.")
vh("test_hermes_parser_non_streaming_tool_call_between_tags",
   '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}\n</tool_call>',
   calls=[("final_answer", {"trigger": True})], arguments_exact=['{"trigger": true}'])
vh("test_hermes_parser_non_streaming_tool_call_until_eos",
   '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}}',
   calls=[("final_answer", {"trigger": True})], arguments_exact=['{"trigger": true}'])
vh("test_hermes_parser_non_streaming_tool_call_invalid_json",
   '<tool_call>\n{"name": "final_answer", "arguments": {"trigger": true}',
   errors=1, content="",
   deliberate="vLLM returns no call and says nothing; agentrl reports the unclosed, incomplete block as one error for the model to fix")
vh("test_hermes_parser_non_streaming_serialized_arguments",
   '<tool_call>\n{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}\n</tool_call>',
   calls=[("get_db_config", {"param": "max_connections"})])
vh("test_hermes_streaming_serialized_arguments_with_stream_interval",
   '<tool_call>{"name": "get_db_config", "arguments": "{\\"param\\": \\"max_connections\\"}"}</tool_call>',
   calls=[("get_db_config", {"param": "max_connections"})])
for test in ("test_hermes_parser_non_streaming_bare_string_arguments",
             "test_hermes_streaming_bare_string_arguments_with_stream_interval"):
    vh(test, '<tool_call>\n{"name": "do_thing", "arguments": "hello"}\n</tool_call>', errors=1,
       deliberate='vLLM passes the JSON string "hello" on as the arguments; agentrl requires arguments that are a JSON object and reports the call as an error')
for i, args_value in enumerate(['{"param": "max_connections"}', "hello", "{hello world}", "[oops", '{"a": 1} tail text']):
    text = "<tool_call>" + json.dumps({"name": "f", "arguments": args_value}) + "</tool_call>"
    if i == 0:
        vh(f"test_hermes_streaming_string_arguments_match_non_streaming[{args_value}]", text,
           calls=[("f", {"param": "max_connections"})])
    else:
        vh(f"test_hermes_streaming_string_arguments_match_non_streaming[{args_value}]", text, errors=1,
           deliberate="vLLM passes a JSON string that does not hold an object on as the arguments; agentrl requires a JSON object and reports an error")
vh("test_hermes_streaming_content_and_tool_call_in_single_chunk",
   'Hi!<tool_call>{"name": "f", "arguments": {"x": 1}}</tool_call>',
   calls=[("f", {"x": 1})], content="Hi!")

# ----------------------------------------------------------- vLLM llama3_json
P = "tests/tool_parsers/test_llama3_json_tool_parser.py"
L = "vllm_llama3_json.jsonl"
KEEP = "vLLM returns content None when there are calls; agentrl keeps the text around the calls as content (as SGLang does)"


def vl(test, text, **kw):
    case(L, "llama3_json", VLLM, P, test, text, **kw)


vl("test_extract_tool_calls_simple",
   'Here is the result: {"name": "getOpenIncidentsTool", "parameters": {}} Would you like to know more?',
   calls=[("getOpenIncidentsTool", {})], arguments_exact=["{}"],
   content="Here is the result: Would you like to know more?", deliberate=KEEP)
vl("test_extract_tool_calls_with_arguments",
   '{"name": "searchTool", "parameters": {"query": "test query", "limit": 10}}',
   calls=[("searchTool", {"query": "test query", "limit": 10})])
vl("test_extract_tool_calls_no_json", "This is just some text without any tool calls",
   content="This is just some text without any tool calls")
vl("test_extract_tool_calls_invalid_json", '{"name": "invalidTool", "parameters": {invalid json}',
   content='{"name": "invalidTool", "parameters": {invalid json}', errors=1,
   deliberate="vLLM keeps the text as content silently; agentrl keeps it as content too and also reports the broken call as an error")
vl("test_extract_tool_calls_with_arguments_key", '{"name": "searchTool", "arguments": {"query": "test"}}',
   calls=[("searchTool", {"query": "test"})])
vl("test_extract_tool_calls_multiple_json",
   '{"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", "parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}}',
   calls=[("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})],
   arguments_exact=[None, "{}", None], content="")
vl("test_extract_tool_calls_multiple_json_with_whitespace",
   '{"name": "searchTool", "parameters": {"query": "test1"}} ; {"name": "getOpenIncidentsTool", "parameters": {}} ; {"name": "searchTool", "parameters": {"query": "test2"}}',
   calls=[("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})], content="")
vl("test_extract_tool_calls_multiple_json_with_surrounding_text",
   'Here are the results: {"name": "searchTool", "parameters": {"query": "test1"}}; {"name": "getOpenIncidentsTool", "parameters": {}}; {"name": "searchTool", "parameters": {"query": "test2"}} Would you like to know more?',
   calls=[("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {}), ("searchTool", {"query": "test2"})],
   content="Here are the results: Would you like to know more?", deliberate=KEEP)
vl("test_extract_tool_calls_deeply_nested_json",
   '{"name": "complexTool", "parameters": {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}}}',
   calls=[("complexTool", {"level1": {"level2": {"level3": {"level4": {"value": "deep"}}}}})])
vl("test_extract_tool_calls_multiple_with_deep_nesting",
   '{"name": "simpleTool", "parameters": {"value": "test"}}; {"name": "complexTool", "parameters": {"config": {"database": {"connection": {"pool": {"size": 10}}}}}}',
   calls=[("simpleTool", {"value": "test"}), ("complexTool", {"config": {"database": {"connection": {"pool": {"size": 10}}}}})])
vl("test_extract_tool_calls_with_quotes_and_brackets_in_string",
   '{"name": "searchTool", "parameters": {"query": "test {value} [complex]","nested": {"inner": "more {brackets}"}}}',
   calls=[("searchTool", {"query": "test {value} [complex]", "nested": {"inner": "more {brackets}"}})])
vl("test_extract_tool_calls_with_escaped_quotes_in_nested_json",
   '{"name": "parserTool", "parameters": {"text": "He said \\"Hello {world}\\""}}',
   calls=[("parserTool", {"text": 'He said "Hello {world}"'})])
vl("test_extract_tool_calls_missing_name_key", '{"parameters": {}}', content='{"parameters": {}}', errors=1,
   deliberate="vLLM keeps the text as content silently; agentrl keeps it as content and reports the call without a name as an error")
vl("test_extract_tool_calls_missing_parameters_and_arguments_key", '{"name": "toolWithoutParams"}',
   calls=[("toolWithoutParams", {})], content="",
   deliberate="vLLM makes this content; agentrl (like SGLang) reads a call without arguments as a call with {}, the way a tool without parameters is called")
vl("test_extract_tool_calls_brace_in_trailing_text",
   '{"name": "searchTool", "parameters": {"query": "test"}} I used {searchTool} for this.',
   calls=[("searchTool", {"query": "test"})], content="I used {searchTool} for this.", deliberate=KEEP)
vl("test_extract_tool_calls_json_fragment_in_trailing_text",
   '{"name": "searchTool", "parameters": {"query": "test"}} The arguments I passed were {"query": "test"}',
   calls=[("searchTool", {"query": "test"})], content='The arguments I passed were {"query": "test"}', deliberate=KEEP)
for sep in ["; ", ";", ";\n", "\n"]:
    vl(f"test_extract_tool_calls_streaming_parallel_separators[{sep!r}]",
       '{"name": "searchTool", "parameters": {"query": "test1"}}' + sep + '{"name": "getOpenIncidentsTool", "parameters": {}}',
       calls=[("searchTool", {"query": "test1"}), ("getOpenIncidentsTool", {})], content="")
vl("test_regex_timeout_handling", "{hello world[A(A=" + "\t)A(A=,\t" * 2,
   content=("{hello world[A(A=" + "\t)A(A=,\t" * 2).strip())

# ----------------------------------------------------------- vLLM qwen3_coder
P = "tests/tool_parsers/test_qwen3coder_tool_parser.py"
PS = "tests/tool_parsers/test_qwen3_xml_coder_shared.py"
Q = "vllm_qwen3_coder.jsonl"
WEATHER = {"city": {"type": "string", "description": "The city name"},
           "state": {"type": "string", "description": "The state code"},
           "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}
SAMPLE = [
    {"type": "function", "function": {"name": "get_current_weather", "description": "Get the current weather",
                                      "parameters": {"type": "object", "properties": WEATHER, "required": ["city", "state"]}}},
    tool("calculate_area", {"shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}),
]
TYPES = [tool("test_types", {"int_param": {"type": "integer"}, "float_param": {"type": "float"},
                             "bool_param": {"type": "boolean"}, "str_param": {"type": "string"},
                             "obj_param": {"type": "object"}})]


def vq(test, text, path=P, **kw):
    case(Q, "qwen3_coder", VLLM, path, test, text, **kw)


DALLAS = """<tool_call>
<function=get_current_weather>
<parameter=city>
Dallas
</parameter>
<parameter=state>
TX
</parameter>
<parameter=unit>
fahrenheit
</parameter>
</function>
</tool_call>"""
EXTRACT = [
    ("single_tool", DALLAS, [("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})], ""),
    ("single_tool_with_content", "Sure! Let me check the weather for you." + DALLAS,
     [("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})], "Sure! Let me check the weather for you."),
    ("single_tool_multiline_param", """<tool_call>
<function=calculate_area>
<parameter=shape>
rectangle
</parameter>
<parameter=dimensions>
{"width": 10, 
 "height": 20}
</parameter>
<parameter=precision>
2
</parameter>
</function>
</tool_call>""", [("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})], ""),
    ("parallel_tools", DALLAS + "\n" + DALLAS.replace("Dallas", "Orlando").replace("TX", "FL"),
     [("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}),
      ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})], ""),
    ("tool_with_typed_params", """Let me calculate that area for you.<tool_call>
<function=calculate_area>
<parameter=shape>
circle
</parameter>
<parameter=dimensions>
{"radius": 15.5}
</parameter>
<parameter=precision>
3
</parameter>
</function>
</tool_call>""", [("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})],
     "Let me calculate that area for you."),
]
vq("test_extract_tool_calls_no_tools", "This is a test response without any tool calls",
   content="This is a test response without any tool calls")
for path in (P, PS):
    for test in ("test_extract_tool_calls", "test_extract_tool_calls_streaming"):
        for cid, text, calls, content in EXTRACT:
            vq(f"{test}[{cid}]", text, path=path, calls=calls, content=content, tools=SAMPLE)
for path in (P, PS):
    vq("test_extract_tool_calls_streaming[no_tools]", "This is a test without tools", path=path, content="This is a test without tools")
vq("test_extract_tool_calls_fallback_no_tags", """<function=get_current_weather>
<parameter=city>
Dallas
</parameter>
<parameter=state>
TX
</parameter>
</function>""", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})], tools=SAMPLE)
TYPED_OUT = """<tool_call>
<function=test_types>
<parameter=int_param>
42
</parameter>
<parameter=float_param>
3.14
</parameter>
<parameter=bool_param>
true
</parameter>
<parameter=str_param>
hello world
</parameter>
<parameter=obj_param>
{"key": "value"}
</parameter>
</function>
</tool_call>"""
TYPED_ARGS = {"int_param": 42, "float_param": 3.14, "bool_param": True, "str_param": "hello world", "obj_param": {"key": "value"}}
for path in (P, PS):
    vq("test_extract_tool_calls_type_conversion", TYPED_OUT, path=path, calls=[("test_types", TYPED_ARGS)], tools=TYPES)
    vq("test_extract_tool_calls_complex_type_with_single_quote",
       "<tool_call>\n<function=test_types>\n<parameter=obj_param>\n{'key': 'value'}\n</parameter>\n</function>\n</tool_call>",
       path=path, calls=[("test_types", {"obj_param": {"key": "value"}})], tools=TYPES)
MISSING_CLOSE = """Let me check the weather for you:
<tool_call>
<function=get_current_weather>
<parameter=city>
Dallas
<parameter=state>
TX
</parameter>
<parameter=unit>
fahrenheit
</parameter>
</function>
</tool_call>"""
for path in (P, PS):
    for test in ("test_extract_tool_calls_missing_closing_parameter_tag", "test_extract_tool_calls_streaming_missing_closing_tag"):
        vq(test, MISSING_CLOSE, path=path, tools=SAMPLE, content="Let me check the weather for you:",
           calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})])
    vq("test_extract_tool_calls_streaming_incremental", """I'll check the weather.<tool_call>
<function=get_current_weather>
<parameter=city>
Dallas
</parameter>
<parameter=state>
TX
</parameter>
</function>
</tool_call>""", path=path, tools=SAMPLE, content="I'll check the weather.",
       calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])
vq("test_extract_tool_calls_streaming_missing_opening_tag", """I'll check the weather for you.

<function=get_current_weather>
<parameter=city>
Dallas
</parameter>
<parameter=state>
TX
</parameter>
<parameter=unit>
fahrenheit
</parameter>
</function>
</tool_call>""", tools=SAMPLE, content="I'll check the weather for you.",
   calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})])
vq("test_streaming_no_whitespace_content_before_tool_call", """\n\n<tool_call>
<function=get_current_weather>
<parameter=city>
Dallas
</parameter>
<parameter=state>
TX
</parameter>
</function>
</tool_call>""", tools=SAMPLE, content="", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])

# the shared file's robustness and value-conversion cases
SAMPLE2 = [tool("get_current_weather", WEATHER), SAMPLE[1]]
vq("test_malformed_xml_no_gt_delimiter",
   "<tool_call>\n<function=get_current_weather\n<parameter=city>Dallas</parameter>\n</function>\n</tool_call>",
   path=PS, tools=SAMPLE2, errors=1, content="",
   deliberate="vLLM only asserts that it does not crash and drops the call; agentrl reports the malformed <function= as one error")
vq("test_none_tool_calls_filtered",
   "<tool_call>\n<function=bad_func_no_gt\n</function>\n</tool_call>\n<tool_call>\n<function=get_current_weather>\n<parameter=city>Dallas</parameter>\n<parameter=state>TX</parameter>\n</function>\n</tool_call>",
   path=PS, tools=SAMPLE2, errors=1, calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})],
   deliberate="vLLM silently drops the malformed first block; agentrl reports it as one error next to the good call")
vq("test_streaming_multi_param_single_chunk",
   "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n<parameter=unit>\nfahrenheit\n</parameter>\n</function>\n</tool_call>",
   path=PS, tools=SAMPLE2, calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})])
GREET = [tool("greet", {"message": {"type": "string"}})]
vq("test_no_double_serialization_string_args",
   "<tool_call>\n<function=greet>\n<parameter=message>hello world</parameter>\n</function>\n</tool_call>",
   path=PS, tools=GREET, calls=[("greet", {"message": "hello world"})], arguments_exact=['{"message": "hello world"}'])
vq("test_extract_tool_calls_streaming_speculative_decode_loss",
   "<tool_call>\n<function=test>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>",
   path=PS, calls=[("test", {"city": "Paris"})])
SEARCH = [tool("search", {"query": {"type": "string"}})]
vq("test_string_null_value_preserved",
   "<tool_call>\n<function=search>\n<parameter=query>null</parameter>\n</function>\n</tool_call>",
   path=PS, tools=SEARCH, calls=[("search", {"query": "null"})])
vq("test_anyof_string_null_keeps_value_as_string",
   "<tool_call>\n<function=set_code>\n<parameter=code>42</parameter>\n</function>\n</tool_call>",
   path=PS, tools=[tool("set_code", {"code": {"anyOf": [{"type": "string"}, {"type": "null"}]}})],
   calls=[("set_code", {"code": "42"})])
COUNT = [tool("set_count", {"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}})]
vq("test_anyof_integer_null_parses_as_int",
   "<tool_call>\n<function=set_count>\n<parameter=count>42</parameter>\n</function>\n</tool_call>",
   path=PS, tools=COUNT, calls=[("set_count", {"count": 42})])
ANYOBJ = [tool("update_record", {"data": {"anyOf": [{"type": "object"}, {"type": "null"}]}})]
for test in ("test_anyof_object_param_not_double_encoded_nonstreaming", "test_anyof_object_param_not_double_encoded_streaming"):
    vq(test, '<tool_call>\n<function=update_record>\n<parameter=data>{"key": "value", "count": 42}</parameter>\n</function>\n</tool_call>',
       path=PS, tools=ANYOBJ, calls=[("update_record", {"data": {"key": "value", "count": 42}})])
PROC = [tool("process", {"name": {"type": "string"}, "data": {"type": "object"}})]
for test in ("test_double_encoded_object_param_nonstreaming", "test_double_encoded_object_param_streaming"):
    vq(test, "<tool_call>\n<function=process>\n<parameter=name>\nhello\n</parameter>\n<parameter=data>\n\"{'key': 'value', 'n': 1}\"\n</parameter>\n</function>\n</tool_call>\n",
       path=PS, tools=PROC, calls=[("process", {"name": "hello", "data": {"key": "value", "n": 1}})])
WF = [tool("write_file", {"path": {"type": "string"}, "content": {"type": "string"}})]
XML_TAGS = 'char_deltas = [\n    "<tool_call>\\n",\n    "<parameter=query>\\n",\n    "\\n</parameter>\\n",\n    "</function>\\n",\n]\n'
PARAM_LIKE = 'TOOL_CALL_TEMPLATE = """\n</parameter>\n<parameter=new_string>\n#!/usr/bin/env python3\n</parameter>\n"""\n'
REAL_NAME = 'doc = """\n<parameter=path>\nliteral/value\n</parameter>\n"""\n'
NESTED = ('doc = """\n<tool_call>\n<function=write_file>\n<parameter=path>\nliteral/value.txt\n</parameter>\n'
          '<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>\n"""\n')


def wf(path_value, content_value):
    return ("<tool_call>\n<function=write_file>\n" f"<parameter=path>\n{path_value}\n</parameter>\n"
            f"<parameter=content>\n{content_value}</parameter>\n</function>\n</tool_call>")


for kind, value, pathv in (("xml_structural_tags", XML_TAGS, "test.py"), ("param_like_lines", PARAM_LIKE, "test_template.py"),
                           ("real_param_name_literal", REAL_NAME, "fixture.py"), ("full_nested_tool_call", NESTED, "fixture.py")):
    for mode in ("nonstreaming", "streaming"):
        vq(f"test_content_with_{kind}_{mode}", wf(pathv, value) + ("\n" if kind in ("xml_structural_tags", "param_like_lines") else ""),
           path=PS, tools=WF, content="",
           calls=[("write_file", {"path": pathv, "content": value.rstrip("\n")})],
           arguments_exact=[json.dumps({"path": pathv, "content": value.rstrip("\n")}, ensure_ascii=False)])
vq("test_array_with_json_bool", '<tool_call>\n<function=pick>\n<parameter=items>\n["a", "b", 1, true]\n</parameter>\n</function>\n</tool_call>',
   path=PS, tools=[tool("pick", {"items": {"type": "array"}})], calls=[("pick", {"items": ["a", "b", 1, True]})])
TWO = ("<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n"
       "<tool_call>\n<function=get_weather>\n<parameter=city>\nLondon\n</parameter>\n</function>\n</tool_call>")
GW = [tool("get_weather", {"city": {"type": "string"}})]
vq("test_two_tool_calls_in_one_streaming_chunk", TWO, path=PS, tools=GW,
   calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})])
vq("test_python_none_value_for_nullable_int",
   "<tool_call>\n<function=set_count>\n<parameter=count>None</parameter>\n</function>\n</tool_call>",
   path=PS, tools=COUNT, calls=[("set_count", {"count": None})])
vq("test_streaming_two_tool_calls_plus_trailing_text_one_delta", TWO + "\nAll done!", path=PS, tools=GW,
   calls=[("get_weather", {"city": "Paris"}), ("get_weather", {"city": "London"})], content="All done!")
vq("test_streaming_trailing_text_with_final_close_in_same_delta",
   "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</tool_call>\nI hope this helps!",
   path=PS, tools=GW, calls=[("get_weather", {"city": "Paris"})], content="I hope this helps!")
OOS = 'template = """\n<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n"""\n'
for mode in ("nonstreaming", "streaming"):
    vq(f"test_two_tools_second_with_out_of_schema_nested_literal_{mode}",
       "<tool_call>\n<function=foo>\n<parameter=bar>baz</parameter>\n</function>\n</tool_call>\n\n" + wf("fixture.py", OOS),
       path=PS, calls=[("foo", {"bar": "baz"}), ("write_file", {"path": "fixture.py", "content": OOS.rstrip("\n")})],
       deliberate="the peer's parser is built with only write_file; vLLM does not check names, so agentrl runs this case without a tool list (with one, the call to foo would be an unknown-tool error)")
vq("test_jinja_template_phantom_tool_call_is_rejected_nonstreaming",
   "<tool_call>\n<function={{ tc.name }}>\n<parameter={{ k }}>\n{{ v }}\n</parameter>\n</function>\n</tool_call>\n\n"
   "<tool_call>\n<function=write_file>\n<parameter=path>\nout.txt\n</parameter>\n<parameter=content>\nhello\n</parameter>\n</function>\n</tool_call>",
   path=PS, tools=WF, calls=[("write_file", {"path": "out.txt", "content": "hello"})], errors=1, content="",
   deliberate="vLLM drops the phantom call silently; agentrl reports it as one error (an unrendered template name is no tool)")
vq("test_inline_empty_tool_call_preserves_content_before_real_call",
   "I'll show: <tool_call>example</tool_call>. Now real:\n<tool_call>\n<function=log>\n<parameter=msg>\nhi\n</parameter>\n</function>\n</tool_call>",
   path=PS, tools=[tool("log", {"msg": {"type": "string"}})], calls=[("log", {"msg": "hi"})], errors=1,
   content="I'll show: . Now real:",
   deliberate="vLLM keeps the text around the inline <tool_call>example</tool_call> silently; agentrl keeps the same narrative and reports the block without <function=…> as one error")
for lit in ("null", "None"):
    vq(f"test_anyof_string_null_with_null_literal_returns_none[{lit}]",
       f"<tool_call>\n<function=set_value>\n<parameter=optional>{lit}</parameter>\n</function>\n</tool_call>",
       path=PS, tools=[tool("set_value", {"optional": {"anyOf": [{"type": "string"}, {"type": "null"}]}})],
       calls=[("set_value", {"optional": None})])

# ------------------------------------------------------------- vLLM gpt_oss
P = "tests/tool_parsers/test_openai_tool_parser.py"
G = "vllm_gpt_oss.jsonl"
SYS = "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.<|end|>"
NOTE = " (system and developer texts abbreviated; the parser ignores them)"


def vg(test, text, **kw):
    case(G, "gpt_oss", VLLM, P, test, text, **kw)


def user(t):
    return f"<|start|>user<|message|>{t}<|end|>"


def analysis(t):
    return f"<|start|>assistant<|channel|>analysis<|message|>{t}<|end|>"


def call(recipient, body, ctype=" <|constrain|>json"):
    return f"<|start|>assistant to={recipient}<|channel|>commentary{ctype}<|message|>{body}<|call|>"


vg("test_extract_tool_calls_no_tools" + NOTE,
   SYS + "<|start|>developer<|message|># Instructions\n\nTalk like a pirate!<|end|>" + user("Arrr, how be you?")
   + "<|start|>assistant<|channel|>final<|message|>This is a test<|end|><|start|>assistant",
   content="This is a test")
for args in ('{"location": "Tokyo"}', '{\n"location": "Tokyo"\n}'):
    vg(f"test_extract_tool_calls_single_tool[{args!r}]",
       user("What is the weather in Tokyo?") + analysis('User asks: "What is the weather in Tokyo?" We need to use get_current_weather tool.')
       + call("functions.get_current_weather", args) + "<|start|>assistant",
       calls=[("get_current_weather", {"location": "Tokyo"})], content="")
vg("test_extract_tool_calls_multiple_tools",
   user("What is the weather in Tokyo based on where I'm at?")
   + analysis('User asks: "What is the weather in Tokyo?" based on their location. We need to use get_current_weather tool and get_user_location tool.')
   + call("functions.get_current_weather", '{"location": "Tokyo"}') + call("functions.get_user_location", '{"location": "Tokyo"}')
   + call("functions.no_content_type", '{"location": "Tokyo"}', ctype="") + call("functions.not_json_no_content_type", "foo", ctype="")
   + call("functions.empty_args", "{}") + call("functions.no_args", "") + "<|start|>assistant",
   calls=[("get_current_weather", {"location": "Tokyo"}), ("get_user_location", {"location": "Tokyo"}),
          ("no_content_type", {"location": "Tokyo"}), ("empty_args", {}), ("no_args", {})],
   arguments_exact=[None, None, None, "{}", "{}"], errors=1, content="",
   deliberate='vLLM passes the body "foo" on as arguments and an empty body as ""; agentrl reports non-JSON arguments as an error and writes an empty body as {} (a tool whose schema is not an object gets plain text, see TestGptOSS)')
vg("test_extract_tool_calls_with_content",
   user("What is the weather in Tokyo based on where I'm at?")
   + analysis('User asks: "What is the weather in Tokyo?" based on their location. We need to use get_current_weather tool and get_user_location tool.')
   + call("functions.get_current_weather", '{"location": "Tokyo"}')
   + "<|start|>assistant<|channel|>final<|message|>This tool call will get the weather.<|end|><|start|>assistant",
   calls=[("get_current_weather", {"location": "Tokyo"})], content="This tool call will get the weather.")

# ------------------------------------------------------------------ verl
case("verl.jsonl", "gpt-oss", VERL, "tests/experimental/agent_loop/test_gpt_oss_tool_parser.py", "test_gpt_oss_tool_parser",
     '\n<|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json<|message|>{"location": "Tokyo"}<|call|>\n'
     '<|start|>functions.get_current_weather to=assistant<|channel|>commentary<|message|>{ "temperature": 20, "sunny": true }<|end|>',
     calls=[("get_current_weather", {"location": "Tokyo"})], arguments_exact=['{"location": "Tokyo"}'], content="")

# ------------------------------------------------ SGLang (test_function_call_parser.py)
P = "test/srt/test_function_call_parser.py"


def sg(out, fmt, test, text, **kw):
    case(out, fmt, SGL, P, test, text, **kw)


CITY = {"city": {"type": "string", "description": "City name"}}
SG_TOOLS = [tool("get_weather", CITY), tool("get_tourist_attractions", CITY)]
S = "sglang_llama3_json.jsonl"
sg(S, "llama3_json", "TestLlama32Detector.test_single_json", '{"name": "get_weather", "parameters": {"city": "Paris"}}',
   tools=SG_TOOLS, calls=[("get_weather", {"city": "Paris"})], content="")
sg(S, "llama3_json", "TestLlama32Detector.test_multiple_json_with_separator",
   '<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris"}};{"name": "get_tourist_attractions", "parameters": {"city": "Paris"}}',
   tools=SG_TOOLS, calls=[("get_weather", {"city": "Paris"}), ("get_tourist_attractions", {"city": "Paris"})], content="")
sg(S, "llama3_json", "TestLlama32Detector.test_multiple_json_with_separator_customized",
   '<|python_tag|>{"name": "get_weather", "parameters": {}}<|python_tag|>{"name": "get_tourist_attractions", "parameters": {}}',
   tools=SG_TOOLS, calls=[("get_weather", {}), ("get_tourist_attractions", {})], content="")
sg(S, "llama3_json", "TestLlama32Detector.test_json_with_trailing_text",
   '{"name": "get_weather", "parameters": {}} Some follow-up text', tools=SG_TOOLS,
   calls=[("get_weather", {})], content="Some follow-up text")
sg(S, "llama3_json", "TestLlama32Detector.test_invalid_then_valid_json",
   '{"name": "get_weather", "parameters": {{"name": "get_weather", "parameters": {}}', tools=SG_TOOLS,
   calls=[("get_weather", {})], errors=1, content='{"name": "get_weather", "parameters": {',
   deliberate="SGLang drops the broken first object silently; agentrl keeps its text as content and reports it as an error")
sg(S, "llama3_json", "TestLlama32Detector.test_plain_text_only", "This is just plain explanation text.", tools=SG_TOOLS,
   content="This is just plain explanation text.")
sg(S, "llama3_json", "TestLlama32Detector.test_with_python_tag_prefix",
   'Some intro. <|python_tag|>{"name": "get_weather", "parameters": {}}', tools=SG_TOOLS,
   calls=[("get_weather", {})], content="Some intro.")

S = "sglang_qwen3_coder.jsonl"
SQ_TOOLS = [tool("get_current_weather", {"city": {"type": "string", "description": "The city name"},
                                         "state": {"type": "string", "description": "The state code"},
                                         "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}},
                 top=None),
            tool("calculate_area", {"shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}})]
for t in SQ_TOOLS:
    t["function"]["parameters"].pop("type", None)  # SGLang's test schemas have no top-level "type"
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_detect_and_parse_no_tools", "This is a test response without any tool calls",
   content="This is a test response without any tool calls")
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_detect_and_parse_single_tool", DALLAS, tools=SQ_TOOLS,
   calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})], content="")
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_detect_and_parse_with_content", "Sure! Let me check the weather for you." + DALLAS,
   tools=SQ_TOOLS, calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})],
   content="Sure! Let me check the weather for you.")
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_detect_and_parse_multiline_param", """<tool_call>
<function=calculate_area>
<parameter=shape>
rectangle
</parameter>
<parameter=dimensions>
{"width": 10,
 "height": 20}
</parameter>
<parameter=precision>
2
</parameter>
</function>
</tool_call>""", tools=SQ_TOOLS, calls=[("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_detect_and_parse_parallel_tools",
   DALLAS + "\n" + DALLAS.replace("Dallas", "Orlando").replace("TX", "FL"), tools=SQ_TOOLS, content="",
   calls=[("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}),
          ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_parse_streaming_simple",
   "Sure! Let me check the weather.<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>",
   tools=SQ_TOOLS, content="Sure! Let me check the weather.", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_parse_streaming_incomplete",
   "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>",
   tools=SQ_TOOLS, calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_edge_case_no_parameters",
   "<tool_call>\n<function=get_current_weather>\n</function>\n</tool_call>", tools=SQ_TOOLS,
   calls=[("get_current_weather", {})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_edge_case_special_chars_in_value",
   "<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas->TX\n</parameter>\n</function>\n</tool_call>",
   tools=SQ_TOOLS, calls=[("get_current_weather", {"city": "Dallas->TX"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_extract_tool_calls_fallback_no_tags",
   "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>",
   tools=SQ_TOOLS, calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_extract_tool_calls_type_conversion", TYPED_OUT,
   tools=TYPES, calls=[("test_types", TYPED_ARGS)])
INDENTED = """I'll check the weather.<tool_call>
        <function=get_current_weather>
        <parameter=city>
        Dallas
        </parameter>
        <parameter=state>
        TX
        </parameter>
        </function>
        </tool_call>"""
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_parse_streaming_incremental",
   "I'll check the weather.<tool_call>\n<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>\n</tool_call>",
   tools=SQ_TOOLS, content="I'll check the weather.", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})])
sg(S, "qwen3_coder", "TestQwen3CoderDetector.test_parse_streaming_multiple_tools", """<tool_call>
        <function=get_current_weather>
        <parameter=city>
        Dallas
        </parameter>
        <parameter=state>
        TX
        </parameter>
        </function>
        </tool_call>
        Some text in between.
        <tool_call>
        <function=calculate_area>
        <parameter=shape>
        circle
        </parameter>
        <parameter=dimensions>
        {"radius": 5}
        </parameter>
        </function>
        </tool_call>""", tools=SQ_TOOLS, content="Some text in between.",
   calls=[("get_current_weather", {"city": "        Dallas\n        ", "state": "        TX\n        "}),
          ("calculate_area", {"shape": "        circle\n        ", "dimensions": {"radius": 5}})],
   deliberate="the peer's test indents every line; SGLang strips white space around each value, agentrl (like vLLM) strips only the one newline after <parameter=…> and before </parameter>, so the indentation stays in string values")

S = "sglang_deepseek_v3.jsonl"
sg(S, "deepseek_v3", "TestDeepSeekV3Detector.test_parse_streaming_multiple_tool_calls_with_multi_token_chunk",
   "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\":\"Shanghai\"}\n```<｜tool▁call▁end｜>"
   "\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_tourist_attractions\n```json\n{\"city\": \"Beijing\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
   tools=SG_TOOLS, calls=[("get_weather", {"city": "Shanghai"}), ("get_tourist_attractions", {"city": "Beijing"})], content="")

# ------------------------------------------------------ vLLM deepseek_v3 (common_tests config)
P = "tests/tool_parsers/test_deepseekv3_tool_parser.py"
D3 = "vllm_deepseek_v3.jsonl"
CB, CE, SEP, SB, SE = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"


def d3(test, text, **kw):
    case(D3, "deepseek_v3", VLLM, P, test, text, **kw)


def fence(name, args):
    return f"{CB}function{SEP}{name}\n```json\n{args}\n```{CE}"


d3("TestDeepSeekV3ToolParser::test_no_tool_calls", "How can I help you today? I can check weather for you.",
   content="How can I help you today? I can check weather for you.")
d3("TestDeepSeekV3ToolParser::test_single_tool_call_simple_args",
   SB + fence("get_weather", '{"city": "Tokyo", "unit": "celsius"}') + SE,
   calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"})], content="")
d3("TestDeepSeekV3ToolParser::test_parallel_tool_calls",
   SB + fence("get_weather", '{"city": "Tokyo", "unit": "celsius"}') + fence("search_hotels", '{"location": "Tokyo", "check_in": "2025-01-15"}') + SE,
   calls=[("get_weather", {"city": "Tokyo", "unit": "celsius"}), ("search_hotels", {"location": "Tokyo", "check_in": "2025-01-15"})])
d3("TestDeepSeekV3ToolParser::test_various_data_types",
   SB + fence("test_function", '{"string_field": "hello", "int_field": 42, "float_field": 3.14, "bool_field": true, "null_field": null, '
              '"array_field": ["a", "b", "c"], "object_field": {"nested": "value"}, "empty_array": [], "empty_object": {}}') + SE,
   calls=[("test_function", {"string_field": "hello", "int_field": 42, "float_field": 3.14, "bool_field": True, "null_field": None,
                             "array_field": ["a", "b", "c"], "object_field": {"nested": "value"}, "empty_array": [], "empty_object": {}})])
d3("TestDeepSeekV3ToolParser::test_empty_arguments", SB + fence("get_current_time", "{}") + SE,
   calls=[("get_current_time", {})], arguments_exact=["{}"])
d3("TestDeepSeekV3ToolParser::test_surrounding_text", "Let me check the weather for you." + SB + fence("get_weather", '{"city": "Paris"}') + SE,
   calls=[("get_weather", {"city": "Paris"})], content="Let me check the weather for you.")
d3("TestDeepSeekV3ToolParser::test_escaped_strings",
    SB + fence("send_message", '{"text": "He said \\"hello\\"", "path": "C:\\\\Users\\\\file", "newline": "line1\\nline2"}') + SE,
    calls=[("send_message", {"text": 'He said "hello"', "path": "C:\\Users\\file", "newline": "line1\nline2"})])
d3("TestDeepSeekV3ToolParser::test_malformed_input[0]", SB + fence("get_weather", '{"city": "Tokyo"') + SE, errors=1, content="",
   deliberate="vLLM only asserts that it does not crash; agentrl reports the invalid JSON as one error")
d3("TestDeepSeekV3ToolParser::test_malformed_input[1]", SB + "function" + SEP + 'get_weather\n```json\n{"city": "Tokyo"}\n```' + SE,
   content='function<｜tool▁sep｜>get_weather\n```json\n{"city": "Tokyo"}\n```',
   deliberate="vLLM only asserts that it does not crash; without <｜tool▁call▁begin｜> there is no call, and agentrl keeps the text (wrappers dropped) as content")

# ---------------------------------------------------------- deepseek_v31
P = "tests/tool_parsers/test_deepseekv31_tool_parser.py"
D31 = "vllm_deepseek_v31.jsonl"
case(D31, "deepseek_v31", VLLM, P, "test_extract_tool_calls_with_tool",
     "normal text" + SB + CB + "foo" + SEP + '{"x":1}' + CE + SE,
     calls=[("foo", {"x": 1})], arguments_exact=['{"x":1}'], content="normal text")
case(D31, "deepseek_v31", VLLM, P, "test_extract_tool_calls_with_multiple_tools",
     "some prefix text" + SB + CB + "foo" + SEP + '{"x":1}' + CE + CB + "bar" + SEP + '{"y":2}' + CE + SE + " some suffix text",
     calls=[("foo", {"x": 1}), ("bar", {"y": 2})], arguments_exact=['{"x":1}', '{"y":2}'],
     content="some prefix text some suffix text",
     deliberate="vLLM's content is only the text before the calls; agentrl keeps the text after them too")
P = "test/registered/function_call/test_deepseekv31_detector.py"
S31 = "sglang_deepseek_v31.jsonl"
W = [tool("get_weather", {"city": {"type": "string"}})]
two = SB + CB + "get_weather" + SEP + '{"city": "Tokyo"}' + CE + CB + "get_weather" + SEP + '{"city": "Paris"}' + CE + SE
for test in ("TestDeepSeekV31Streaming.test_delta_spanning_two_calls_keeps_both_arguments", "TestDeepSeekV31Streaming.test_one_shot_parse_unchanged"):
    case(S31, "deepseek_v31", SGL, P, test, two, tools=W, content="",
         calls=[("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "Paris"})],
         arguments_exact=['{"city": "Tokyo"}', '{"city": "Paris"}'])
for test in ("TestDeepSeekV31Streaming.test_complete_call_in_single_delta_streams_arguments", "TestDeepSeekV31Streaming.test_arguments_streamed_progressively"):
    case(S31, "deepseek_v31", SGL, P, test, SB + CB + "get_weather" + SEP + '{"city": "Tokyo"}' + CE + SE, tools=W,
         calls=[("get_weather", {"city": "Tokyo"})], arguments_exact=['{"city": "Tokyo"}'], content="")

# ---------------------------------------------------------- kimi_k2
P = "tests/tool_parsers/test_kimi_k2_tool_parser.py"
K = "vllm_kimi_k2.jsonl"
SEC_B, SEC_E, TB, TA, TE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"


def vk(test, text, **kw):
    case(K, "kimi_k2", VLLM, P, test, text, **kw)


vk("test_extract_tool_calls_no_tools", "This is a test", content="This is a test")
for cid, text, calls, content in [
    ("tool_call_with_content_before",
     f"I'll help you check the weather. {SEC_B} {TB}\nfunctions.get_weather:0 {TA} {{\"city\": \"Beijing\"}} {TE} {SEC_E}",
     [("get_weather", '{"city": "Beijing"}')], "I'll help you check the weather."),
    ("multi_tool_call_with_content_before",
     f"I'll help you check the weather. {SEC_B} {TB}\nfunctions.get_weather:0 {TA} {{\"city\": \"Beijing\"}} {TE} {TB}\nfunctions.get_weather:1 {TA} {{\"city\": \"Shanghai\"}} {TE} {SEC_E}",
     [("get_weather", '{"city": "Beijing"}'), ("get_weather", '{"city": "Shanghai"}')], "I'll help you check the weather."),
    ("concatenated_tool_calls_bug_fix",
     f"I'll get the weather and news for LA today. First, let me get the weather using Los Angeles coordinates, and then get the latest news. {SEC_B}{TB}functions.get_weather:0{TA}{{\"latitude\": 34.0522, \"longitude\": -118.2437}}{TE}{TB}functions.get_news:1{TA}{{\"content\": \"Los Angeles today\"}}{TE}{SEC_E}",
     [("get_weather", '{"latitude": 34.0522, "longitude": -118.2437}'), ("get_news", '{"content": "Los Angeles today"}')],
     "I'll get the weather and news for LA today. First, let me get the weather using Los Angeles coordinates, and then get the latest news."),
    ("three_concatenated_tool_calls",
     f"I'll help you with multiple tasks. {SEC_B}{TB}functions.get_weather:0{TA}{{\"city\": \"New York\"}}{TE}{TB}functions.get_news:1{TA}{{\"topic\": \"technology\"}}{TE}{TB}functions.send_email:2{TA}{{\"to\": \"user@example.com\", \"subject\": \"Daily Update\"}}{TE}{SEC_E}",
     [("get_weather", '{"city": "New York"}'), ("get_news", '{"topic": "technology"}'), ("send_email", '{"to": "user@example.com", "subject": "Daily Update"}')],
     "I'll help you with multiple tasks."),
    ("mixed_spacing_tool_calls",
     f"Mixed spacing test. {SEC_B} {TB} functions.test:0 {TA} {{}} {TE}{TB}functions.test2:1{TA}{{}}{TE} {SEC_E}",
     [("test", "{}"), ("test2", "{}")], "Mixed spacing test."),
    ("angle_brackets_in_json",
     f"I need to process HTML content. {SEC_B}{TB}functions.process_html:0{TA}{{\"html\": \"<div>content</div>\", \"text\": \"normal text\"}}{TE}{SEC_E}",
     [("process_html", '{"html": "<div>content</div>", "text": "normal text"}')], "I need to process HTML content."),
    ("newlines_in_json",
     f"I need to process formatted JSON. {SEC_B}{TB}functions.process_data:0{TA}" + json.dumps({"name": "test", "value": 123, "nested": {"key": "value"}}, indent=2) + f"{TE}{SEC_E}",
     [("process_data", json.dumps({"name": "test", "value": 123, "nested": {"key": "value"}}, indent=2))], "I need to process formatted JSON."),
]:
    vk(f"test_extract_tool_calls[{cid}]", text, calls=[(n, json.loads(a)) for n, a in calls], arguments_exact=[a for _, a in calls],
       content=content)
vk("test_extract_tool_calls_invalid_json",
   f"I'll help you check the weather. {SEC_B} {TB}\nfunctions.invalid_get_weather:0 {TA} {{\"city\": \"Beijing\" {TE} {TB}\nfunctions.valid_get_weather:1 {TA} {{\"city\": \"Shanghai\"}} {TE} {SEC_E}",
   calls=[("valid_get_weather", {"city": "Shanghai"})], errors=1, content="I'll help you check the weather.",
   deliberate="vLLM returns the call with the invalid JSON as its arguments; agentrl reports it as an error (arguments must be JSON)")
vk("test_extract_tool_calls_invalid_funcall",
   f"I'll help you check the weather. {SEC_B} {TB}\nfunctions.invalid_get_weather.0 {TA} {{\"city\": \"Beijing\"}} {TE} {TB}\nfunctions.valid_get_weather:1 {TA} {{\"city\": \"Shanghai\"}} {TE} {SEC_E}",
   calls=[("valid_get_weather", {"city": "Shanghai"})], errors=1, content="I'll help you check the weather.",
   deliberate="vLLM drops the call with a malformed id silently; agentrl reports it as an error")
vk("test_streaming_no_tool_calls", "This is just regular text without any tool calls.",
   content="This is just regular text without any tool calls.")

P = "test/srt/test_function_call_parser.py"
SK = "sglang_kimi_k2.jsonl"
one = f'{SEC_B}{TB}functions.get_weather:0{TA}{{"city": "Paris"}}{TE}{SEC_E}'
twok = f'{SEC_B}{TB}functions.get_weather:0{TA}{{"city": "Paris"}}{TE}{TB}functions.get_tourist_attractions:1{TA}{{"city": "London"}}{TE}{SEC_E}'
for test in ("TestKimiK2Detector.test_single_tool_call", "TestKimiK2Detector.test_streaming_tool_call", "TestKimiK2Detector.test_tool_call_completion"):
    sg(SK, "kimi_k2", test, one, tools=SG_TOOLS, calls=[("get_weather", {"city": "Paris"})], arguments_exact=['{"city": "Paris"}'], content="")
for test in ("TestKimiK2Detector.test_multiple_tool_calls", "TestKimiK2Detector.test_streaming_multiple_tool_calls"):
    sg(SK, "kimi_k2", test, twok, tools=SG_TOOLS, content="",
       calls=[("get_weather", {"city": "Paris"}), ("get_tourist_attractions", {"city": "London"})],
       arguments_exact=['{"city": "Paris"}', '{"city": "London"}'])
sg(SK, "kimi_k2", "TestKimiK2Detector.test_tool_name_streaming",
   f'{SEC_B}{TB}functions.get_weather:0{TA}{{"city": "Paris"}}{TE}{TB}functions.get_tourist_attractions:1{TA}{{', tools=SG_TOOLS,
   calls=[("get_weather", {"city": "Paris"})], errors=1, content="",
   deliberate="the peer checks the names streamed so far; at the end of this text the second call is unfinished, which agentrl reports as an error")
sg(SK, "kimi_k2", "TestKimiK2Detector.test_invalid_tool_call",
   'invalid_tool:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>', tools=SG_TOOLS,
   content='invalid_tool:0<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
sg(SK, "kimi_k2", "TestKimiK2Detector.test_partial_tool_call",
   f'{SEC_B}{TB}functions.get_weather:0{TA}{{"city": "Paris"', tools=SG_TOOLS, errors=1, content="",
   deliberate="the peer checks the partial streamed state; the finished text has an unclosed call, which agentrl reports as an error")

# ---------------------------------------------------------- glm45 (SGLang)
SGM = "sglang_glm45.jsonl"
GT = [tool("get_weather", {"city": {"type": "string", "description": "City name"}, "date": {"type": "string", "description": "Date"}})]
g1 = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2024-06-27</arg_value>\n</tool_call>"
g2 = "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Shanghai</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2024-06-28</arg_value>\n</tool_call>"
for test in ("TestGlm4MoeDetector.test_single_tool_call", "TestGlm4MoeDetector.test_streaming_tool_call", "TestGlm4MoeDetector.test_tool_call_id",
             "TestGlm4MoeDetector.test_partial_tool_call"):
    sg(SGM, "glm45", test, g1, tools=GT, calls=[("get_weather", {"city": "Beijing", "date": "2024-06-27"})],
       arguments_exact=['{"city": "Beijing", "date": "2024-06-27"}'], content="")
for test in ("TestGlm4MoeDetector.test_multiple_tool_calls", "TestGlm4MoeDetector.test_streaming_multiple_tool_calls"):
    sg(SGM, "glm45", test, g1 + g2, tools=GT, content="",
       calls=[("get_weather", {"city": "Beijing", "date": "2024-06-27"}), ("get_weather", {"city": "Shanghai", "date": "2024-06-28"})],
       arguments_exact=['{"city": "Beijing", "date": "2024-06-27"}', '{"city": "Shanghai", "date": "2024-06-28"}'])
sg(SGM, "glm45", "TestGlm4MoeDetector.test_invalid_tool_call",
   "<tool_call>invalid_func\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n</tool_call>", tools=GT, errors=1, content="",
   deliberate="SGLang drops the call to an unknown tool silently; agentrl reports it as an error naming the available tools")
TODO = [tool("todo_write", {"todos": {"type": "array", "description": "The updated todo list"}})]
todos = [{"id": "1", "task": "Check for hard-coded issues in the backend code", "status": "in_progress"},
         {"id": "2", "task": "Check for hard-coded issues in the frontend code", "status": "pending"},
         {"id": "3", "task": "Check for code violating the Single Responsibility Principle", "status": "pending"},
         {"id": "4", "task": "Generate a rectification proposal report", "status": "pending"}]
sg(SGM, "glm45", "TestGlm4MoeDetector.test_array_argument_with_escaped_json[plain]",
   "<tool_call>todo_write\n<arg_key>todos</arg_key>\n<arg_value>" + json.dumps(todos) + "</arg_value>\n</tool_call>",
   tools=TODO, calls=[("todo_write", {"todos": todos})])
sg(SGM, "glm45", "TestGlm4MoeDetector.test_array_argument_with_escaped_json[raw]",
   "<tool_call>todo_write\\n<arg_key>todos</arg_key>\\n<arg_value>" + json.dumps(todos).replace('"', '\\"') + "</arg_value>\n</tool_call>",
   tools=TODO, errors=1, content="",
   deliberate="the raw-string variant has the two characters \\n after the name and escaped quotes in the value; SGLang repairs both, agentrl reports the malformed block as one error (the name line is not a name)")

# ---------------------------------------------------------- mistral
SM = "sglang_mistral.jsonl"
MT = [tool("make_next_step_decision", {"decision": {"type": "string", "description": "The next step to take"},
                                        "content": {"type": "string", "description": "The content of the next step"}})]
nested = "```\nTOOL: Access a weather API or service\nOBSERVATION: Retrieve the current weather data for the top 5 populated cities in the US\nANSWER: The weather in the top 5 populated cities in the US is as follows: [City Name] - [Weather Conditions] - [Temperature]\n```"
sg(SM, "mistral", "TestMistralDetector.test_detect_and_parse_with_nested_brackets_in_content",
   '[TOOL_CALLS] [{"name":"make_next_step_decision", "arguments":{"decision":"","content":' + json.dumps(nested) + '}}]',
   tools=MT, calls=[("make_next_step_decision", {"decision": "", "content": nested})], content="")
sg(SM, "mistral", "TestMistralDetector.test_detect_and_parse_simple_case",
   '[TOOL_CALLS] [{"name":"make_next_step_decision", "arguments":{"decision":"TOOL", "content":"Use weather API"}}]',
   tools=MT, calls=[("make_next_step_decision", {"decision": "TOOL", "content": "Use weather API"})])
sg(SM, "mistral", "TestMistralDetector.test_detect_and_parse_no_tool_calls", "This is just normal text without any tool calls.",
   tools=MT, content="This is just normal text without any tool calls.")
sg(SM, "mistral", "TestMistralDetector.test_detect_and_parse_with_text_before_tool_call",
   'Here is some text before the tool call: [TOOL_CALLS] [{"name":"make_next_step_decision", "arguments":{"decision":"ANSWER", "content":"The answer is 42"}}]',
   tools=MT, calls=[("make_next_step_decision", {"decision": "ANSWER", "content": "The answer is 42"})],
   content="Here is some text before the tool call:")

P = "tests/tool_parsers/test_mistral_tool_parser.py"
VM = "vllm_mistral.jsonl"


def vm(test, text, **kw):
    case(VM, "mistral", VLLM, P, test, text, **kw)


vm("test_extract_tool_calls_no_tools", "This is a test", content="This is a test")
for cid, text, calls in [
    ("single_tool_add", '[TOOL_CALLS][{"name": "add", "arguments":{"a": 3.5, "b": 4}}]', [("add", {"a": 3.5, "b": 4})]),
    ("single_tool_weather", '[TOOL_CALLS] [{"name": "get_current_weather", "arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}}]',
     [("get_current_weather", {"city": "San Francisco", "state": "CA", "unit": "celsius"})]),
    ("argument_before_name", '[TOOL_CALLS] [{"arguments":{"city": "San Francisco", "state": "CA", "unit": "celsius"}, "name": "get_current_weather"}]',
     [("get_current_weather", {"city": "San Francisco", "state": "CA", "unit": "celsius"})]),
    ("argument_before_name_and_name_in_argument", '[TOOL_CALLS] [{"arguments":{"name": "John Doe"}, "name": "get_age"}]',
     [("get_age", {"name": "John Doe"})]),
]:
    vm(f"test_extract_tool_calls_pre_v11_tokenizer[{cid}]", text, calls=calls, content="")
for cid, text, calls, content in [
    ("single_tool_add", '[TOOL_CALLS]add_this_and_that{"a": 3.5, "b": 4}', [("add_this_and_that", {"a": 3.5, "b": 4})], ""),
    ("single_tool_weather", '[TOOL_CALLS]get_current_weather{"city": "San Francisco", "state": "CA", "unit": "celsius"}',
     [("get_current_weather", {"city": "San Francisco", "state": "CA", "unit": "celsius"})], ""),
    ("multiple_tool_calls", '[TOOL_CALLS]add{"a": 3.5, "b": 4}[TOOL_CALLS]multiply{"a": 3, "b": 6}',
     [("add", {"a": 3.5, "b": 4}), ("multiply", {"a": 3, "b": 6})], ""),
    ("wrong_json", 'hi{hi[TOOL_CALLS]bash{"command": "print(\\"hello world!\\")\\nre.compile(r\'{}\')"}',
     [("bash", {"command": "print(\"hello world!\")\nre.compile(r'{}')"})], "hi{hi"),
]:
    vm(f"test_extract_tool_calls[{cid}]", text, calls=calls, content=content)
vm("test_extract_tool_calls[complex]", 'hi{hi[TOOL_CALLS]bash{"command": "print(\\"hello world!\\")\\nre.compile(r\'{}\')"',
   errors=1, content="hi{hi",
   deliberate="the arguments end before their closing brace; vLLM passes the truncated object on, agentrl reports the invalid JSON as an error")

# ---------------------------------------------------------- pythonic
P = "tests/tool_parsers/test_pythonic_tool_parser.py"
VP = "vllm_pythonic.jsonl"
SIMPLE = ("get_weather(city='San Francisco', metric='celsius')", "get_weather", '{"city": "San Francisco", "metric": "celsius"}')
MORE = ("register_user(name='John Doe', age=37, address={'city': 'San Francisco', 'state': 'CA'}, role=None, passed_test=True, aliases=['John', 'Johnny'])",
        "register_user", '{"name": "John Doe", "age": 37, "address": {"city": "San Francisco", "state": "CA"}, "role": null, "passed_test": true, "aliases": ["John", "Johnny"]}')
NOARGS = ("get_weather()", "get_weather", "{}")
EDICT = ("do_something_cool(additional_data={})", "do_something_cool", '{"additional_data": {}}')
ELIST = ("do_something_cool(steps=[])", "do_something_cool", '{"steps": []}')
ESC = (r"get_weather(city='Martha\'s Vineyard', metric='\"cool units\"')", "get_weather", '{"city": "Martha\'s Vineyard", "metric": "\\"cool units\\""}')


def vp(test, text, **kw):
    case(VP, "pythonic", VLLM, P, test, text, **kw)


vp("test_no_tool_call", "How can I help you today?", content="How can I help you today?")
for cid, fns in [("simple", [SIMPLE]), ("more_types", [MORE]), ("parameterless", [NOARGS]), ("empty_dict", [EDICT]),
                 ("empty_list", [ELIST]), ("escaped_string", [ESC]), ("parallel_calls", [SIMPLE, MORE])]:
    for mode in ("streaming", "nonstreaming"):
        vp(f"test_tool_call[{cid}_{mode}]", "[" + ", ".join(f[0] for f in fns) + "]",
           calls=[(f[1], json.loads(f[2])) for f in fns], arguments_exact=[f[2] for f in fns], content="")
vp("test_streaming_tool_call_with_large_steps", f"[get_weather(city='San Francisco', metric='celsius'), {NOARGS[0]}, {ELIST[0]}]",
   calls=[(f[1], json.loads(f[2])) for f in (SIMPLE, NOARGS, ELIST)], arguments_exact=[f[2] for f in (SIMPLE, NOARGS, ELIST)], content="")
vp("test_regex_timeout_handling", "hello world[A(A=" + "\t)A(A=,\t" * 2, content=("hello world[A(A=" + "\t)A(A=,\t" * 2).strip())

P = "test/srt/test_function_call_parser.py"
SP = "sglang_pythonic.jsonl"
PT = [tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}),
      tool("search", {"query": {"type": "string"}})]
for t in PT:
    t["function"]["parameters"].pop("type")


def sp(test, text, **kw):
    sg(SP, "pythonic", test, text, tools=PT, **kw)


sp("TestPythonicDetector.test_parse_streaming_no_brackets", "This is just normal text without any tool calls.",
   content="This is just normal text without any tool calls.")
sp("TestPythonicDetector.test_parse_streaming_complete_tool_call", "Here's a tool call: [get_weather(location='New York', unit='celsius')]",
   calls=[("get_weather", {"location": "New York", "unit": "celsius"})], content="Here's a tool call:")
sp("TestPythonicDetector.test_parse_streaming_text_before_tool_call", "This is some text before [get_weather(location='London')]",
   calls=[("get_weather", {"location": "London"})], content="This is some text before")
sp("TestPythonicDetector.test_parse_streaming_partial_tool_call", "Let me check the weather: [get_weather(location='Paris')]",
   calls=[("get_weather", {"location": "Paris"})], content="Let me check the weather:")
sp("TestPythonicDetector.test_parse_streaming_bracket_without_text_before", "[search(query='python programming')]",
   calls=[("search", {"query": "python programming"})], content="")
sp("TestPythonicDetector.test_parse_streaming_text_after_tool_call", "[get_weather(location='Tokyo')] Here's the forecast:",
   calls=[("get_weather", {"location": "Tokyo"})], content="Here's the forecast:")
sp("TestPythonicDetector.test_parse_streaming_multiple_tool_calls", "[get_weather(location='Berlin')] and [search(query='restaurants')]",
   calls=[("get_weather", {"location": "Berlin"}), ("search", {"query": "restaurants"})], content="and")
sp("TestPythonicDetector.test_parse_streaming_opening_bracket_only", "Let's try this: [", content="Let's try this: [",
   deliberate="SGLang holds the bracket back while streaming; at the end of the turn agentrl returns it as content")
sp("TestPythonicDetector.test_parse_streaming_nested_brackets", "[get_weather(location='New York', unit='celsius', data=[1, 2, 3])]",
   calls=[("get_weather", {"location": "New York", "unit": "celsius", "data": [1, 2, 3]})], content="")
sp("TestPythonicDetector.test_parse_streaming_nested_brackets_dict", "[search(query='test', config={'options': [1, 2], 'nested': {'key': 'value'}})]",
   calls=[("search", {"query": "test", "config": {"options": [1, 2], "nested": {"key": "value"}}})], content="")
sp("TestPythonicDetector.test_parse_streaming_multiple_tools_with_nested_brackets",
   "[get_weather(location='Paris', data=[10, 20]), search(query='test', filters=['a', 'b'])]",
   calls=[("get_weather", {"location": "Paris", "data": [10, 20]}), ("search", {"query": "test", "filters": ["a", "b"]})], content="")
sp("TestPythonicDetector.test_parse_streaming_partial_nested_brackets", "Here's a call: [get_weather(location='Tokyo', data=[1, 2, 3])]",
   calls=[("get_weather", {"location": "Tokyo", "data": [1, 2, 3]})], content="Here's a call:")
sp("TestPythonicDetector.test_parse_streaming_with_python_start_and_end_token",
   "Here's a call: <|python_start|>[get_weather(location='Tokyo', data=[1, 2, 3])]<|python_end|>",
   calls=[("get_weather", {"location": "Tokyo", "data": [1, 2, 3]})], content="Here's a call:")
sp("TestPythonicDetector.test_detect_and_parse_with_python_start_and_end_token",
   "User wants to get the weather in Mars. <|python_start|>[get_weather(location='Mars', unit='celsius')]<|python_end|> In this way we will get the weather in Mars.",
   calls=[("get_weather", {"location": "Mars", "unit": "celsius"})],
   content="User wants to get the weather in Mars.  In this way we will get the weather in Mars.")

write()

# ---------------------------------------------------------- deepseek_v32 (SGLang)
COMMITS[(SGL, "test/registered/function_call/test_deepseekv32_detector.py")] = "ce5e431ba686ac578d8b0191eaca7765817e4959"
P = "test/registered/function_call/test_deepseekv32_detector.py"
S32 = "sglang_deepseek_v32.jsonl"
NOTE_TOOL = [tool("write_note", {"payload": {"type": "object"}})]
CHUNKS = [
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_note">\n',
    '<｜DSML｜parameter name="payload" string="false">Здра',
    "вствуйте, мир",
    "! Это тест",
    "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>",
]
for test in ("TestNonJsonObjectParamStreaming.test_no_parser_error_and_no_dsml_leak",
             "TestNonJsonObjectParamStreaming.test_no_repeated_buffer_reemission"):
    case(S32, "deepseek_v32", SGL, P, test, "".join(CHUNKS), tools=NOTE_TOOL, content="",
         calls=[("write_note", {"payload": "Здравствуйте, мир! Это тест"})])
case(S32, "deepseek_v32", SGL, P, "TestNonJsonObjectParamStreaming.test_v4_tool_calls_tokens",
     "".join(c.replace("function_calls", "tool_calls") for c in CHUNKS), tools=NOTE_TOOL, content="",
     calls=[("write_note", {"payload": "Здравствуйте, мир! Это тест"})])
case(S32, "deepseek_v32", SGL, P, "TestJsonParamStreamingUnchanged.test_json_object_param_still_streams",
     '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_note">\n<｜DSML｜parameter name="payload" string="false">{"city": "San Francisco"}'
     "</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>", tools=NOTE_TOOL, content="",
     calls=[("write_note", {"payload": {"city": "San Francisco"}})])
case(S32, "deepseek_v32", SGL, P, "TestBufferResetOnError.test_buffer_cleared_after_unexpected_error",
     '<｜DSML｜function_calls>\n<｜DSML｜invoke name="write_note">\nboomplain text', tools=NOTE_TOOL, errors=1, content="",
     deliberate="the peer injects an internal error and checks that no DSML leaks into later content; in agentrl the unfinished block is one error and no content")

write()

# ---------------------------------------------------------- SGLang gpt_oss detector
COMMITS[(SGL, "test/registered/function_call/test_gpt_oss_detector.py")] = "4e285c7766ea604ac2100100d7d02962b0831a57"
P = "test/registered/function_call/test_gpt_oss_detector.py"
SGO = "sglang_gpt_oss.jsonl"
RF = [tool("read_file", {"files": {"type": "array"}})]
TRUNC = ("<|channel|>analysis<|message|>Reasoning...<|end|>"
         '<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{\n  "files": []\n}<|call|>'
         "<|start|>assistant<|channel|>final<|message|>This text should be truncated.")
for test in ("TestGptOssDetector.test_detect_and_parse_truncate_normal", "TestGptOssDetector.test_parse_streaming_truncate_normal"):
    case(SGO, "gpt_oss", SGL, P, test, TRUNC, tools=RF, calls=[("read_file", {"files": []})],
         content="This text should be truncated.",
         deliberate="SGLang drops text after a call (generation should have stopped at <|call|>); agentrl keeps the final-channel text as content rather than losing it")
case(SGO, "gpt_oss", SGL, P, "TestGptOssDetector.test_parse_streaming_fast_path_fix",
     "<|start|>assistant<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{}<|call|>This is normal text that should be ignored.",
     tools=RF, calls=[("read_file", {})], content="This is normal text that should be ignored.",
     deliberate="SGLang ignores text after a call; agentrl keeps it as content")

# ------------------------------------------- SGLang qwen3_coder detector test_cases.py
COMMITS[(SGL, "test/registered/function_call/test_qwen3_coder_detector/test_cases.py")] = "2c5fa03198d0630444a1bfe74b4eaae310173eee"
P = "test/registered/function_call/test_qwen3_coder_detector/test_cases.py"
SQ2 = "sglang_qwen3_coder_cases.jsonl"
FIX = [tool("get_current_weather", {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer"}}),
       tool("sql_interpreter", {"query": {"type": "string"}, "dry_run": {"type": "boolean"}}),
       tool("TodoWrite", {"todos": {"type": "array", "items": {"type": "object", "properties": {"content": {"type": "string"}, "status": {"type": "string"}}}}})]


def sq(test, text, **kw):
    case(SQ2, "qwen3_coder", SGL, P, test, text, tools=FIX, **kw)


sq("test_plain_text", "This is plain text test", content="This is plain text test")
sq("test_single_tool_call", "<function=get_current_weather>\n<parameter=location>Boston</parameter>\n<parameter=unit>celsius</parameter>\n<parameter=days>3</parameter>\n</function>",
   calls=[("get_current_weather", {"location": "Boston", "unit": "celsius", "days": 3})], content="")
sq("test_single_tool_call_with_text", "Text prefix + tool call test\n\n<function=get_current_weather>\n<parameter=location>Boston</parameter>\n<parameter=unit>celsius</parameter>\n<parameter=days>3</parameter>\n</function>",
   calls=[("get_current_weather", {"location": "Boston", "unit": "celsius", "days": 3})], content="Text prefix + tool call test")
sq("test_double_tool_call", "Text prefix + double tool call test\n\n<function=get_current_weather>\n<parameter=location>New York</parameter>\n</function>\n<function=sql_interpreter>\n<parameter=query>SELECT * FROM users</parameter>\n<parameter=dry_run>True</parameter>\n</function>\n",
   calls=[("get_current_weather", {"location": "New York"}), ("sql_interpreter", {"query": "SELECT * FROM users", "dry_run": True})],
   content="Text prefix + double tool call test")
sq("test_random_fragmentation_stress_test", "Text prefix + random fragmentation stress test\n\n<function=get_current_weather>\n<parameter=location>San Francisco</parameter>\n</function>",
   calls=[("get_current_weather", {"location": "San Francisco"})], content="Text prefix + random fragmentation stress test")
sq("test_implicit_parameter_close", "Text prefix + implicit parameter close test\n\n<function=get_current_weather>\n<parameter=location>Paris\n<parameter=unit>celsius\n<parameter=days>3\n</function>",
   calls=[("get_current_weather", {"location": "Paris", "unit": "celsius", "days": 3})], content="Text prefix + implicit parameter close test")
sq("test_complex_schema_toolcall", 'Text prefix + complex schema tool call test\n\n<function=TodoWrite>\n<parameter=todos>\n[\n {"content": "Buy a new car", "status": \'pending\'},\n {"content": "Buy a new house", "status": "completed"}\n]\n</parameter>\n</function>\n\n',
   calls=[("TodoWrite", {"todos": [{"content": "Buy a new car", "status": "pending"}, {"content": "Buy a new house", "status": "completed"}]})],
   content="Text prefix + complex schema tool call test")

write()

# ------------------------------------------------ vLLM glm4_moe (module skipped upstream)
COMMITS[(VLLM, "tests/tool_parsers/test_glm4_moe_tool_parser.py")] = "1c1b86e1664b8b04423ffc4102f6dd922a97ecbf"
P = "tests/tool_parsers/test_glm4_moe_tool_parser.py"
VG = "vllm_glm45.jsonl"
SKIPNOTE = " (vLLM skips this module; ported as written)"


def vgl(test, text, **kw):
    case(VG, "glm45", VLLM, P, test + SKIPNOTE, text, **kw)


def glm_call(name, args, indent="    "):
    out = "<tool_call>" + name + "\n"
    for k, v in args.items():
        out += f"{indent}<arg_key>{k}</arg_key>\n{indent}<arg_value>{v}</arg_value>\n"
    return out + indent + "</tool_call>"


vgl("test_extract_tool_calls_no_tools", "This is a test", content="This is a test")
DAL = {"city": "Dallas", "state": "TX", "unit": "fahrenheit"}
ORL = {"city": "Orlando", "state": "FL", "unit": "fahrenheit"}
for cid, text, calls, content in [
    ("single_tool_call", glm_call("get_current_weather", DAL), [("get_current_weather", DAL)], ""),
    ("multiple_tool_calls", glm_call("get_current_weather", DAL) + "\n    " + glm_call("get_current_weather", ORL),
     [("get_current_weather", DAL), ("get_current_weather", ORL)], ""),
    ("tool_call_with_content_before", "I'll help you check the weather. " + glm_call("get_current_weather", {"city": "Seattle", "state": "WA", "unit": "celsius"}),
     [("get_current_weather", {"city": "Seattle", "state": "WA", "unit": "celsius"})], "I'll help you check the weather."),
    ("tool_call_with_mixed_args", glm_call("get_current_weather", {"city": "New York", "state": "NY", "unit": "celsius"}),
     [("get_current_weather", {"city": "New York", "state": "NY", "unit": "celsius"})], ""),
    ("tool_call_with_chinese_content", "I will help you get the weather." + glm_call("get_weather", {"city": "Beijing", "date": "2025-08-01"}),
     [("get_weather", {"city": "Beijing", "date": "2025-08-01"})], "I will help you get the weather."),
]:
    vgl(f"test_extract_tool_calls[{cid}]", text, calls=calls, content=content)
vgl("test_extract_tool_calls_with_thinking_tags",
    "<think>I want to get the weather.</think>\n\nI will help you get the weather.\n" + glm_call("get_weather", {"city": "Beijing", "date": "2025-08-01"}, indent=""),
    calls=[("get_weather", {"city": "Beijing", "date": "2025-08-01"})],
    content="<think>I want to get the weather.</think>\n\nI will help you get the weather.")
vgl("test_extract_tool_calls_malformed_xml",
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Seattle</arg_value>\n<arg_key>incomplete_arg\n<arg_value>value</arg_value>\n</tool_call>",
    errors=1, content="",
    deliberate="vLLM only asserts that it does not crash; agentrl reports the unclosed <arg_key> as one error")
vgl("test_extract_tool_calls_empty_arguments", "<tool_call>get_current_time\n</tool_call>",
    calls=[("get_current_time", {})], arguments_exact=["{}"], content="")
vgl("test_extract_tool_calls_mixed_content",
    "I will help you get the weather info.\n\n" + glm_call("get_weather", {"city": "Beijing", "date": "2025-08-01"}, indent="")
    + "\n\nmeaningwhile, I will also check the weather in Shanghai.\n\n" + glm_call("get_weather", {"city": "Shanghai", "date": "2025-08-01"}, indent=""),
    calls=[("get_weather", {"city": "Beijing", "date": "2025-08-01"}), ("get_weather", {"city": "Shanghai", "date": "2025-08-01"})],
    content="I will help you get the weather info.\n\n\n\nmeaningwhile, I will also check the weather in Shanghai.",
    deliberate="vLLM's content is only the text before the first call; agentrl keeps the text between and after the calls too")
vgl("test_streaming_no_tool_calls", "This is just regular text without any tool calls.",
    content="This is just regular text without any tool calls.")
vgl("test_extract_tool_calls_special_characters",
    glm_call("send_message", {"recipient": "Amy", "message": "It is a nice day", "priority": "high"}, indent=""),
    calls=[("send_message", {"recipient": "Amy", "message": "It is a nice day", "priority": "high"})])
vgl("test_extract_tool_calls_incomplete_tool_call",
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n<arg_key>date</arg_key>\n<arg_value>2025-08-01</arg_value>",
    errors=1, content="",
    deliberate="vLLM returns the unfinished block as content; agentrl reports it as one error (the text belonged to a call)")

write()

# ------------------------------------------------------------ SGLang qwen25 (hermes)
COMMITS[(SGL, "test/registered/unit/function_call/test_qwen25_detector.py")] = "1259ec5e5db0b5cdf11a1b081aa4bd9e0d24611a"
P = "test/registered/unit/function_call/test_qwen25_detector.py"
SH = "sglang_hermes.jsonl"
QT = [tool("get_weather", {"city": {"type": "string", "description": "City name"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}),
      tool("search", {"query": {"type": "string", "description": "Search query"}})]


def sh(test, text, **kw):
    case(SH, "hermes", SGL, P, "TestQwen25Detector." + test, text, tools=QT, **kw)


BJ = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>'
sh("test_single_tool_call", BJ, calls=[("get_weather", {"city": "Beijing"})], content="")
sh("test_multiple_tool_calls", BJ + '\n<tool_call>\n{"name": "search", "arguments": {"query": "restaurants"}}\n</tool_call>',
   calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})], content="")
sh("test_tool_call_with_preceding_text", 'Let me check the weather.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Shanghai"}}\n</tool_call>',
   calls=[("get_weather", {"city": "Shanghai"})], content="Let me check the weather.")
sh("test_no_tool_call", "Hello, how can I help you today?", content="Hello, how can I help you today?")
sh("test_malformed_json", "<tool_call>\n{invalid json}\n</tool_call>", errors=1, content="",
   deliberate="SGLang skips the block silently; agentrl reports it as one error")
sh("test_tool_call_with_extra_whitespace", '<tool_call>\n  {"name": "get_weather", "arguments": {"city": "Tokyo"}}  \n</tool_call>',
   calls=[("get_weather", {"city": "Tokyo"})])
sh("test_streaming_single_call", '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Beijing"}}\n</tool_call>',
   calls=[("get_weather", {"city": "Beijing"})])
sh("test_streaming_normal_text_before_call", "Hello there! ", content="Hello there!")

write()

# ------------------------------------------------------------ SGLang hermes detector
COMMITS[(SGL, "test/registered/unit/function_call/test_hermes_detector.py")] = "08b62d5af91337eaee284ce14fb1ac284b0fa6ed"
P = "test/registered/unit/function_call/test_hermes_detector.py"


def shd(test, text, **kw):
    case(SH, "hermes", SGL, P, "TestHermesDetector." + test, text, tools=QT, **kw)


BJ2 = '<tool_call>{"name": "get_weather", "arguments": {"city": "Beijing"}}</tool_call>'
shd("test_single_tool_call", BJ2, calls=[("get_weather", {"city": "Beijing"})], content="")
shd("test_multiple_tool_calls", BJ2 + '<tool_call>{"name": "search", "arguments": {"query": "restaurants"}}</tool_call>',
    calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})])
shd("test_tool_call_with_leading_text", 'I will check the weather for you. <tool_call>{"name": "get_weather", "arguments": {"city": "Tokyo"}}</tool_call>',
    calls=[("get_weather", {"city": "Tokyo"})], content="I will check the weather for you.")
shd("test_no_tool_call", "The weather is nice today.", content="The weather is nice today.")
shd("test_tool_call_with_multiple_arguments", '<tool_call>{"name": "get_weather", "arguments": {"city": "London", "unit": "celsius"}}</tool_call>',
    calls=[("get_weather", {"city": "London", "unit": "celsius"})])
shd("test_malformed_json_returns_original_text", "<tool_call>not valid json</tool_call>", errors=1, content="",
    deliberate="SGLang returns no call and says nothing; agentrl reports the malformed block as one error")
shd("test_streaming_single_tool_call", '<tool_call>{"name": "get_weather", "arguments": {"city": "Beijing"}}</tool_call>',
    calls=[("get_weather", {"city": "Beijing"})])
shd("test_streaming_normal_text_before_tool", "Hello! Let me help. ", content="Hello! Let me help.")

write()

# ---------------------------------------------- SGLang malformed tool-call payloads
COMMITS[(SGL, "test/registered/unit/function_call/test_malformed_tool_call_payloads.py")] = "11d40db7c7a56360d0846fd38fe6d3d58ee97abb"
P = "test/registered/unit/function_call/test_malformed_tool_call_payloads.py"
SMP = "sglang_malformed_payloads.jsonl"
MW = [tool("get_weather", {"city": {"type": "string"}})]
WRAP = {"hermes": ("<tool_call>\n", "\n</tool_call>"), "llama3_json": ("<|python_tag|>", ""), "mistral": ("[TOOL_CALLS] [", "]")}
SG_NAME = {"hermes": "qwen25", "llama3_json": "llama3", "mistral": "mistral"}
for fmt, (bot, eot) in WRAP.items():
    for payload in ["[1, 2]", '["x"]', "[null]", "[[]]"]:
        text = bot + payload + eot
        kw = {}
        if fmt == "llama3_json":
            kw = dict(content=text.replace("<|python_tag|>", ""))
        else:
            kw = dict(errors=1, content="",
                      deliberate="SGLang returns no call silently; agentrl also returns no call and reports the non-object payload as one error")
        case(SMP, fmt, SGL, P, f"TestMalformedToolCallPayloads.test_non_object_array_entries_are_skipped[{SG_NAME[fmt]}-{payload}]",
             text, tools=MW, **kw)
case(SMP, "hermes", SGL, P, "TestMalformedToolCallPayloads.test_valid_call_survives_a_malformed_sibling[qwen25]",
     '<tool_call>\n[{"name": "get_weather", "arguments": {"city": "Paris"}}, "junk"]\n</tool_call>', tools=MW,
     calls=[("get_weather", {"city": "Paris"})], errors=1, content="",
     deliberate="SGLang drops the non-object sibling silently; agentrl keeps the valid call and reports the sibling as one error")

write()

# ------------------------------------------------------------ SGLang llama32 detector
COMMITS[(SGL, "test/registered/unit/function_call/test_llama32_detector.py")] = "08b62d5af91337eaee284ce14fb1ac284b0fa6ed"
P = "test/registered/unit/function_call/test_llama32_detector.py"
SL2 = "sglang_llama3_json.jsonl"


def sl(test, text, **kw):
    case(SL2, "llama3_json", SGL, P, "TestLlama32Detector." + test, text, tools=QT, **kw)


sl("test_single_tool_call_with_python_tag", '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Beijing"}}',
   calls=[("get_weather", {"city": "Beijing"})], content="")
sl("test_single_tool_call_without_python_tag", '{"name": "get_weather", "arguments": {"city": "Beijing"}}',
   calls=[("get_weather", {"city": "Beijing"})], content="")
sl("test_normal_text_before_python_tag", 'Let me check. <|python_tag|>{"name": "get_weather", "arguments": {"city": "Tokyo"}}',
   calls=[("get_weather", {"city": "Tokyo"})], content="Let me check.")
sl("test_no_tool_call", "The weather is nice today.", content="The weather is nice today.")
sl("test_multiple_json_objects", '<|python_tag|>{"name": "get_weather", "arguments": {"city": "Beijing"}};{"name": "search", "arguments": {"query": "restaurants"}}',
   calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})], content="")
sl("test_tool_call_with_multiple_arguments", '<|python_tag|>{"name": "get_weather", "arguments": {"city": "London", "unit": "celsius"}}',
   calls=[("get_weather", {"city": "London", "unit": "celsius"})])

# ------------------------------------------------------ SGLang zero-argument calls
COMMITS[(SGL, "test/registered/unit/function_call/test_zero_argument_tool_call.py")] = "1ee6e3ded6e263c1278741ce383e51f84e478141"
P = "test/registered/unit/function_call/test_zero_argument_tool_call.py"
SZ = "sglang_zero_argument.jsonl"
ZT = [tool("get_time", {}), tool("get_weather", {"city": {"type": "string"}})]
for test in ("test_zero_argument_call_streams_empty_object", "test_zero_argument_call_drains_the_buffer"):
    case(SZ, "hermes", SGL, P, "TestZeroArgumentToolCallStreaming." + test, '<tool_call>\n{"name": "get_time"}\n</tool_call>',
         tools=ZT, calls=[("get_time", {})], arguments_exact=["{}"], content="")
case(SZ, "hermes", SGL, P, "TestZeroArgumentToolCallStreaming.test_zero_argument_call_does_not_drop_the_next_call",
     '<tool_call>\n{"name": "get_time"}\n</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
     tools=ZT, calls=[("get_time", {}), ("get_weather", {"city": "Paris"})], arguments_exact=["{}", '{"city": "Paris"}'], content="")
case(SZ, "llama3_json", SGL, P, "TestZeroArgumentToolCallStreaming.test_json_array_parser_streams_empty_object",
     '[{"name": "get_time"}]', tools=ZT, calls=[("get_time", {})], arguments_exact=["{}"], content="",
     deliberate="SGLang's JsonArrayParser serves tool_choice=required for every model; agentrl reads the same JSON array form in llama3_json")

write()

# ------------------------------------------------------------ SGLang kimik2 detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_kimik2_detector.py")] = "5c57d4c3bcd7b2f9d5478c7a76e557c014211b7d"
P = "test/registered/unit/function_call/test_kimik2_detector.py"
SK2 = "sglang_kimi_k2.jsonl"
PATH_PARAMS = {"type": "object", "properties": {"path": {"type": "string", "description": "File path"}}, "required": ["path"]}
KT = [tool("ReadFile", top=PATH_PARAMS), tool("get_weather", {"city": {"type": "string"}, "unit": {"type": "string"}})]


def sk(test, text, tools=KT, **kw):
    case(SK2, "kimi_k2", SGL, P, test, text, tools=tools, **kw)


def kcall(name, idx, args):
    return f"{TB}functions.{name}:{idx}{TA}{args}{TE}"


sk("TestKimiK2DetectorBasic.test_single_tool_call", SEC_B + kcall("ReadFile", 0, '{"path": "/test.py"}') + SEC_E,
   calls=[("ReadFile", {"path": "/test.py"})], arguments_exact=['{"path": "/test.py"}'], content="")
sk("TestKimiK2DetectorBasic.test_multiple_tool_calls", SEC_B + kcall("ReadFile", 0, '{"path": "/a.py"}') + kcall("get_weather", 1, '{"city": "Tokyo"}') + SEC_E,
   calls=[("ReadFile", {"path": "/a.py"}), ("get_weather", {"city": "Tokyo"})], arguments_exact=[None, '{"city": "Tokyo"}'])
sk("TestKimiK2DetectorBasic.test_non_streaming_tool_index_is_local", SEC_B + kcall("ReadFile", 5, '{"path": "/a.py"}') + kcall("get_weather", 6, '{"city": "Tokyo"}') + SEC_E,
   calls=[("ReadFile", {"path": "/a.py"}), ("get_weather", {"city": "Tokyo"})])
sk("TestKimiK2DetectorBasic.test_normal_text_before_tool_call", "Let me check the file." + SEC_B + kcall("ReadFile", 0, '{"path": "/test.py"}') + SEC_E,
   calls=[("ReadFile", {"path": "/test.py"})], content="Let me check the file.")
sk("TestKimiK2DetectorBasic.test_no_tool_call", "Just a normal response.", content="Just a normal response.")
inv = 'invalid_tool:0<|tool_call_argument_begin|>{"path": "/tmp"}<|tool_call_end|><|tool_calls_section_end|>'
sk("TestKimiK2DetectorBasic.test_invalid_tool_call", inv, content=inv)
sk("TestKimiK2DetectorBasic.test_partial_tool_call_keeps_incomplete_json",
   SEC_B + TB + "functions.ReadFile:0" + TA + '{"path": "/tmp"', errors=1, content="",
   deliberate="the peer checks the partial streamed arguments; the finished text has an unclosed call, which agentrl reports as an error")
HT = [tool("mcp__portal__search-documents", top=PATH_PARAMS), tool("list-files", top=PATH_PARAMS)]
sk("TestKimiK2DetectorHyphenatedNames.test_hyphenated_name_non_streaming", SEC_B + kcall("mcp__portal__search-documents", 0, '{"path": "/docs"}') + SEC_E,
   tools=HT, calls=[("mcp__portal__search-documents", {"path": "/docs"})])
sk("TestKimiK2DetectorHyphenatedNames.test_hyphenated_name_streaming", SEC_B + kcall("list-files", 0, '{"path": "/home"}') + SEC_E,
   tools=HT, calls=[("list-files", {"path": "/home"})])
sk("TestKimiK2DetectorStreaming.test_streaming_trailing_literal_left_angle_is_not_dropped", "normal text <", tools=[],
   content="normal text <")
sk("TestKimiK2DetectorStreaming.test_streaming_single_tool_call", SEC_B + kcall("ReadFile", 0, '{"path": "/test.py"}') + SEC_E,
   calls=[("ReadFile", {"path": "/test.py"})], arguments_exact=['{"path": "/test.py"}'])
sk("TestKimiK2DetectorStreaming.test_streaming_multiple_tool_calls", SEC_B + kcall("ReadFile", 0, '{"path": "/a.py"}') + kcall("get_weather", 1, '{"city": "Paris"}') + SEC_E,
   calls=[("ReadFile", {"path": "/a.py"}), ("get_weather", {"city": "Paris"})])
sk("TestKimiK2DetectorStreaming.test_streaming_state_reset_after_completion", SEC_B + kcall("ReadFile", 0, '{"path": "/x"}') + SEC_E,
   calls=[("ReadFile", {"path": "/x"})])
sk("TestKimiK2DetectorSpecialTokenLeakage.test_no_leak_in_non_tool_text", "normal text<|tool_calls_section_end|>",
   tools=[tool("ReadFile", top=PATH_PARAMS)], content="normal text<|tool_calls_section_end|>",
   deliberate="SGLang's streaming path strips a stray section-end marker while its non-streaming path keeps such markers (test_invalid_tool_call); agentrl keeps a marker that closes nothing as text in both")
sk("TestKimiK2DetectorSpecialTokenLeakage.test_no_leak_of_argument_begin_token", "text<|tool_call_argument_begin|>more",
   tools=[tool("ReadFile", top=PATH_PARAMS)], content="text<|tool_call_argument_begin|>more",
   deliberate="SGLang's streaming path strips a stray argument marker; agentrl keeps text outside any call as written, as SGLang's non-streaming path does")

write()

# ------------------------------------------------------------ SGLang mistral detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_mistral_detector.py")] = "008b79d2358b08adf9b6c879625030f890c8c4e2"
P = "test/registered/unit/function_call/test_mistral_detector.py"


def smd(test, text, **kw):
    case(SM, "mistral", SGL, P, "TestMistralDetector." + test, text, tools=QT, **kw)


smd("test_json_array_single_tool_call", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Beijing"}}]',
    calls=[("get_weather", {"city": "Beijing"})], content="")
smd("test_json_array_multiple_tool_calls",
    '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Beijing"}}, {"name": "search", "arguments": {"query": "restaurants"}}]',
    calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})])
smd("test_json_array_with_leading_text", 'I will check. [TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Tokyo"}}]',
    calls=[("get_weather", {"city": "Tokyo"})], content="I will check.")
smd("test_compact_format_single_tool_call", '[TOOL_CALLS]get_weather[ARGS]{"city": "Beijing"}',
    calls=[("get_weather", {"city": "Beijing"})], content="")
smd("test_compact_format_with_leading_text", 'Let me help. [TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}',
    calls=[("get_weather", {"city": "Tokyo"})], content="Let me help.")
smd("test_no_tool_call", "The weather is nice today.", content="The weather is nice today.")
smd("test_tool_call_with_nested_json", '[TOOL_CALLS] [{"name": "get_weather", "arguments": {"city": "Beijing", "options": {"detailed": true}}}]',
    calls=[("get_weather", {"city": "Beijing", "options": {"detailed": True}})])
smd("test_json_array_with_invalid_json", "[TOOL_CALLS] [not valid json]", errors=1, content="",
    deliberate="SGLang returns no call and no text silently; agentrl returns the same and reports the invalid list as one error")
for test in ("test_streaming_compact_format",):
    smd(test, '[TOOL_CALLS]get_weather[ARGS]{"city": "Beijing"}', calls=[("get_weather", {"city": "Beijing"})], content="")
smd("test_streaming_normal_text_before_tool", "Let me check. ", content="Let me check.")
smd("test_streaming_text_then_tool_call", 'Sure! [TOOL_CALLS]get_weather[ARGS]{"city": "Tokyo"}',
    calls=[("get_weather", {"city": "Tokyo"})], content="Sure!")

write()

# ------------------------------------------------------------ SGLang pythonic detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_pythonic_detector.py")] = "00769caebd82b35bfb6f99ea634bc6de3f1c7a6f"
P = "test/registered/unit/function_call/test_pythonic_detector.py"


def spd(test, text, **kw):
    case(SP, "pythonic", SGL, P, "TestPythonicDetector." + test, text, tools=QT, **kw)


spd("test_single_tool_call_string_arg", "[get_weather(city='Tokyo')]", calls=[("get_weather", {"city": "Tokyo"})],
    arguments_exact=['{"city": "Tokyo"}'], content="")
spd("test_single_tool_call_int_arg", "[get_weather(city=123)]", calls=[("get_weather", {"city": 123})])
spd("test_positional_arguments_ignored", "[get_weather('Tokyo')]", errors=1, content="[get_weather('Tokyo')]",
    deliberate="SGLang drops the positional argument and calls get_weather with {}; agentrl reports the call as an error (arguments must be keyword=value), keeping the text as content")
spd("test_multiple_tool_calls", "[get_weather(city='Tokyo'), search(query='restaurants')]",
    calls=[("get_weather", {"city": "Tokyo"}), ("search", {"query": "restaurants"})],
    arguments_exact=['{"city": "Tokyo"}', '{"query": "restaurants"}'])
spd("test_tool_call_with_leading_text", "I will check the weather for you. [get_weather(city='Tokyo')]",
    calls=[("get_weather", {"city": "Tokyo"})], content="I will check the weather for you.")
spd("test_no_tool_call", "The weather is nice today.", content="The weather is nice today.")
spd("test_tool_call_with_dict_arg", "[search(query={'key': 'value', 'nested': {'a': 1}})]",
    calls=[("search", {"query": {"key": "value", "nested": {"a": 1}}})])
spd("test_tool_call_with_list_arg", "[search(query=['a', 'b', 'c'])]", calls=[("search", {"query": ["a", "b", "c"]})])
spd("test_unknown_tool_name_skipped", "[unknown_func(arg=1)]", errors=1, content="",
    deliberate="SGLang drops the call to an unknown tool silently; agentrl reports it as an error naming the available tools")
spd("test_malformed_python_returns_empty_calls", "[get_weather(city=)]", errors=1, content="[get_weather(city=)]",
    deliberate="SGLang returns no call silently; agentrl keeps the text as content and reports the malformed list as one error")
spd("test_no_bracket_returns_empty_calls", "get_weather(city='Tokyo')", content="get_weather(city='Tokyo')")
spd("test_streaming_single_tool_call_chunked", "[get_weather(city='Tokyo')]", calls=[("get_weather", {"city": "Tokyo"})])
spd("test_streaming_normal_text_before_tool", "Hello! Let me help. ", content="Hello! Let me help.")
spd("test_streaming_text_then_tool_call", "Sure, let me check. [get_weather(city='Tokyo')]",
    calls=[("get_weather", {"city": "Tokyo"})], content="Sure, let me check.")
spd("test_streaming_with_python_tokens", "<|python_start|>[get_weather(city='Tokyo')]<|python_end|>",
    calls=[("get_weather", {"city": "Tokyo"})], content="")
spd("test_streaming_incomplete_tool_call[leading text]", "Hello! [search(query=", content="Hello! [search(query=",
    deliberate="the peer checks what streaming holds back; when the turn ends there, agentrl returns the unfinished list as content")

write()

# --------------------------------------------------- SGLang qwen3_coder detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_qwen3_coder_detector.py")] = "0bbe61a61a1964be3758c1672c5522aa3aafdd6b"
P = "test/registered/unit/function_call/test_qwen3_coder_detector.py"
Q3T = [tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}})]


def qcall(city_block):
    return ("<tool_call>\n<function=get_weather>\n" f"<parameter=city>\n{city_block}\n"
            "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>")


def sqd(test, text, **kw):
    case(SQ2, "qwen3_coder", SGL, P, "TestQwen3CoderDetectorMalformedParameterEnd." + test, text, tools=Q3T, **kw)


for marker in ("</parameter1>", "</parameter_function>", "</parameter"):
    sqd(f"test_non_streaming_strips_drifted_end_marker[{marker}]", qcall(f"Shanghai\n{marker}"),
        calls=[("get_weather", {"city": "Shanghai", "days": 3})], content="")
sqd("test_streaming_strips_drifted_end_marker", qcall("Shanghai\n</parameter1>"), calls=[("get_weather", {"city": "Shanghai", "days": 3})])
sqd("test_well_formed_value_unchanged", qcall("Shanghai\n</parameter>"), calls=[("get_weather", {"city": "Shanghai", "days": 3})])
sqd("test_angle_brackets_inside_value_are_kept", qcall("a <b>tag</b> city\n</parameter>"), calls=[("get_weather", {"city": "a <b>tag</b> city", "days": 3})])
for value in ("<config>\n  <p>1</p>\n</parameters>", "x </parameterList>"):
    sqd(f"test_closed_value_ending_like_a_marker_is_kept[{value}]", qcall(f"{value}\n</parameter>"),
        calls=[("get_weather", {"city": value, "days": 3})])
long_value = "a" + " " * 100_000 + "b"
sqd("test_long_whitespace_run_in_unclosed_value_parses_in_linear_time",
    "<tool_call>\n<function=get_weather>\n" f"<parameter=city>\n{long_value}\n" "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
    calls=[("get_weather", {"city": long_value, "days": 3})])

write()

# --------------------------------------------------- SGLang deepseek_v3 detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_deepseekv3_detector.py")] = "0d6e6d3c761dd8aac6b15ec49d17be50e0403317"
P = "test/registered/unit/function_call/test_deepseekv3_detector.py"
DT = [tool("get_weather", {"city": {"type": "string", "description": "City name"}}), tool("search", {"query": {"type": "string", "description": "Search query"}})]


def sdd(test, text, **kw):
    case(S, "deepseek_v3", SGL, P, "TestDeepSeekV3Detector." + test, text, tools=DT, **kw)


S = "sglang_deepseek_v3.jsonl"
sdd("test_single_tool_call", SB + fence("get_weather", '{"city": "Beijing"}') + SE, calls=[("get_weather", {"city": "Beijing"})], content="")
sdd("test_multiple_tool_calls", SB + fence("get_weather", '{"city": "Beijing"}') + "\n" + fence("search", '{"query": "restaurants"}') + SE,
    calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})], content="")
sdd("test_tool_call_with_preceding_text", "Let me check that for you." + SB + fence("get_weather", '{"city": "Tokyo"}') + SE,
    calls=[("get_weather", {"city": "Tokyo"})], content="Let me check that for you.")
sdd("test_no_tool_call", "Hello, how can I help you today?", content="Hello, how can I help you today?")
sdd("test_malformed_json", SB + fence("get_weather", "{invalid}") + SE, errors=1, content="",
    deliberate="SGLang only asserts that it does not crash; agentrl reports the invalid JSON as one error")

write()

# --------------------------------------------------- SGLang glm4_moe detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_glm4_moe_detector.py")] = "33d0813d223177af28e4a7c668e8e9721e97b760"
P = "test/registered/unit/function_call/test_glm4_moe_detector.py"
GMT = [tool("get_weather", {"city": {"type": "string"}, "count": {"type": "number"}, "filters": {"type": "object"}}),
       tool("noop", {}), tool("search", {"query": {"type": "string"}})]


def wcall(*pairs):
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in pairs)
    return f"<tool_call>get_weather\n{body}</tool_call>"


def sgd(test, text, **kw):
    case(SGM, "glm45", SGL, P, "TestGlm4MoeDetector." + test, text, tools=GMT, **kw)


SEARCH_CAFES = "\n<tool_call>search\n<arg_key>query</arg_key>\n<arg_value>cafes</arg_value>\n</tool_call>"
sgd("test_schema_type_coercion", wcall(("city", "北京"), ("count", '"42"'), ("filters", '{"a": 1}')),
    calls=[("get_weather", {"city": "北京", "count": 42, "filters": {"a": 1}})],
    arguments_exact=['{"city": "北京", "count": 42, "filters": {"a": 1}}'], content="")
sgd("test_string_typed_digits_stay_string", wcall(("city", "123")), calls=[("get_weather", {"city": "123"})])
sgd("test_string_value_backslashes_preserved", wcall(("city", "C:\\Users\\test")), calls=[("get_weather", {"city": "C:\\Users\\test"})])
sgd("test_leading_text_preserved", "Let me check. " + wcall(("city", "Tokyo")), calls=[("get_weather", {"city": "Tokyo"})], content="Let me check.")
sgd("test_multiple_calls_parsed_in_order", wcall(("city", "Tokyo")) + SEARCH_CAFES,
    calls=[("get_weather", {"city": "Tokyo"}), ("search", {"query": "cafes"})], content="")
sgd("test_missing_name_separator_yields_no_calls", "<tool_call>get_weather</tool_call>", calls=[("get_weather", {})], content="",
    deliberate="SGLang requires a newline after the name; GLM-4.5's own template writes a call without arguments as <tool_call>NAME</tool_call> (see the glm45 round-trip golden), so agentrl reads it as a call with {}")
for label, text, calls in [
    ("typed_args", wcall(("city", "北京"), ("filters", '{"a": 1}'), ("count", "42")), [("get_weather", {"city": "北京", "filters": {"a": 1}, "count": 42})]),
    ("angle_bracket_in_value", wcall(("city", "a<b & c")), [("get_weather", {"city": "a<b & c"})]),
    ("quote_and_newline_in_value", wcall(("city", 'say "hi"\nok')), [("get_weather", {"city": 'say "hi"\nok'})]),
    ("two_calls", wcall(("city", "Tokyo")) + SEARCH_CAFES, [("get_weather", {"city": "Tokyo"}), ("search", {"query": "cafes"})]),
]:
    sgd(f"test_streaming_matches_non_streaming_at_small_chunk_sizes[{label}]", text, calls=calls, content="")
sgd("test_streaming_no_args_emits_empty_object", "<tool_call>noop\n</tool_call>", calls=[("noop", {})], arguments_exact=["{}"])
sgd("test_streaming_sequential_calls_get_distinct_indices", wcall(("city", "Tokyo")) + SEARCH_CAFES,
    calls=[("get_weather", {"city": "Tokyo"}), ("search", {"query": "cafes"})], content="")
sgd("test_streaming_never_emits_truncated_tool_name", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>x</arg_value>\n</tool_call>",
    calls=[("get_weather", {"city": "x"})])
sgd("test_streaming_plain_text_with_angle_brackets_passes_through", "a < b and c > d. done", content="a < b and c > d. done")
sgd("test_streaming_leading_text_then_call", "Let me check. " + wcall(("city", "Tokyo")), calls=[("get_weather", {"city": "Tokyo"})], content="Let me check.")

write()

# ------------------------------------------------------------ SGLang gpt_oss detector (unit)
COMMITS[(SGL, "test/registered/unit/function_call/test_gptoss_detector.py")] = "972e9107c3845b4147dc1e0dbecd021353536232"
P = "test/registered/unit/function_call/test_gptoss_detector.py"


def sgo(test, text, **kw):
    case(SGO, "gpt_oss", SGL, P, "TestGptOssDetector." + test, text, tools=QT, **kw)


GW_CALL = '<|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city":"Beijing"}<|call|>'
sgo("test_single_tool_call", GW_CALL, calls=[("get_weather", {"city": "Beijing"})], arguments_exact=['{"city":"Beijing"}'], content="")
sgo("test_normal_text_before_tool_call", "Let me check." + GW_CALL, calls=[("get_weather", {"city": "Beijing"})], content="Let me check.")
sgo("test_no_tool_call", "The weather is nice today.", content="The weather is nice today.")
sgo("test_multiple_tool_calls", GW_CALL + '<|start|>assistant<|channel|>commentary to=functions.search<|constrain|>json<|message|>{"query":"restaurants"}<|call|>',
    calls=[("get_weather", {"city": "Beijing"}), ("search", {"query": "restaurants"})], content="")
sgo("test_streaming_single_tool_call", GW_CALL, calls=[("get_weather", {"city": "Beijing"})])
sgo("test_streaming_normal_text_before_tool", "Let me check the weather. ", content="Let me check the weather.")
sgo("test_streaming_text_then_tool_call",
    'I\'ll look that up. <|start|>assistant<|channel|>commentary to=functions.get_weather<|constrain|>json<|message|>{"city":"Beijing", "unit":"celsius"}<|call|>',
    calls=[("get_weather", {"city": "Beijing", "unit": "celsius"})], content="I'll look that up.")

write()

# ------------------------------------------------ deepseek_v4 / deepseek_v41 (vLLM)
COMMITS[(VLLM, "tests/tool_parsers/test_deepseekv4_tool_parser.py")] = "023f36c62e71a247a9bacb7eb4cea5d55505cb63"
COMMITS[(VLLM, "tests/parser/engine/test_deepseek_v4.py")] = "0114e8484da27e4fedcac873fec05d480a494204"
COMMITS[(VLLM, "tests/parser/engine/test_deepseek_v41.py")] = "02579a5f38c5ed5211c01da7207a5c6fbc921423"
V4 = "vllm_deepseek_v4.jsonl"
V41 = "vllm_deepseek_v41.jsonl"
P = "tests/tool_parsers/test_deepseekv4_tool_parser.py"
TC_START, TC_END = "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>"
INV_START, INV_END = '<｜DSML｜invoke name="', "</｜DSML｜invoke>"
PARAM_START, PARAM_END = '<｜DSML｜parameter name="', "</｜DSML｜parameter>"


def v4_build_tool_call(func_name, params):
    # build_tool_call in the peer's test
    param_strs = "".join(f'{PARAM_START}{k}" string="true">{v}{PARAM_END}\n' for k, v in params.items())
    return f'{TC_START}\n{INV_START}{func_name}">\n{param_strs}{INV_END}\n{TC_END}'


case(V4, "deepseek_v4", VLLM, P, "test_extract_tool_calls",
     "Let me check. " + v4_build_tool_call("get_weather", {"location": "Beijing", "unit": "celsius"}),
     calls=[("get_weather", {"location": "Beijing", "unit": "celsius"})], content="Let me check.")
FC = v4_build_tool_call("search", {"query": "vllm"}).replace("tool_calls", "function_calls")
case(V4, "deepseek_v4", VLLM, P, "test_function_calls_block_is_not_accepted", FC, content=FC, errors=1,
     deliberate="vLLM keeps a V3.2 <｜DSML｜function_calls> block as content and says nothing; agentrl keeps it as content too and reports one error naming deepseek_v32, so that a model served with the wrong format is noticed")
case(V4, "deepseek_v4", VLLM, P, "test_streaming_extracts_complete_invokes",
     v4_build_tool_call("search", {"query": "deepseek v4"}), calls=[("search", {"query": "deepseek v4"})], content="")

# TestArgConverter exercises the peer's parameter converter on the text of
# an invoke's body; here each body is wrapped in one invoke of one block
# and parsed whole.
P = "tests/parser/engine/test_deepseek_v4.py"


def v4_param(name, is_str, value):
    return f'<｜DSML｜parameter name="{name}" string="{is_str}">{value}</｜DSML｜parameter>'


def v4_invoke(raw, name="f"):
    return f'{TC_START}{INV_START}{name}">{raw}{INV_END}{TC_END}'


def v4_raw(*params):
    return "\n" + "\n".join(v4_param(*p) for p in params) + "\n"


for test, params, want in [
    ("test_string_param", [("city", "true", "杭州")], {"city": "杭州"}),
    ("test_string_with_spaces_and_quotes", [("msg", "true", 'He said "hello world"')], {"msg": 'He said "hello world"'}),
    ("test_integer_param", [("count", "false", "42")], {"count": 42}),
    ("test_float_param", [("ratio", "false", "3.14")], {"ratio": 3.14}),
    ("test_bool_param", [("flag", "false", "true")], {"flag": True}),
    ("test_array_param", [("items", "false", '["a", "b", "c"]')], {"items": ["a", "b", "c"]}),
    ("test_object_param", [("opts", "false", '{"key": "val"}')], {"opts": {"key": "val"}}),
    ("test_mixed_types", [("location", "true", "Tokyo"), ("limit", "false", "10"), ("active", "false", "false")],
     {"location": "Tokyo", "limit": 10, "active": False}),
    ("test_invalid_json_fallback", [("data", "false", "[broken")], {"data": "[broken"}),
    ("test_chinese_chars_preserved_in_json", [("query", "true", "你好世界")], {"query": "你好世界"}),
    ("test_null_string_false", [("val", "false", "null")], {"val": None}),
    ("test_string_true_not_json_parsed", [("n", "true", "42")], {"n": "42"}),
]:
    case(V4, "deepseek_v4", VLLM, P, "TestArgConverter." + test, v4_invoke(v4_raw(*params)), calls=[("f", want)], content="")
case(V4, "deepseek_v4", VLLM, P, "TestArgConverter.test_empty_args", v4_invoke(""), calls=[("f", {})],
     arguments_exact=["{}"], content="")
case(V4, "deepseek_v4", VLLM, P, "TestArgConverter.test_next_parameter_prefix_implicitly_closes_previous",
     v4_invoke('<｜DSML｜parameter name="city" string="true">Tokyo\n<｜DSML｜parameter name='), errors=1, content="",
     deliberate="the peer drops the dangling '<｜DSML｜parameter name=' and keeps city='Tokyo\\n'; agentrl reports the call, whose last parameter is cut off, as one error for the model to fix")
case(V4, "deepseek_v4", VLLM, P, "TestArgConverter.test_implicit_close_preserves_malformed_text",
     v4_invoke('<｜DSML｜parameter name="city" string="true">Tokyo</｜DSML｜parameter\n'
               '<｜DSML｜parameter name="unit" string="true">celsius</｜DSML｜parameter>'),
     calls=[("f", {"city": "Tokyo</｜DSML｜parameter\n", "unit": "celsius"})], content="")
case(V4, "deepseek_v4", VLLM, P, "TestImplicitParameterClose.test_non_streaming_recovers_next_parameter",
     f'{TC_START}{INV_START}get_weather">\n<｜DSML｜parameter name="location" string="true">Paris '
     f'<｜DSML｜parameter name="date" string="true">tomorrow</｜DSML｜parameter>{INV_END}{TC_END}',
     calls=[("get_weather", {"location": "Paris ", "date": "tomorrow"})], content="")
case(V4, "deepseek_v4", VLLM, P, "TestMissingInvokeEnd.test_non_streaming",
     f'{TC_START}{INV_START}get_weather">\n{v4_param("location", "true", "NYC")}\n{TC_END}',
     calls=[("get_weather", {"location": "NYC"})], content="")
case(V4, "deepseek_v4", VLLM, P, "TestMissingInvokeEnd.test_streaming_with_trailing_content",
     f'{TC_START}{INV_START}get_weather">\n{v4_param("location", "true", "NYC")}\n{TC_END}Done.',
     calls=[("get_weather", {"location": "NYC"})], content="Done.")

P = "tests/parser/engine/test_deepseek_v41.py"
CALLS41 = (
    '\n\n<｜DSML｜ calls>\n<｜DSML｜ invoke name="get_weather">\n'
    '<｜DSML｜ parameter name="city" string="true">杭州</｜DSML｜ parameter>\n'
    '<｜DSML｜ parameter name="count" string="false">42</｜DSML｜ parameter>\n'
    '</｜DSML｜ invoke>\n<｜DSML｜ invoke name="add">\n'
    '<｜DSML｜ parameter name="x" string="false">1.5</｜DSML｜ parameter>\n'
    '<｜DSML｜ parameter name="y" string="false">2.25</｜DSML｜ parameter>\n'
    "</｜DSML｜ invoke>\n</｜DSML｜ calls>"
)
WANT41 = [("get_weather", {"city": "杭州", "count": 42}), ("add", {"x": 1.5, "y": 2.25})]
for thinking in (False, True):
    pre = "Plan.</think>" if thinking else ""
    case(V41, "deepseek_v41", VLLM, P, f"test_registered_adapters_parse_parallel_calls_across_chunks[thinking={thinking}]",
         pre + "Checking." + CALLS41, calls=WANT41, content="Checking.", think_aware=True)
    case(V41, "deepseek_v41", VLLM, P, f"test_registered_adapters_parse_complete_output[thinking={thinking}]",
         pre + CALLS41, calls=WANT41, content="", think_aware=True)
for text in ("</think>12", "Plan.</think>12"):
    case(V41, "deepseek_v41", VLLM, P, f"test_reasoning_adapter_controls_and_usage[{text}]", text, content="12", think_aware=True)
# test_python_argument_conversion_and_partial_values, its complete
# parameters (the last one is cut off mid-value: a streaming case)
case(V41, "deepseek_v41", VLLM, P, "test_python_argument_conversion_and_partial_values",
     '<｜DSML｜ calls><｜DSML｜ invoke name="f">'
     '<｜DSML｜ parameter name="object" string="false">{"a": [true, null]}</｜DSML｜ parameter>'
     '<｜DSML｜ parameter name="bad" string="false">[broken</｜DSML｜ parameter>'
     '<｜DSML｜ parameter name="bare">7</｜DSML｜ parameter>'
     "</｜DSML｜ invoke></｜DSML｜ calls>",
     calls=[("f", {"object": {"a": [True, None]}, "bad": "[broken", "bare": 7})], content="")

write()

# ------------------------------------------------ step3p5 (vLLM): qwen3_coder's XML
COMMITS[(VLLM, "tests/tool_parsers/test_step3p5_tool_parser.py")] = "0847a95f7ff542cb8c7e8b517841c5a29d84ff1f"
P = "tests/tool_parsers/test_step3p5_tool_parser.py"
ST = "vllm_step3p5.jsonl"
STEP_TOOLS = [
    tool("get_current_weather", {"city": {"type": "string"}, "state": {"type": "string"},
                                 "unit": {"type": "string", "enum": ["fahrenheit", "celsius"]}}),
    tool("calculate_area", {"shape": {"type": "string"}, "dimensions": {"type": "object"}, "precision": {"type": "integer"}}),
]


def step_call(name, *params):
    return ("<tool_call>\n<function=" + name + ">\n" + "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
            + "</function>\n</tool_call>")


DALLAS = step_call("get_current_weather", ("city", "Dallas"), ("state", "TX"), ("unit", "fahrenheit"))
W_DALLAS = ("get_current_weather", {"city": "Dallas", "state": "TX", "unit": "fahrenheit"})
RECT = step_call("calculate_area", ("shape", "rectangle"), ("dimensions", '{"width": 10, \n "height": 20}'), ("precision", "2"))
W_RECT = ("calculate_area", {"shape": "rectangle", "dimensions": {"width": 10, "height": 20}, "precision": 2})
CIRCLE = step_call("calculate_area", ("shape", "circle"), ("dimensions", '{"radius": 15.5}'), ("precision", "3"))
W_CIRCLE = ("calculate_area", {"shape": "circle", "dimensions": {"radius": 15.5}, "precision": 3})
ORLANDO = step_call("get_current_weather", ("city", "Orlando"), ("state", "FL"), ("unit", "fahrenheit"))
W_ORLANDO = ("get_current_weather", {"city": "Orlando", "state": "FL", "unit": "fahrenheit"})
case(ST, "step3p5", VLLM, P, "test_extract_tool_calls_no_tools", "This is a test response without any tool calls",
     content="This is a test response without any tool calls", tools=STEP_TOOLS)
for tid, text, calls, content in [
    ("single_tool", DALLAS, [W_DALLAS], ""),
    ("single_tool_with_content", "Sure! Let me check the weather for you." + DALLAS, [W_DALLAS], "Sure! Let me check the weather for you."),
    ("single_tool_multiline_param", RECT, [W_RECT], ""),
    ("parallel_tools", DALLAS + "\n" + ORLANDO, [W_DALLAS, W_ORLANDO], ""),
    ("tool_with_typed_params", "Let me calculate that area for you." + CIRCLE, [W_CIRCLE], "Let me calculate that area for you."),
]:
    case(ST, "step3p5", VLLM, P, f"test_extract_tool_calls[{tid}]", text, calls=calls, content=content, tools=STEP_TOOLS)
case(ST, "step3p5", VLLM, P, "test_extract_tool_calls_fallback_no_tags",
     "<function=get_current_weather>\n<parameter=city>\nDallas\n</parameter>\n<parameter=state>\nTX\n</parameter>\n</function>",
     calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})], tools=STEP_TOOLS)
TYPES_TOOL = [tool("test_types", {"int_param": {"type": "integer"}, "float_param": {"type": "float"}, "bool_param": {"type": "boolean"},
                                  "str_param": {"type": "string"}, "obj_param": {"type": "object"}})]
case(ST, "step3p5", VLLM, P, "test_extract_tool_calls_type_conversion",
     step_call("test_types", ("int_param", "42"), ("float_param", "3.14"), ("bool_param", "true"), ("str_param", "hello world"),
               ("obj_param", '{"key": "value"}')),
     calls=[("test_types", {"int_param": 42, "float_param": 3.14, "bool_param": True, "str_param": "hello world",
                            "obj_param": {"key": "value"}})], tools=TYPES_TOOL)

write()

# ------------------------------------------------ minimax_m2 (vLLM)
COMMITS[(VLLM, "tests/tool_parsers/test_minimax_m2_tool_parser.py")] = "0c927c3451653f28e60cd552cff13ddc3c9ff49e"
P = "tests/tool_parsers/test_minimax_m2_tool_parser.py"
MM = "vllm_minimax_m2.jsonl"


def vmm(test, chunks, **kw):
    # the peer streams the chunks; the turn is their concatenation
    case(MM, "minimax_m2", VLLM, P, test, "".join(chunks), **kw)


SEATTLE = '<minimax:tool_call><invoke name="get_weather"><parameter name="city">Seattle</parameter></invoke></minimax:tool_call>'
vmm("TestContentStreaming.test_plain_content", ["Hello ", "world"], content="Hello world")
vmm("TestContentStreaming.test_content_before_tool_call", ["Let me check. ", SEATTLE],
    calls=[("get_weather", {"city": "Seattle"})], content="Let me check.")
vmm("TestSingleInvoke.test_incremental_chunks", ["<minimax:tool_call>", '<invoke name="get_weather">',
    '<parameter name="city">Seattle</parameter>', "</invoke></minimax:tool_call>"],
    calls=[("get_weather", {"city": "Seattle"})], content="")
vmm("TestSingleInvoke.test_single_chunk_complete", [SEATTLE], calls=[("get_weather", {"city": "Seattle"})])
vmm("TestSingleInvoke.test_multiple_params", ["<minimax:tool_call>", '<invoke name="get_weather">',
    '<parameter name="city">Seattle</parameter>', '<parameter name="days">5</parameter>', "</invoke></minimax:tool_call>"],
    calls=[("get_weather", {"city": "Seattle", "days": "5"})])
vmm("TestMultipleInvokes.test_two_invokes_incremental", ["<minimax:tool_call>",
    '<invoke name="search_web"><parameter name="query">OpenAI</parameter></invoke>',
    '<invoke name="search_web"><parameter name="query">Gemini</parameter></invoke>', "</minimax:tool_call>"],
    calls=[("search_web", {"query": "OpenAI"}), ("search_web", {"query": "Gemini"})])
vmm("TestMultipleInvokes.test_two_invokes_in_single_delta", ["<minimax:tool_call>",
    '<invoke name="fn_a"><parameter name="x">1</parameter></invoke><invoke name="fn_b"><parameter name="y">2</parameter></invoke>',
    "</minimax:tool_call>"], calls=[("fn_a", {"x": "1"}), ("fn_b", {"y": "2"})])
vmm("TestMultipleInvokes.test_different_functions", ["<minimax:tool_call>",
    '<invoke name="get_weather"><parameter name="city">NYC</parameter></invoke>',
    '<invoke name="get_stock"><parameter name="ticker">AAPL</parameter></invoke>', "</minimax:tool_call>"],
    calls=[("get_weather", {"city": "NYC"}), ("get_stock", {"ticker": "AAPL"})])
vmm("TestInternalState.test_prev_tool_call_arr_single",
    ['<minimax:tool_call><invoke name="fn"><parameter name="a">1</parameter></invoke></minimax:tool_call>'],
    calls=[("fn", {"a": "1"})])
vmm("TestInternalState.test_prev_tool_call_arr_multiple", ["<minimax:tool_call>",
    '<invoke name="search"><parameter name="q">hello</parameter></invoke>',
    '<invoke name="search"><parameter name="q">world</parameter></invoke>', "</minimax:tool_call>"],
    calls=[("search", {"q": "hello"}), ("search", {"q": "world"})])
vmm("TestDeltaMessageFormat.test_tool_call_fields",
    ['<minimax:tool_call><invoke name="fn"><parameter name="k">v</parameter></invoke></minimax:tool_call>'],
    calls=[("fn", {"k": "v"})])
vmm("TestLargeChunks.test_header_and_params_in_separate_chunks", ['<minimax:tool_call><invoke name="get_weather">',
    '<parameter name="city">Seattle</parameter><parameter name="days">5</parameter></invoke></minimax:tool_call>'],
    calls=[("get_weather", {"city": "Seattle", "days": "5"})])
NICK = [tool("update_profile", {"nickname": {"anyOf": [{"type": "string"}, {"type": "null"}]}})]
vmm("TestAnyOfNullableParam.test_anyof_nullable_param_non_null_value",
    ['<minimax:tool_call><invoke name="update_profile"><parameter name="nickname">Alice</parameter></invoke></minimax:tool_call>'],
    tools=NICK, calls=[("update_profile", {"nickname": "Alice"})])
vmm("TestAnyOfNullableParam.test_anyof_nullable_param_null_value",
    ['<minimax:tool_call><invoke name="update_profile"><parameter name="nickname">null</parameter></invoke></minimax:tool_call>'],
    tools=NICK, calls=[("update_profile", {"nickname": None})])
vmm("TestAnyOfNullableParam.test_anyof_nullable_param_object_value",
    ['<minimax:tool_call><invoke name="update_settings"><parameter name="config">{"theme": "dark", "fontSize": 14}</parameter></invoke></minimax:tool_call>'],
    tools=[tool("update_settings", {"config": {"anyOf": [{"type": "object"}, {"type": "null"}]}})],
    calls=[("update_settings", {"config": {"theme": "dark", "fontSize": 14}})])

write()

# ------------------------------------------------ seed_oss (vLLM)
COMMITS[(VLLM, "tests/tool_parsers/test_seed_oss_tool_parser.py")] = "0f120751344c09af442c1800020908d2b7ff71f2"
P = "tests/tool_parsers/test_seed_oss_tool_parser.py"
SO = "vllm_seed_oss.jsonl"
SEED_TOOLS = [tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string"}})]
THINK_AS_REASONING = ("vLLM's tool parser returns the <seed:think> block as content (its reasoning parser splits it off "
                      "later); with ThinkAware agentrl returns it as Reasoning, so content is empty, and ignores a call "
                      "written inside it, as vLLM does")
case(SO, "seed_oss", VLLM, P, "test_extract_tool_calls_no_tools", "This is a test response without any tool calls",
     content="This is a test response without any tool calls")
SEED_CALL = "<seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, Spain</parameter>\n</function>\n</seed:tool_call>"
THINK_512 = (
    """<seed:think>The user\'s current thinking budget is 512.</seed:cot_budget_reflect>\nLet me analyze the """
    """question. The user wants to know the weather in Barcelona, Spain. Looking at the functions available, """
    """there\'s a get_weather function that can retrieve the current temperature for a given location. \n\nFirst, """
    """check the parameters required by get_weather: location is mandatory (needs city and country), and unit is """
    """optional. The user provided "Barcelona Spain" as the location, which fits the required format (city, """
    """country). \n<seed:cot_budget_reflect>I have used 131 tokens, and there are 381 tokens remaining for use."""
    """</seed:cot_budget_reflect>\n Since the unit isn\'t specified, the function will default to Celsius, which """
    """is fine. \n\nThere\'s no need to ask for more information because the location is clear. So I should call """
    """the get_weather function with location set to "Barcelona, Spain" (adding a comma for clarity, though the """
    """user\'s input has a space, but the function might accept either; to be safe, using the standard format """
    """with a comma).\n<seed:cot_budget_reflect>I have used 257 tokens, and there are 255 tokens remaining for """
    """use.</seed:cot_budget_reflect>\n The unit parameter can be omitted since it\'s optional.</seed:think>\n"""
)
THINK_UNLIMITED = (
    """<seed:think>\nGot it, let\'s see. The user asked for the weather in Barcelona, Spain. """
    """First, I need to remember the function I can use: get_weather. The function requires a """
    """location (city and country) which is "Barcelona, Spain" here, and unit is optional. Since """
    """the user didn\'t specify the unit, the default in the function is Celsius, right? Wait, """
    """let me check the function docstring again. Oh, the function says unit is optional, and """
    """returns temperature in Celsius. So I should call get_weather with location "Barcelona, """
    """Spain" and maybe omit unit or set to Celsius. Let me format the function call correctly. """
    """The format is <seed:tool_call>\n<function=get_weather>\n<parameter=location>Barcelona, """
    """Spain</parameter>\n<parameter=unit>celsius</parameter>\n</function>\n</seed:tool_call>. """
    """Wait, but does the unit parameter accept "celsius"? The docstring says unit is the unit """
    """of temperature, but the return is in Celsius anyway. Maybe even if I don\'t pass unit, """
    """it\'s okay, but to be explicit, maybe pass "celsius". Let me go with that. So the function """
    """call should be as above. Then wait for the result to come back and tell the user the """
    """temperature in Celsius.</seed:think>"""
)
BARCELONA = ("get_weather", {"location": "Barcelona, Spain"})
BARCELONA_C = ("get_weather", {"location": "Barcelona, Spain", "unit": "celsius"})
SEED_UNIT_CALL = ("<seed:tool_call>\n<function=get_weather>\n<parameter=location>"
                  "Barcelona, Spain</parameter>\n<parameter=unit>celsius</parameter>\n</function>\n</seed:tool_call>")
case(SO, "seed_oss", VLLM, P, "test_extract_tool_calls[tool_call_0_thinking_budget]", SEED_CALL,
     calls=[BARCELONA], arguments_exact=['{"location": "Barcelona, Spain"}'], content="", tools=SEED_TOOLS)
case(SO, "seed_oss", VLLM, P, "test_extract_tool_calls[tool_call_512_thinkg_budget]", THINK_512 + SEED_CALL,
     calls=[BARCELONA], content="", tools=SEED_TOOLS, think_aware=True, deliberate=THINK_AS_REASONING)
case(SO, "seed_oss", VLLM, P, "test_extract_tool_calls[tool_call_unlimited_thinking_budget]", THINK_UNLIMITED + SEED_UNIT_CALL,
     calls=[BARCELONA_C], arguments_exact=['{"location": "Barcelona, Spain", "unit": "celsius"}'], content="",
     tools=SEED_TOOLS, think_aware=True, deliberate=THINK_AS_REASONING)
# test_streaming_tool_calls's 0-budget case: the empty think block and its two budget tags
case(SO, "seed_oss", VLLM, P, "test_streaming_tool_calls[tool_call_0_thinking_budget]",
     "<seed:think>\n</seed:cot_budget_reflect>\n</seed:cot_budget_reflect>\n"
     "The current thinking budget is 0, so I will directly start answering the question.\n</seed:think>\n" + SEED_CALL,
     calls=[BARCELONA], content="", tools=SEED_TOOLS, think_aware=True, deliberate=THINK_AS_REASONING)

write()

# ------------------------------------------------ glm47 (vLLM, SGLang): glm45's grammar, compact
COMMITS[(VLLM, "tests/tool_parsers/test_glm47_moe_tool_parser.py")] = "0ce879769db6d7503db0ecdfb5b503b080720347"
COMMITS[(SGL, "test/registered/function_call/test_glm47_moe_detector.py")] = "143dd88794a729b254341dfd124f0513e6864a71"
P = "tests/tool_parsers/test_glm47_moe_tool_parser.py"
G47 = "vllm_glm47.jsonl"
G47_TOOLS = [tool("get_current_date", top={}), tool("get_weather", {"city": {"type": "string"}, "date": {"type": "string"}})]


def vg47(test, text, **kw):
    case(G47, "glm47", VLLM, P, "TestGlm47ExtractToolCalls." + test, text, tools=G47_TOOLS, **kw)


vg47("test_no_tool_call", "This is a plain response.", content="This is a plain response.")
vg47("test_zero_arg_inline", "<tool_call>get_current_date</tool_call>", calls=[("get_current_date", {})], content="")
vg47("test_zero_arg_newline", "<tool_call>get_current_date\n</tool_call>", calls=[("get_current_date", {})])
vg47("test_args_same_line", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>",
     calls=[("get_weather", {"city": "Beijing"})])
vg47("test_args_with_newlines", "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Beijing</arg_value>\n</tool_call>",
     calls=[("get_weather", {"city": "Beijing"})])
vg47("test_content_before", "Checking.<tool_call>get_current_date</tool_call>", calls=[("get_current_date", {})], content="Checking.")
vg47("test_multiple", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>"
     "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Shanghai</arg_value></tool_call>",
     calls=[("get_weather", {"city": "Beijing"}), ("get_weather", {"city": "Shanghai"})])
vg47("test_empty_content_none", "<tool_call>get_current_date</tool_call>", calls=[("get_current_date", {})], content="")
vg47("test_whitespace_content_none", "  \n  <tool_call>get_current_date</tool_call>", calls=[("get_current_date", {})], content="")

P = "test/registered/function_call/test_glm47_moe_detector.py"
SG47 = "sglang_glm47.jsonl"
SG47_TOOLS = [tool("get_weather", {"city": {"type": "string"}, "date": {"type": "string"}})]


def sg47(test, text, tools=SG47_TOOLS, **kw):
    case(SG47, "glm47", SGL, P, "TestGlm47MoeDetector." + test, text, tools=tools, **kw)


BJ = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value><arg_key>date</arg_key><arg_value>2024-06-27</arg_value></tool_call>"
SH = "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Shanghai</arg_value><arg_key>date</arg_key><arg_value>2024-06-28</arg_value></tool_call>"
sg47("test_single_tool_call", BJ, calls=[("get_weather", {"city": "Beijing", "date": "2024-06-27"})],
     arguments_exact=['{"city": "Beijing", "date": "2024-06-27"}'], content="")
sg47("test_multiple_tool_calls", BJ + SH, calls=[("get_weather", {"city": "Beijing", "date": "2024-06-27"}),
                                                  ("get_weather", {"city": "Shanghai", "date": "2024-06-28"})],
     arguments_exact=['{"city": "Beijing", "date": "2024-06-27"}', '{"city": "Shanghai", "date": "2024-06-28"}'], content="")
sg47("test_no_arg_function_non_streaming", "<tool_call>list_filenames</tool_call>", tools=[tool("list_filenames", {})],
     calls=[("list_filenames", {})])
sg47("test_invalid_tool_call", "<tool_call>invalid_func<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>", errors=1,
     deliberate="SGLang drops the call to an unknown tool silently; agentrl reports it as an error that lists the tools")
TODO_TOOLS = [tool("todo_write", {"todos": {"type": "array"}})]
TODOS = ('[{"id": "1", "task": "Check for hard-coded issues in the backend code", "status": "in_progress"}, '
         '{"id": "2", "task": "Check for hard-coded issues in the frontend code", "status": "pending"}, '
         '{"id": "3", "task": "Check for code violating the Single Responsibility Principle", "status": "pending"}, '
         '{"id": "4", "task": "Generate a rectification proposal report", "status": "pending"}]')
sg47("test_array_argument_with_escaped_json[normal]",
     "<tool_call>todo_write<arg_key>todos</arg_key><arg_value>" + TODOS + "</arg_value>\n</tool_call>", tools=TODO_TOOLS,
     calls=[("todo_write", {"todos": json.loads(TODOS)})])
sg47("test_array_argument_with_escaped_json[windows path]",
     '<tool_call>todo_write<arg_key>todos</arg_key><arg_value>[{"id": "1", "task": "Check file at C:\\\\Users\\\\test.txt", "status": "pending"}]</arg_value></tool_call>',
     tools=TODO_TOOLS, calls=[("todo_write", {"todos": [{"id": "1", "task": "Check file at C:\\Users\\test.txt", "status": "pending"}]})])
sg47("test_array_argument_with_escaped_json[literal backslash-n]",
     '<tool_call>todo_write<arg_key>todos</arg_key><arg_value>[{"id": "1", "task": "Print \\\\n to see newline","status": "pending"}]</arg_value></tool_call>',
     tools=TODO_TOOLS, calls=[("todo_write", {"todos": [{"id": "1", "task": "Print \\n to see newline", "status": "pending"}]})])
sg47("test_mtp_func_and_string_split",
     "I'll create a task.<tool_call>create_task<arg_key>title</arg_key><arg_value>Go to Beijing</arg_value>"
     "<arg_key>location</arg_key><arg_value>San Francisco</arg_value></tool_call>",
     tools=[tool("create_task", {"title": {"type": "string"}, "location": {"type": "string"}})],
     calls=[("create_task", {"title": "Go to Beijing", "location": "San Francisco"})], content="I'll create a task.")
sg47("test_mtp_noarg_and_multiple_calls",
     "<tool_call>list_files</tool_call><tool_call>get_weather<arg_key>city</arg_key><arg_value>Beijing</arg_value></tool_call>",
     tools=[tool("list_files", {}), tool("get_weather", {"city": {"type": "string"}})],
     calls=[("list_files", {}), ("get_weather", {"city": "Beijing"})])

write()

# ------------------------------------------------ gemma4 (vLLM, SGLang)
# vLLM's unit tests of _parse_gemma4_args / _parse_gemma4_array take the text
# between the braces; here each is wrapped in a whole call to f (arrays as the
# value of k), which is how such text reaches a parser.
COMMITS[(VLLM, "tests/tool_parsers/test_gemma4_tool_parser.py")] = "027004de3715411197be51ced325705abcf740a7"
COMMITS[(VLLM, "tests/tool_parsers/test_gemma4_regex_and_bare_calls.py")] = "33a7f0986ab85b31a5af305eb7e7b0b6ec03f406"
COMMITS[(SGL, "test/registered/unit/function_call/test_gemma4_detector.py")] = "1def55250d322723e39c49c14ef987c7fa119fb4"
P = "tests/tool_parsers/test_gemma4_tool_parser.py"
GM = "vllm_gemma4.jsonl"
Q = '<|"|>'


def gcall(name, args):
    return "<|tool_call>call:" + name + "{" + args + "}<tool_call|>"


def vg(test, text, **kw):
    case(GM, "gemma4", VLLM, P, test, text, **kw)


def vargs(test, args, want, **kw):
    vg("TestParseGemma4Args." + test, gcall("f", args), calls=[("f", want)], content="", **kw)


def varr(test, items, want, **kw):
    vg("TestParseGemma4Array." + test, gcall("f", "k:[" + items + "]"), calls=[("f", {"k": want})], content="", **kw)


vargs("test_empty_string", "", {}, arguments_exact=["{}"])
vargs("test_whitespace_only", "   ", {})
vargs("test_single_string_value", f"location:{Q}Paris{Q}", {"location": "Paris"})
vargs("test_string_value_with_comma", f"location:{Q}Paris, France{Q}", {"location": "Paris, France"})
vargs("test_multiple_string_values", f"location:{Q}San Francisco{Q},unit:{Q}celsius{Q}",
      {"location": "San Francisco", "unit": "celsius"}, arguments_exact=['{"location": "San Francisco", "unit": "celsius"}'])
vargs("test_integer_value", "count:42", {"count": 42}, arguments_exact=['{"count": 42}'])
vargs("test_float_value", "score:3.14", {"score": 3.14}, arguments_exact=['{"score": 3.14}'])
vargs("test_boolean_true", "flag:true", {"flag": True})
vargs("test_boolean_false", "flag:false", {"flag": False})
vargs("test_null_value", "param:null", {"param": None}, arguments_exact=['{"param": null}'])
vargs("test_mixed_types", f"name:{Q}test{Q},count:42,active:true,score:3.14",
      {"name": "test", "count": 42, "active": True, "score": 3.14})
vargs("test_nested_object", f"nested:{{inner:{Q}value{Q}}}", {"nested": {"inner": "value"}})
vargs("test_string_delimited_dict_key", f"record_map:{{{Q}3{Q}:{Q}new text{Q}}}", {"record_map": {"3": "new text"}})
vargs("test_nested_string_delimited_dict_key", f"outer:{{inner:{{{Q}3{Q}:{Q}new text{Q}}}}}",
      {"outer": {"inner": {"3": "new text"}}})
vargs("test_array_of_strings", f"items:[{Q}a{Q},{Q}b{Q}]", {"items": ["a", "b"]})
vg("TestParseGemma4Args.test_unterminated_string", gcall("f", f"key:{Q}unterminated"), errors=1, content="",
   deliberate="vLLM takes an unterminated string to the end of the arguments; agentrl reads <|\"|> strings whole, so "
              "the string swallows the closing }<tool_call|> and the call is reported unclosed")
vargs("test_empty_value", "key:", {"key": ""}, arguments_exact=['{"key": ""}'])
vargs("test_trailing_dot_float_partial_withheld[non-partial]", "left:108.,right:22.8", {"left": 108.0, "right": 22.8},
      arguments_exact=['{"left": 108.0, "right": 22.8}'])
# test_malformed_partial_array asserts only that a dict comes back; this is the dict vLLM builds
vargs("test_malformed_partial_array", ":[t:[]", {"": ["t:["]})
varr("test_string_array", f"{Q}a{Q},{Q}b{Q}", ["a", "b"])
varr("test_empty_array", "", [])
varr("test_bare_values", "42,true,3.14", [42, True, 3.14])
varr("test_string_element_with_closing_bracket", f"[{Q}a]b{Q},{Q}c{Q}],{Q}tail{Q}", [["a]b", "c"], "tail"])
varr("test_stray_closing_bracket", "42,]trailing", [42])

W = [tool("get_weather", {"location": {"type": "string"}, "unit": {"type": "string"}})]


def vx(test, text, **kw):
    vg("TestExtractToolCalls." + test, text, **kw)


vx("test_no_tool_calls", "Hello, how can I help you today?", content="Hello, how can I help you today?")
vx("test_single_tool_call", gcall("get_weather", f"location:{Q}London{Q}"), calls=[("get_weather", {"location": "London"})],
   tools=W, arguments_exact=['{"location": "London"}'], content="")
vx("test_multiple_arguments", gcall("get_weather", f"location:{Q}San Francisco{Q},unit:{Q}celsius{Q}"),
   calls=[("get_weather", {"location": "San Francisco", "unit": "celsius"})], tools=W)
vx("test_text_before_tool_call", "Let me check the weather for you. " + gcall("get_weather", f"location:{Q}Paris{Q}"),
   calls=[("get_weather", {"location": "Paris"})], content="Let me check the weather for you.")
vx("test_multiple_tool_calls", gcall("get_weather", f"location:{Q}London{Q}") + gcall("get_time", f"location:{Q}London{Q}"),
   calls=[("get_weather", {"location": "London"}), ("get_time", {"location": "London"})], content="")
vx("test_nested_arguments", gcall("complex_function", f"nested:{{inner:{Q}value{Q}}},list:[{Q}a{Q},{Q}b{Q}]"),
   calls=[("complex_function", {"nested": {"inner": "value"}, "list": ["a", "b"]})],
   arguments_exact=['{"nested": {"inner": "value"}, "list": ["a", "b"]}'])
vx("test_tool_call_with_number_and_boolean", gcall("set_status", "is_active:true,count:42,score:3.14"),
   calls=[("set_status", {"is_active": True, "count": 42, "score": 3.14})],
   arguments_exact=['{"is_active": true, "count": 42, "score": 3.14}'])
vx("test_incomplete_tool_call", f"<|tool_call>call:get_weather{{location:{Q}London", errors=1, content="",
   deliberate="vLLM returns an unclosed call's text as content; agentrl reports it as an error for the model to see "
              "and keeps the broken call out of the content")
vx("test_hyphenated_function_name", gcall("get-weather", f"location:{Q}London{Q}"), calls=[("get-weather", {"location": "London"})])
vx("test_dotted_function_name", gcall("weather.get", f"location:{Q}London{Q}"), calls=[("weather.get", {"location": "London"})])
vx("test_no_arguments", "<|tool_call>call:get_status{}<tool_call|>", calls=[("get_status", {})], arguments_exact=["{}"])


def vs(test, chunks, **kw):
    vg("TestStreamingExtraction." + test, "".join(chunks), **kw)


vs("test_basic_streaming_single_tool", ["<|tool_call>", "call:get_weather{", f"location:{Q}Paris", ", France", f"{Q}}}", "<tool_call|>"],
   calls=[("get_weather", {"location": "Paris, France"})], content="")
vs("test_streaming_multi_arg", ["<|tool_call>", "call:get_weather{", f"location:{Q}Tokyo{Q},", f"unit:{Q}celsius{Q}}}", "<tool_call|>"],
   calls=[("get_weather", {"location": "Tokyo", "unit": "celsius"})])
vs("test_streaming_no_extra_brace", ["<|tool_call>", "call:get_weather{", f"location:{Q}London{Q}}}", "<tool_call|>"],
   calls=[("get_weather", {"location": "London"})], arguments_exact=['{"location": "London"}'])
vs("test_streaming_text_before_tool_call", ["Let me check ", "the weather. ", "<|tool_call>", "call:get_weather{",
                                             f"location:{Q}London{Q}}}", "<tool_call|>"],
   calls=[("get_weather", {"location": "London"})], content="Let me check the weather.")
vs("test_streaming_numeric_args", ["<|tool_call>", "call:set_config{", "count:42,", "active:true}", "<tool_call|>"],
   calls=[("set_config", {"count": 42, "active": True})])
vs("test_streaming_boolean_split_across_chunks", ["<|tool_call>", "call:search{input:{all:" + "true"[:3], "e}}", "<tool_call|>"],
   calls=[("search", {"input": {"all": True}})])
vs("test_streaming_false_split_across_chunks", ["<|tool_call>", "call:set{flag:" + "false"[:4], "e}", "<tool_call|>"],
   calls=[("set", {"flag": False})])
vs("test_streaming_number_split_across_chunks", ["<|tool_call>", "call:set{count:4", "2}", "<tool_call|>"],
   calls=[("set", {"count": 42})])
vs("test_streaming_empty_args", ["<|tool_call>", "call:get_status{}", "<tool_call|>"], calls=[("get_status", {})])
vs("test_streaming_split_delimiter_no_invalid_json", ["<|tool_call>", "call:todowrite{", f"content:{Q}Buy milk<|", '"|>}', "<tool_call|>"],
   calls=[("todowrite", {"content": "Buy milk"})])
vs("test_streaming_does_not_duplicate_plain_text_after_tool_call",
   ["<|tool_call>", "call:get_weather{", f"location:{Q}Paris{Q}}}", "<tool_call|><", "div>"],
   calls=[("get_weather", {"location": "Paris"})], content="<div>")
vs("test_streaming_html_argument_does_not_duplicate_tag_prefixes",
   ["<|tool_call>", "call:write_file{", f"path:{Q}index.html{Q},", f"content:{Q}<!DOCTYPE html>\n<", 'html lang="zh-CN">\n<',
    "head>\n    <", 'meta charset="UTF-8">\n    <', 'meta name="viewport" content="width=device-width">\n', f"{Q}}}", "<tool_call|>"],
   calls=[("write_file", {"path": "index.html", "content": '<!DOCTYPE html>\n<html lang="zh-CN">\n<head>\n    <meta charset="UTF-8">\n'
                                                            '    <meta name="viewport" content="width=device-width">\n'})])
vs("test_streaming_trailing_bare_bool_not_duplicated",
   ["<|tool_call>", "call:Edit{", f"file_path:{Q}src/env.py{Q},", f"old_string:{Q}old_val{Q},", f"new_string:{Q}new_val{Q},",
    "replace_all:", "false}", "<tool_call|>"],
   calls=[("Edit", {"file_path": "src/env.py", "old_string": "old_val", "new_string": "new_val", "replace_all": False})],
   arguments_exact=['{"file_path": "src/env.py", "old_string": "old_val", "new_string": "new_val", "replace_all": false}'])

P = "tests/tool_parsers/test_gemma4_regex_and_bare_calls.py"
BARE = ("vLLM's offline helper (gemma4_utils.parse_tool_calls) falls back to calls written without <|tool_call>; "
        "agentrl reads only the envelope the template writes (vLLM's strict mode and its server parser do the same), "
        "so prose that mentions call:f{…} is not run as a call")


def vb(test, text, **kw):
    case(GM, "gemma4", VLLM, P, test, text, **kw)


vb("TestGemma4CanonicalFormats.test_canonical_tag_wrapped_call", gcall("bash", f"command:{Q}ls -la /work{Q}"),
   calls=[("bash", {"command": "ls -la /work"})], content="")
vb("TestGemma4CanonicalFormats.test_turn_end_closure_instead_of_tool_call_end",
   f"<|tool_call>call:gdb{{args:{Q}-batch -ex run /tmp/poc{Q}}}<turn|>", errors=1, content="",
   deliberate="vLLM's offline helper accepts <turn|> as the closer; agentrl requires <tool_call|> (its server parser does too) "
              "and reports the call")
vb("TestGemma4CanonicalFormats.test_multiple_sequential_canonical_calls",
   gcall("read_file", f"path:{Q}/work/Makefile{Q}") + "\n" + gcall("bash", f"command:{Q}make -j8{Q}"),
   calls=[("read_file", {"path": "/work/Makefile"}), ("bash", {"command": "make -j8"})], content="")
vb("TestGemma4CanonicalFormats.test_strict_mode_ignores_fallback_formats[strict=True]", f"<channel|>call:bash{{command:{Q}ls{Q}}}",
   content=f"<channel|>call:bash{{command:{Q}ls{Q}}}")
THOUGHT = "<|channel>thought\nI need to read the entry source file to inspect the crash point.\n<channel|>"
for test, text in [
    ("TestGemma4FallbackFormats.test_bare_call_after_thought_channel", THOUGHT + f"call:bash{{command:{Q}cat /work/src/entry.c{Q}}}"),
    ("TestGemma4FallbackFormats.test_bare_call_with_leading_whitespace", f"some prose\ncall:bash{{command:{Q}make -j8{Q}}}"),
    ("TestGemma4FallbackFormats.test_fragmented_call_tag_from_multimodal", f"<call>get_weather{{city:{Q}Paris{Q}}}"),
    ("TestGemma4FallbackFormats.test_hyphenated_tool_name", f"call:web-search{{query:{Q}gemma 4 release{Q}}}"),
    ("TestGemma4FallbackFormats.test_dotted_tool_name", f"call:fs.read_file{{path:{Q}/work/Makefile{Q}}}"),
]:
    vb(test, text, content=text.strip(), deliberate=BARE)
vb("TestGemma4FallbackFormats.test_colon_prefixed_tool_call", f"<|tool_call>:call:bash{{command:{Q}pytest{Q}}}", errors=1, content="",
   deliberate="vLLM's offline helper skips a stray colon after <|tool_call>; agentrl reports the malformed call")
vb("TestGemma4FallbackFormats.test_no_tool_call_returns_empty", "Just some reasoning text with no call in it.",
   content="Just some reasoning text with no call in it.")

P = "test/registered/unit/function_call/test_gemma4_detector.py"
SGM = "sglang_gemma4.jsonl"
for payload, want in [
    (f"[{Q}a]b{Q},{Q}c{Q}],{Q}tail{Q}", [["a]b", "c"], "tail"]),
    (f"[{Q}a[b{Q},{Q}c{Q}],{Q}tail{Q}", [["a[b", "c"], "tail"]),
    (f"[{Q}a[b]c{Q},{Q}d{Q}]", [["a[b]c", "d"]]),
]:
    case(SGM, "gemma4", SGL, P, "TestGemma4ArrayParser.test_nested_array_string_elements_with_brackets[" + payload + "]",
         gcall("f", "k:[" + payload + "]"), calls=[("f", {"k": want})], content="")
case(SGM, "gemma4", SGL, P, "TestGemma4ArrayParser.test_stray_closing_bracket_terminates", gcall("f", "k:[42,]trailing]"),
     calls=[("f", {"k": [42]})], content="")

write()

# ------------------------------------------------ kimi_k3 (SGLang, vLLM)
COMMITS[(SGL, "test/registered/unit/function_call/test_kimik3_detector.py")] = "5c57d4c3bcd7b2f9d5478c7a76e557c014211b7d"
COMMITS[(VLLM, "tests/tool_parsers/test_kimi_k3_tool_parser.py")] = "b635426178304eb2cfc58d9ef606778f5a58cb20"
P = "test/registered/unit/function_call/test_kimik3_detector.py"
K3 = "sglang_kimi_k3.jsonl"
# sglang/srt/function_call/kimik3_format.py
K3_RESPONSE_OPEN, K3_RESPONSE_CLOSE = "<|open|>response<|sep|>", "<|close|>response<|sep|>"
K3_TOOLS_OPEN, K3_TOOLS_CLOSE = "<|open|>tools<|sep|>", "<|close|>tools<|sep|>"
K3_MESSAGE_CLOSE = "<|close|>message<|sep|>"
K3_TOOLS = [tool("python", {"code": {"type": "string"}})]


def k3_call_block(name, index, args):
    parts = [f'<|open|>call tool="{name}" index="{index}"<|sep|>']
    for key, (arg_type, value) in args.items():
        parts.append(f'<|open|>argument key="{key}" type="{arg_type}"<|sep|>{value}<|close|>argument<|sep|>')
    parts.append("<|close|>call<|sep|>")
    return "".join(parts)


def sk3(test, text, **kw):
    case(K3, "kimi_k3", SGL, P, test, text, **kw)


sk3("test_detect_and_parse_single_call",
    f"{K3_RESPONSE_OPEN}Let me run it.{K3_RESPONSE_CLOSE}{K3_TOOLS_OPEN}"
    + k3_call_block("python", 1, {"code": ("string", "print(1)"), "opts": ("object", '{"a": 1}')}) + K3_TOOLS_CLOSE,
    calls=[("python", {"code": "print(1)", "opts": {"a": 1}})], content="Let me run it.", tools=K3_TOOLS,
    arguments_exact=['{"code": "print(1)", "opts": {"a": 1}}'])
sk3("test_detect_and_parse_no_tools_channel", f"{K3_RESPONSE_OPEN}hi there{K3_RESPONSE_CLOSE}{K3_MESSAGE_CLOSE}",
    content="hi there", tools=K3_TOOLS)
sk3("test_detect_and_parse_multiple_calls",
    K3_TOOLS_OPEN + k3_call_block("python", 1, {"code": ("string", "a")}) + k3_call_block("python", 2, {"code": ("string", "b")}) + K3_TOOLS_CLOSE,
    calls=[("python", {"code": "a"}), ("python", {"code": "b"})], content="", tools=K3_TOOLS)
sk3("test_detect_and_parse_unclosed_tools_section", K3_TOOLS_OPEN + k3_call_block("python", 1, {"code": ("string", "x")}),
    calls=[("python", {"code": "x"})], content="", tools=K3_TOOLS)
sk3("test_attr_unescaping_and_raw_string_args",
    f'{K3_TOOLS_OPEN}<|open|>call tool="a&amp;b" index="1"<|sep|><|open|>argument key="q" type="string"<|sep|>'
    f'say &quot;hi&quot;<|close|>argument<|sep|><|close|>call<|sep|>{K3_TOOLS_CLOSE}',
    calls=[("a&b", {"q": "say &quot;hi&quot;"})], content="")
sk3("test_non_string_arg_json_decoding",
    K3_TOOLS_OPEN + k3_call_block("python", 1, {"n": ("number", "42"), "flag": ("boolean", "true"), "bad": ("object", "{not json")}) + K3_TOOLS_CLOSE,
    calls=[("python", {"n": 42, "flag": True, "bad": "{not json"})], arguments_exact=['{"n": 42, "flag": true, "bad": "{not json"}'])
sk3("test_streaming_split_markers",
    f"{K3_RESPONSE_OPEN}Hello!{K3_RESPONSE_CLOSE}{K3_TOOLS_OPEN}" + k3_call_block("python", 1, {"code": ("string", "print(2)")}) + K3_TOOLS_CLOSE,
    calls=[("python", {"code": "print(2)"})], content="Hello!", tools=K3_TOOLS)
sk3("test_streaming_plain_text_only", "just a plain reply", content="just a plain reply")
sk3("test_stream_end_reports_truncated_tools_section", K3_TOOLS_OPEN + '<|open|>call tool="python" index="1"<|sep|>',
    errors=1, content="", tools=K3_TOOLS,
    deliberate="SGLang logs a warning and drops the truncated call; agentrl reports it as an error for the model")

P = "tests/tool_parsers/test_kimi_k3_tool_parser.py"
case("vllm_kimi_k3.jsonl", "kimi_k3", VLLM, P, "test_streaming_content_stops_at_message_close",
     "Hello" + K3_MESSAGE_CLOSE, content="Hello")

write()
