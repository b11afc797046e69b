"""Chat-template fixtures and the conversations each is rendered with."""

QWEN_SPECIAL = {"bos_token": None, "eos_token": "<|im_end|>"}

FAMILY_TEMPLATES = {
    "qwen2_5": {"file": "qwen2_5.jinja", "special": QWEN_SPECIAL},
    "qwen3": {"file": "qwen3.jinja", "special": QWEN_SPECIAL},
    "deepseek_r1": {"file": "deepseek_r1_distill_qwen.jinja", "special": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}},
    "deepseek_v3_1": {"file": "deepseek_v3_1.jinja", "special": {"bos_token": "<｜begin▁of▁sentence｜>", "eos_token": "<｜end▁of▁sentence｜>"}},
    "gemma2": {"file": "gemma2.jinja", "special": {"bos_token": "<bos>", "eos_token": "<eos>"}},
    "gemma3": {"file": "gemma3.jinja", "special": {"bos_token": "<bos>", "eos_token": "<eos>"}},
    "mistral_nemo": {"file": "mistral_nemo.jinja", "special": {"bos_token": "<s>", "eos_token": "</s>"}},
    "mistral_small_3_2": {"file": "mistral_small_3_2.jinja", "special": {"bos_token": "<s>", "eos_token": "</s>"}},
    "glm_4_6": {"file": "glm_4_6.jinja", "special": {"bos_token": None, "eos_token": "<|endoftext|>"}},
    "granite_3_3": {"file": "granite_3_3.jinja", "special": {"bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>"}},
    "kimi_k2": {"file": "kimi_k2.jinja", "special": {"bos_token": "[BOS]", "eos_token": "[EOS]"}},
    "gpt_oss": {"file": "gpt_oss.jinja", "special": {"bos_token": "<|startoftext|>", "eos_token": "<|return|>"}},
    "llama3_1": {"shared": "testdata/tokenizers/llama3_1/tokenizer_config.json", "special": {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}},
}

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Paris"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"},
            "days": {"type": "integer", "description": "Forecast days"},
            "detailed": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "ratio": {"type": "number", "default": 0.5},
        }, "required": ["city"]},
    }},
    {"type": "function", "function": {
        "name": "search",
        "description": "Search the web; returns the top results.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"},
            "filters": {"type": "object", "properties": {"site": {"type": "string"}, "year": {"type": "integer"}}},
        }, "required": ["query"]},
    }},
]

SYS = {"role": "system", "content": "You are a careful assistant. Answer briefly."}
U1 = {"role": "user", "content": "What's the weather in Paris? Use °C — merci!"}
A_PLAIN = {"role": "assistant", "content": "It is sunny and 21 °C in Paris."}
U2 = {"role": "user", "content": "And tomorrow?"}

CALL_DICT = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "call00001", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius", "days": 2, "ratio": 0.75, "tags": ["a", "ü"]}}}]}
CALL_STR = {"role": "assistant", "content": "", "tool_calls": [
    {"id": "call00002", "type": "function", "function": {"name": "search", "arguments": "{\"query\": \"paris weather\", \"filters\": {\"year\": 2024}}"}}]}
TOOL_RES = {"role": "tool", "tool_call_id": "call00001", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"}
TOOL_RES2 = {"role": "tool", "tool_call_id": "call00002", "name": "search", "content": "Result: sunny <b>all week</b>"}
A_FINAL = {"role": "assistant", "content": "Tomorrow will be 23 °C and clear."}
A_THINK = {"role": "assistant", "content": "<think>\nThe user wants weather.\n</think>\n\nIt is sunny."}
A_REASONING = {"role": "assistant", "content": "It is sunny.", "reasoning_content": "Check the forecast first.", "thinking": "Check the forecast first."}

FAMILY_CONTEXTS = {
    "plain_gen": {"messages": [U1], "add_generation_prompt": True},
    "plain_nogen": {"messages": [U1, A_PLAIN], "add_generation_prompt": False},
    "system": {"messages": [SYS, U1], "add_generation_prompt": True},
    "multi_turn": {"messages": [SYS, U1, A_PLAIN, U2], "add_generation_prompt": True},
    "tools_only": {"messages": [U1], "tools": TOOLS, "add_generation_prompt": True},
    "tools_system": {"messages": [SYS, U1], "tools": TOOLS, "add_generation_prompt": True},
    "tool_call_dict": {"messages": [SYS, U1, CALL_DICT, TOOL_RES], "tools": TOOLS, "add_generation_prompt": True},
    "tool_call_string": {"messages": [U1, CALL_STR, TOOL_RES2], "tools": TOOLS, "add_generation_prompt": True},
    "tool_round_trip": {"messages": [SYS, U1, CALL_DICT, TOOL_RES, A_FINAL], "tools": TOOLS, "add_generation_prompt": False},
    "reasoning_history": {"messages": [U1, A_THINK, U2], "add_generation_prompt": True},
    "reasoning_field": {"messages": [U1, A_REASONING], "add_generation_prompt": False},
    "thinking_off": {"messages": [U1], "add_generation_prompt": True, "enable_thinking": False, "thinking": False},
    "thinking_on": {"messages": [U1], "add_generation_prompt": True, "enable_thinking": True, "thinking": True, "reasoning_effort": "high"},
    "bad_roles": {"messages": [U1, U2], "add_generation_prompt": True},
    "documents_controls": {"messages": [U1], "documents": [{"doc_id": 1, "text": "Paris is sunny."}, {"doc_id": "b", "text": "Lyon: rain."}],
                           "controls": {"citations": True, "hallucinations": True}, "add_generation_prompt": True},
    "content_parts": {"messages": [
        {"role": "system", "content": [{"type": "text", "text": "Parts system."}]},
        {"role": "user", "content": [{"type": "text", "text": "Look: "}, {"type": "image"}, {"type": "text", "text": " what is it?"}]},
    ], "add_generation_prompt": True},
    "parallel_calls": {"messages": [U1, {"role": "assistant", "content": "Checking both.", "tool_calls": [
        {"id": "call00003", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "call00004", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Lyon", "unit": "fahrenheit"}}}]},
        {"role": "tool", "tool_call_id": "call00003", "content": "21"},
        {"role": "tool", "tool_call_id": "call00004", "content": "70"}], "tools": TOOLS, "add_generation_prompt": True},
}
