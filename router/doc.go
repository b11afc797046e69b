// Package router spreads token-in/token-out generation over many
// server.LLMServer instances (SGLang or vLLM fleets, in-process engines) and
// is itself a server.LLMServer, so an agent loop takes a Router where it
// would take one server.
//
// Placement of each call, in order:
//
//   - Sticky sessions: all turns with the same RequestID go to the server of
//     the previous turn (an LRU of request ids), so its prefix cache holds
//     the conversation. A sticky server that was ejected or removed is
//     replaced (counted as a repick).
//   - Imbalance gate: a new turn leaves its sticky server for the least
//     loaded one when the sticky server's in-flight count exceeds the
//     least's by both Config.BalanceAbs and the factor Config.BalanceRel
//     (counted as a move), so stickiness cannot starve the long tail.
//   - Group affinity: the first turn of a sample with a GroupID joins the
//     server its group's first sample picked (prefix-cache reuse across a
//     GRPO group), unless the same gate says that server is too loaded.
//   - Otherwise the least-loaded server: fewest calls in flight, counted on
//     every attempt and released on completion, error or cancellation, kept
//     in a heap whose entry is fixed on every acquire and release.
//
// Config.Deterministic replaces load-based placement with rendezvous
// hashing of the group or request id over the healthy servers, for
// reproducible runs.
//
// Health: a server that fails Config.FailureThreshold consecutive calls is
// ejected (never the last active one) and probed with exponential backoff
// (its Health method, or a trial generation) until it is readmitted on
// probation: one call at a time and one failure to be ejected again, until a
// call succeeds. Active servers with a Health method are also probed every
// Config.HealthInterval: one that fails (a stopped process that accepts
// connections and never answers) is ejected at once and the calls waiting
// on it are cut. Every attempt also has a deadline derived from the work
// asked (Config.CallDeadlineFloor + MaxNewTokens × CallDeadlinePerToken),
// which catches a server whose health check answers while its
// generations hang.
//
// Retries: a call that fails before producing any token
// (server.IsRetryable), or that the router cut (ErrServerLost,
// ErrCallDeadline) before receiving any token, is sent to a server it has
// not tried; any other failure is returned, since resending could
// duplicate work. A cut call that had received tokens (an engine that
// returns its partial output when cancelled) is not resent: its partial
// output comes back as StopAbort with a non-retryable error wrapping the
// reason, for the caller to keep or drop. Servers
// can be added and removed (draining their calls) at run time. Abort goes to
// the server holding the request; AbortAll, Sleep, WakeUp and UpdateWeights
// go to every server.
//
// Streaming: Router is a server.Streamer. GenerateStream forwards the
// chunks of a server that streams (the in-process engine, and the SGLang
// and vLLM HTTP clients, which read their servers' event streams) as they
// arrive, and emits a whole turn as one chunk for a server that does not.
// A streamed call is retried elsewhere only while no token has reached the
// caller: a refusal before the stream starts (429, 503, connect errors) is
// resent; a stream that breaks after a token returns a non-retryable error
// with the tokens so far, since the caller has seen them.
//
// Config.Logger, when set, receives a log/slog record for each ejection
// (with its reason), failed health check or probe, readmission, and cut or
// resent call; records name servers and request ids, never prompts or
// tokens. Without it the router logs nothing.
//
//	r, err := router.New(router.Config{},
//		router.Backend{Name: "gpu0", Server: sglang0},
//		router.Backend{Name: "gpu1", Server: sglang1})
//	if err != nil { ... }
//	defer r.Close()
//	out, err := r.Generate(ctx, server.GenerateRequest{RequestID: "traj-42", GroupID: "prompt-7", PromptIDs: ids})
package router
