// Package vllm is a client for vLLM's token-in/token-out HTTP API
// (/inference/v1/generate), falling back to /v1/completions with a token-id
// prompt and return_token_ids on builds without it; plus /abort_requests,
// /pause, /resume, /sleep, /wake_up, /is_sleeping, /reset_prefix_cache and
// /health. Logprobs are read defensively: vLLM's shapes changed between
// versions (content entries with token_id, or "token_id:N" tokens).
//
// Requests with images (server.GenerateRequest.Vision) go to
// /inference/v1/generate with "features": each image's item (hash,
// placeholder range, kwargs_data) is made by vLLM's own render step,
// /v1/chat/completions/render on a chat of that image alone, cached by the
// image's digest, and placed on the request's block of the image; the ids
// sent are the trajectory's. An image whose count vLLM's processor gives
// differently from the request's block is an error, as is a build without
// the render step or /inference/v1/generate (see vision.go).
//
// GenerateStream (server.Streamer) asks the same endpoint for an event
// stream (with stream_options include_usage) and hands out each event's new
// tokens and logprobs as they arrive; its result equals Generate's. Builds
// whose /inference/v1/generate does not stream yet answer the whole
// response, which is emitted as one chunk. Closing the stream (ctx ending)
// makes vLLM abort the request; an abort is sent too, as Generate does.
//
// Calls reuse connections (DefaultHTTPClient), carry the request id in
// X-Session-ID for vllm-router's sticky routing, retry with exponential
// backoff and jitter only where resending cannot duplicate work (connect
// errors, 429 and 503 answers), abort the request on the server when the
// caller's context ends, and return a *server.Error naming the server, the
// operation and the HTTP status, wrapping one of the server package's
// sentinels.
//
//	c, err := vllm.New(vllm.Config{BaseURL: "http://10.0.0.5:8000"})
//	out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: ids,
//		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 512, Logprobs: true}})
package vllm
