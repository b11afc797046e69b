// Package parser turns one assistant turn into content, reasoning and tool
// calls, by format name (as verl's multi_turn.format):
//
//   - hermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
//     (Qwen2.5, Qwen3, many fine-tunes)
//   - qwen3_coder: <tool_call><function=NAME><parameter=P>value</parameter>
//     </function></tool_call>, values converted by the tool schema's types
//   - llama3_json: {"name": ..., "parameters": {...}}, optionally after
//     <|python_tag|>, several separated by ";"
//   - deepseek_v3: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function
//     <｜tool▁sep｜>NAME\n```json\n{...}\n```<｜tool▁call▁end｜>…
//   - gpt_oss: harmony messages, calls addressed "to=functions.NAME"
//   - deepseek_v31: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{...}<｜tool▁call▁end｜>
//     (DeepSeek-V3.1: no call type, no json fence)
//   - deepseek_v32: DeepSeek-V3.2's DSML: <｜DSML｜invoke name="NAME"> with
//     <｜DSML｜parameter name="K" string="true|false">V</｜DSML｜parameter>
//   - kimi_k2: <|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{...}
//     <|tool_call_end|> inside <|tool_calls_section_begin|>…
//   - glm45: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>…
//     </tool_call> (GLM-4.5/4.6), values typed by the tool schema
//   - mistral: [TOOL_CALLS][{"name": ..., "arguments": {...}}] or
//     [TOOL_CALLS]NAME[ARGS]{...}
//   - pythonic: [f(a=1, b='x'), g()] (Llama-3.2 and Llama-4 pythonic)
//   - deepseek_v4: DeepSeek-V4's DSML, V3.2's invokes inside
//     <｜DSML｜tool_calls>…</｜DSML｜tool_calls>
//   - deepseek_v41: DeepSeek-V4.1's spaced DSML: <｜DSML｜ calls>,
//     <｜DSML｜ invoke name="NAME">, <｜DSML｜ parameter …>; each DSML format
//     reports another's block as an error naming the right format
//   - minimax_m2: <minimax:tool_call><invoke name="NAME"><parameter
//     name="K">V</parameter></invoke></minimax:tool_call>, values typed by
//     the tool schema
//   - seed_oss: qwen3_coder's XML inside <seed:tool_call>…</seed:tool_call>
//     (ByteDance Seed-OSS), reasoning in <seed:think>…</seed:think>
//   - gemma4: <|tool_call>call:NAME{k:<|"|>text<|"|>,n:1}<tool_call|>
//     (Google Gemma 4's own notation; <tool_call|> is the stop token),
//     reasoning in <|channel>thought…<channel|>
//   - kimi_k3: Kimi-K3's XTML channels: <|open|>tools<|sep|><|open|>call
//     tool="NAME" index="1"<|sep|><|open|>argument key="K"
//     type="string"<|sep|>V<|close|>argument<|sep|><|close|>call<|sep|>…,
//     reasoning in the think channel
//
// verl's, vLLM's and SGLang's names for the same formats are accepted too
// (Aliases: "gpt-oss" and "openai" for gpt_oss, "qwen25" for hermes, …).
//
// Each format's type documents its exact rules. Across formats:
//
// Malformed calls are never dropped: each one (bad JSON, missing name,
// unknown tool when Options.Tools is set, arguments that are not an
// object, an unclosed tag) comes back in Result.Errors with a short
// message meant to be shown to the model, next to the well-formed calls,
// and parsing resumes after it.
//
// Arguments are the exact JSON text the model wrote (key order, spacing,
// number spelling), except where the model serialized them itself as a
// JSON string (hermes: the object inside is taken), and for a gpt_oss tool
// that takes plain text (one JSON string). qwen3_coder's model writes XML parameters; its
// arguments are the JSON object vLLM's qwen3_coder parser would build,
// byte for byte (Python json.dumps formatting, schema-typed values).
//
// With Options.ThinkAware, text inside <think>…</think> is Reasoning and
// calls written there are ignored. A "</think>" with no "<think>" before it
// closes a block that began in the prompt (Qwen3 thinking templates and
// DeepSeek-R1 end the generation prompt with "<think>\n"), so everything
// before it is reasoning; an unclosed "<think>" makes the rest of the turn
// reasoning. gpt_oss always reports its analysis channel as Reasoning.
//
// A trailing end-of-turn marker kept by decoding with special tokens
// (<|im_end|>, <|eot_id|>, <｜end▁of▁sentence｜>, …) is not content.
// The peers' own tool-parser tests (vLLM, SGLang, verl) run against
// these parsers as data (testdata/peers): 517 ported cases, 79 of which
// expect agentrl's own behaviour where it differs on purpose, each with
// the reason. Mostly agentrl reports an error where a peer drops a call
// silently, keeps text a peer drops, or refuses arguments that are not a
// JSON object; the rest are streaming-state checks whose finished text
// agentrl parses whole.
//
// For text that arrives as it is generated, NewStream gives a Stream:
// Feed returns the content and the calls that are final so far, and Close
// returns the rest together with exactly the Result Parse gives for the
// whole text.
//
// Parse never panics, and its work is linear in the length of the text:
// no backtracking regular expressions, and no rescanning from each tag.
//
//	p, err := parser.New("hermes", parser.Options{ThinkAware: true})
//	if err != nil { ... }
//	res := p.Parse(text, nil)
//	for _, c := range res.Calls { ... }  // run them
//	for _, e := range res.Errors { ... } // show e.Message to the model
package parser
