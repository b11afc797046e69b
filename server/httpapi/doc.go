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
//     template, tool-call parser, SSE streaming), GET /v1/models.
//
// The server binds 127.0.0.1 unless told otherwise (and logs a warning when
// bound beyond loopback without a token), can require a bearer token
// (compared in constant time), limits request bodies (413) and the bytes
// of all bodies being read at once (429), stops reading a token-id prompt
// once it passes the context, caps stop_token_ids, bounds the
// time to send headers, body (408) and to read the response, closes idle
// connections, caps open connections and requests in flight (429, health
// checks exempt), refuses cross-site browser requests (Origin check; Host
// check against DNS rebinding when there is no token), takes control
// endpoints only as application/json, loads weights only from directories
// the operator allowed, cancels a request's generation when its client
// disconnects, and shuts down gracefully: in-flight requests finish, or are cancelled when the shutdown
// deadline passes. Sampling settings it cannot honour (on the native
// endpoints n > 1 and stop strings; penalties other than repetition,
// constrained decoding) are rejected with 400 rather than ignored.
//
// Streamed responses (stream: true on /generate, /inference/v1/generate,
// /v1/completions and /v1/chat/completions) send tokens as the engine
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
