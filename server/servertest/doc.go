// Package servertest is a scripted, deterministic server.LLMServer for tests
// and benchmarks of code that drives engines (agent loops, the router, the
// HTTP clients through httpapi). Replies come from a Rule (echo, constant,
// canned scripts per request id in token ids or in text, a model that
// reads its prompt as text, seeded random, or any func); latencies come
// from seeded distributions; faults (errors before any token, 503/429
// through httpapi, hangs until the context is done, aborts mid-way with
// partial tokens) are injected per call or server-wide; counters record
// calls and in-flight load. It is never used by production code.
//
//	srv := servertest.New(servertest.Config{
//		Rule:    servertest.Constant(5, 6, 7, 2),
//		Latency: servertest.LogNormal(20*time.Millisecond, 0.5),
//		Seed:    1,
//	})
//	srv.FaultNext(1, servertest.Unavailable()) // the first call fails with a 503-shaped error
//	out, err := srv.Generate(ctx, req)
//
// # As strict as the engines
//
// Every request goes through server.CheckRequest, the check the in-process
// engine runs, before the rule: an empty prompt, a negative MaxNewTokens
// or Temperature, TopP outside [0, 1], … fail with server.ErrBadRequest
// naming the field, so code that passes its tests here does not fail on a
// real engine. Config.Vocab adds the vocabulary bound on ids.
//
// # Request ids and turns
//
// The server follows server.GenerateRequest's request-id contract, the one
// agentloop keeps: one id per trajectory (agentloop sends the
// trajectory's id), reused on every turn and every resume. Per id it remembers the last call that returned, and
// Call.Turn says where a new call stands: a prompt equal to that call's
// prompt and output after an abort resumes the turn (the rest of the
// turn's reply is played, the rule does not run again); otherwise a prompt
// that starts with them is the next turn; anything else starts the
// conversation over at turn 0 (a new trajectory reusing the id). Failed calls are no turn. So
// Scripts and TextScripts advance once per model turn, whatever the
// preemptions and retries.
//
// # Text
//
// TextScripts and Text write the model's replies as text, encoded by a
// tokenizer (Encoder, Codec: *tokenizer.Tokenizer fits), markers
// included: "…</tool_call><|im_end|>" needs no hand-encoded ids.
// tokenizer/tokenizertest has a small tokenizer in Qwen's format for
// them.
package servertest
