// Package sglang is a client for SGLang's native HTTP API (and for
// sglang-router, or agentrl's httpapi, which speak it too): token-in/token-out
// generation through /generate with input_ids, rid and return_logprob, plus
// abort, health, memory release/resume, weight updates from disk, cache
// flushes and pause/continue.
//
// GenerateStream (server.Streamer) asks /generate for an event stream and
// hands out the tokens, with their logprobs, as the server sends them. SGLang
// streams either the whole output so far in every event (its default) or
// only the new tokens (--incremental-streaming-output); the client tells
// the two apart by the completion_tokens count each event carries and
// emits only what is new either way. Its result equals Generate's. Closing
// the stream (ctx ending) makes SGLang abort the request; an abort is sent
// too, as Generate does.
//
// Calls reuse connections (DefaultHTTPClient), carry the request id in
// X-SMG-Routing-Key for sticky routing, retry with exponential backoff and
// jitter only where resending cannot duplicate work (connect errors, 429 and
// 503 answers), abort the request on the server when the caller's context
// ends, and return a *server.Error naming the server, the operation and the
// HTTP status, wrapping one of the server package's sentinels.
//
//	c, err := sglang.New(sglang.Config{BaseURL: "http://10.0.0.5:30000"})
//	out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: ids,
//		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 512, Logprobs: true}})
package sglang
