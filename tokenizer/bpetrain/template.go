package bpetrain

// ChatTemplate is the ChatML + Hermes tool-calling template written into
// tokenizer_config.json, in the style of Qwen2.5's: tools are listed as JSON
// inside <tools></tools> in the system turn, the assistant calls them as
// <tool_call>{"name": ..., "arguments": ...}</tool_call>, and tool results
// come back as user turns wrapped in <tool_response></tool_response>.
//
// Unlike Qwen2.5 every tool result is its own user turn, so the template is
// append-only: each added message renders the same whatever follows it,
// which is what delta encoding (tokenizer.EncodeDelta) needs. The tool
// instructions are short because every prompt token costs a tiny model
// context and training time.
const ChatTemplate = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- '# Tools\n\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nTo call a function, reply with <tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'system' %}
        {%- if not loop.first %}
            {{- raise_exception('a system message is only allowed first') }}
        {%- endif %}
    {%- elif message.role == 'user' or (message.role == 'assistant' and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + (message.content or '') + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant' }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
            {%- if tool_call.arguments is string %}
                {{- tool_call.arguments }}
            {%- else %}
                {{- tool_call.arguments | tojson }}
            {%- endif %}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {{- '<|im_start|>user\n<tool_response>\n' + (message.content or '') + '\n</tool_response><|im_end|>\n' }}
    {%- else %}
        {{- raise_exception('unknown role: ' + message.role) }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
`
