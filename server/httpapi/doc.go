// Package httpapi serves any server.LLMServer over HTTP, so that tools
// written for SGLang or vLLM (and agentrl's own sglang and vllm clients) can
// drive an agentrl engine, a router or a test engine.
//
// Endpoints:
//   - SGLang native: POST /generate (token ids in, token ids, logprobs,
//     finish reason, cached tokens and weight version out), /abort_request,
//     GET /health, /health_generate, POST /flush_cache, /update_weights_from_disk,
//     /release_memory_occupation, /resume_memory_occupation,
//     /pause_generation, /continue_generation, /model_info.
//   - vLLM: POST /inference/v1/generate, /abort_requests, /pause, /resume,
//     /sleep, /wake_up, GET /is_sleeping, POST /reset_prefix_cache.
//   - OpenAI: POST /v1/completions (token-id prompts always; text prompts
//     with Config.Chat), POST /v1/chat/completions (with Config.Chat: chat
//     template, tool-call parser, SSE streaming), POST /v1/responses (the
//     Responses API, with Config.Chat), GET /v1/models.
//   - Anthropic: POST /v1/messages and /v1/messages/count_tokens (the
//     Messages API, with Config.Chat).
//
// Chat completions, Responses and Messages are dialects of one path
// (conversation.go): each decoder maps its wire request onto a
// conversation, which is rendered, encoded and budgeted once, and every
// dialect's reply is written from one turn (the parsed content,
// reasoning, tool calls, stop and usage), streamed by one producer. The
// same conversation gives the engine the same prompt ids through all
// three.
//
// Messages honours: system as a string or text blocks, and role "system"
// (or "developer") entries in messages; text, thinking,
// redacted_thinking (dropped), tool_use (input as the arguments object)
// and tool_result blocks (content a string, or text and image blocks;
// is_error is accepted, and the result's text is what the model sees);
// image blocks (base64 or URL sources) in user turns and tool results
// with Chat.Images (VisionImages for a Qwen-VL model), where
// Responses' input_image parts, in messages and function_call_output,
// and chat's image_url parts go too; client tools
// (input_schema as the parameters); tool_choice auto, any, tool and none
// (validated, not constrained, as chat's required); max_tokens
// (required), stop_sequences, temperature, top_p, top_k, agentrl's seed
// and request_id; thinking: enabled and adaptive keep the template's
// default, disabled renders with enable_thinking=false (budget_tokens is
// not enforced); metadata.user_id and the x-claude-code-session-id header
// as session keys (Config.SessionKeys); cache_control anywhere is
// ignored. Replies carry thinking (when Chat.Reasoning splits it), text
// and tool_use blocks (ids "toolu_…", message ids "msg_…"), stop_reason
// end_turn, tool_use, stop_sequence (with the string) or max_tokens (also
// for an engine abort), and usage with the prefix-cache hits as
// cache_read_input_tokens. Streams send message_start, ping,
// content_block_start/delta/stop per block (text_delta, thinking_delta,
// each tool call whole as one input_json_delta), message_delta and
// message_stop; an engine failure after the first event is an error
// event. Text a model writes after a call (parsers drop the whitespace
// between calls) opens a new text block in the stream, while the
// non-streamed reply has one text block before the calls. Refused (400, naming the field): server tools (a versioned
// "type"), mcp_servers, structured outputs (output_config.format),
// documents, images without Chat.Images, a final assistant message
// (prefill). Errors on
// /v1/messages… are {"type":"error","error":{"type","message"}} with the
// SDK's error types, also those the server answers before routing
// (auth, origin, load); the token is read from x-api-key or the bearer
// header on every endpoint.
//
// The server binds 127.0.0.1 unless told otherwise (and logs a warning when
// bound beyond loopback without a token), can require a token (bearer or
// x-api-key, compared in constant time), limits request bodies (413) and
// the bytes of all bodies being read at once (429), stops reading a
// token-id prompt once it passes the context, caps stop_token_ids, bounds the
// time to send headers, body (408) and to read the response, closes idle
// connections, caps open connections and requests in flight (429, health
// checks exempt), refuses cross-site browser requests (Origin check; Host
// check against DNS rebinding when there is no token), takes control
// endpoints only as application/json or with no body at all (as SGLang's
// clients post them; refused when Sec-Fetch-Site is cross-site), loads weights only from directories
// the operator allowed, cancels a request's generation when its client
// disconnects, and shuts down gracefully: in-flight requests finish, or are cancelled when the shutdown
// deadline passes. Sampling settings it cannot honour (on the native
// endpoints n > 1 and stop strings; constrained decoding) are rejected
// with 400 rather than ignored. Top logprobs (up to
// server.MaxTopLogprobs: chat's top_logprobs, Responses' top_logprobs with
// include message.output_text.logprobs, SGLang's top_logprobs_num, vLLM's
// logprobs above 1) are the engine's alternatives, from the distribution
// each token was drawn from; the presence and frequency penalties are
// vLLM's, over the output. Their ranges are server.SamplingParams.Validate's,
// named as each dialect names the field. An engine that returns no
// alternatives when asked is a 501, not a reply without them.
//
// /v1/responses takes codex's namespace tools (a name, a description and
// function tools): the model sees each function as namespace__name (one
// "__" when the namespace already ends in it), and a call to it comes back
// with name and namespace apart, as the Responses API reports it.
//
// Streamed responses (stream: true on /generate, /inference/v1/generate,
// /v1/completions, /v1/chat/completions, /v1/responses and /v1/messages)
// send tokens as the engine
// samples them when it implements server.Streamer, each endpoint in its
// upstream's shape; see stream.go. OpenAI stop strings hold back only the
// text that may still start one and end the generation where one
// completes; n > 1 streams the samples interleaved, each naming its index.
//
// A Config.Recorder (see capture_hook.go) is told of every chat,
// Responses and Messages call once its prompt is rendered, may give the
// engine another prompt (a continuation's exact ids), and records each
// answer before the answer is complete on the wire; package capture is
// one.
//
//	srv, err := httpapi.Start(engine, httpapi.Config{AuthToken: token})
//	if err != nil { ... }
//	defer srv.Shutdown(ctx)
//	fmt.Println("serving on", srv.URL())
package httpapi
