// Package capture trains an agent harness as it is: Claude Code, codex,
// opencode, an OpenAI Agents SDK app — anything that runs its own loop and
// calls an OpenAI-compatible endpoint. Each rollout gets its own base URL
// and key; every model call of it is served through httpapi (so through
// the engines token-in/token-out) and recorded token-exact: prompt ids,
// sampled ids, logprobs, weight version, stop reason, the request as
// received, its dialect and timing. Afterwards Rebuild turns the calls
// into trainable trajectories.
//
// History is never re-tokenized. A call whose messages extend an earlier
// call's messages and that call's answer (message by message, allowing the
// canonical changes harnesses make: re-serialized tool arguments, dropped
// reasoning, trimmed text) continues it: its prompt is that call's exact
// prompt and sampled ids followed by only the new messages as a tokenizer
// delta (tokenizer.EncodeDelta), which is the trajectory contract. A call
// that rewrote history (compaction, edited turns, other tools) starts a
// new segment, and its record says why.
//
// Images: with a vision-language model (Config.Chat.Images, such as
// httpapi.VisionImages) calls may carry image parts, served to engines
// that take images (SGLang, vLLM). A continuation's delta has its new
// image blocks expanded to their images' counts, so the engine and the
// trajectory get the exact expanded sequence; a message of the history
// continues only with the same parts in the same order, each image the
// same (another image, or text moved around one, is rewritten history).
// The records keep the messages with their images as data URLs, and
// Rebuild gives each trajectory its images, grids, pixel values and
// M-RoPE position ids through Config.Vision (agentloop.Vision.MultiModal).
//
// Rebuild makes one trajectory per chain of verified continuations (mask 1
// exactly on the sampled tokens, their logprobs aligned, prompt ++
// response the chain's last sequence); forks and sub-agents are chains of
// their own that never train a shared call twice; a harness retry (a
// sibling with the same prompt) is dropped when the harness continued its
// twin; auxiliary calls (titles, memory extraction: RebuildOptions.
// Auxiliary) are kept out; a call begun and never recorded marks the
// rollout incomplete. The rollout's reward is broadcast to its
// trajectories, which share its group. The Report says all of it.
//
// Records are durable before an answer is complete on the wire: a
// non-streamed answer is written after its record is synced, a streamed
// one gets its finish event after. So a harness that saw an answer always
// has its call recorded. The embedded stores are append-only JSONL, synced:
// OpenDir keeps a file per rollout, OpenLog one log for all of them with
// group commit (concurrent answers share a sync) in a preallocated file,
// so a record's sync is an fdatasync that changes no metadata; a torn
// last line (or, in OpenLog, zero padding after a crash) is ignored and
// cut on reopen.
//
// Observability: Stats counts rollouts, calls by dialect and outcome,
// the capture latency (what Begin and Record add to a call) and the
// rebuild outcomes; capture/captureprom exports them to Prometheus. The
// viewer (agentrl view) shows each rollout's segments and dropped calls
// from the Report that HarnessLoop stores in its trajectories.
//
// Replicas: with a RedisStore (OpenRedis) several Captures — proxy
// replicas behind a load balancer — share their rollouts, and any replica
// serves any call of any rollout: create on one, calls on any, reward,
// finish, export or delete on any. Each replica keeps the rollouts it
// served as a cache of Redis; a key it does not know is looked up there
// by its digest, and each call first reads what other replicas appended
// to its rollout's log, then links. The guarantee for a write not yet
// visible to the replica serving the next call (hard case 10): a call
// sent after its harness received an answer is linked to that answer,
// whichever replica recorded it, because the record is in Redis before
// the answer is complete on the wire and the next call reads Redis
// itself (one primary; no read replicas, which may lag). A harness that
// sends its next call before the answer's end (a stream not read to its
// finish) may find it not yet recorded: that call starts a new segment,
// and nothing is lost. What replicas race on is settled in Redis, each
// append one atomic script: call ids are numbered there, no call is
// begun or recorded after a finish on any replica, a deleted rollout
// stays deleted, and an append delivered twice (go-redis resending after
// a lost reply) is stored once. A replica that dies mid-call leaves the
// call begun and never recorded: everything recorded is in Redis, and
// the rollout is incomplete. Idle expiry counts from the last use on any
// replica; every Create sweeps the rollouts no replica used for
// IdleTimeout (so a dead replica's rollouts expire too), and a call
// finds its rollout expired on any replica (replicas' clocks must agree
// to well within IdleTimeout). With Redis unreachable, calls and control
// requests fail closed: 503 in the dialect's shape, wrapping
// server.ErrUnavailable, and no answer is sent unrecorded.
//
//	store, err := capture.OpenRedis(ctx, "redis://10.0.0.7:6379/0", capture.RedisOptions{})
//	c, err := capture.New(ctx, capture.Config{Engine: engine, Chat: chat, Store: store, BaseURL: "http://lb:8080"})
//
// Security: rollout keys are 256 random bits, compared through their
// SHA-256 in constant time, and never stored (only their digest is). A
// call with an unknown key or id, or with one rollout's key on another's
// URL, is refused in its dialect's shape and recorded nowhere. Control
// requests need a separate token, so a harness cannot set its own reward.
//
// The hard cases (blackbox-capture.md's ten) and the tests that show
// each is handled:
//
//  1. re-rendered history is not a token prefix: TestCanonicalChangesContinue,
//     TestOpenAIClientToolConversationIsOneExactTrajectory (Qwen3);
//  2. templates that drop earlier reasoning: TestHardCase2Qwen3DropsEarlierReasoning
//     (the real Qwen3 tokenizer);
//  3. compaction starts a new root: TestCompactionStartsANewSegment;
//  4. parallel sub-agents, completion order not dispatch order:
//     TestHardCase4ParallelSubAgentsCompleteOutOfOrder, TestForksShareTheirParentOnce;
//  5. harness retries: TestRetryIsNotTrainedTwice, TestFaultDuplicatedDelivery;
//  6. a lost call marks the rollout incomplete: TestLostCallMarksTheRolloutIncomplete;
//  7. durable before the last event: TestAnswerAfterFinishIsWithheld,
//     TestStreamedAnswerAfterFinishNeverFinishes, TestTornLastRecordIsIgnoredAndCut;
//  8. auxiliary calls: TestAuxiliaryCallsAreKeptOutOfTraining;
//  9. off-policy logprobs: TestWeightVersionsAcrossAnUpdate,
//     TestHardCase9GenerationResumedAcrossAWeightUpdate (an engine abort
//     mid-stream, retried under new weights),
//     TestHardCase9RecordsTheSamplingOfHarnessesThatOmitIt (CallRecord.Sampling);
//  10. identity races: TestHardCase10ReusedIDsAndRecordsAfterFreeze,
//     TestRolloutKeysAreRefusedAcrossRollouts, TestRestartKeepsServingOpenRollouts.
//
// Faults: a killed harness (TestFaultKilledHarness), an engine abort
// (TestHardCase9GenerationResumedAcrossAWeightUpdate), a harness retry
// and a duplicated delivery (TestRetryIsNotTrainedTwice,
// TestFaultDuplicatedDelivery). Engine-side limits: an engine that
// resumes a generation in place across a weight update reports one
// WeightVersion for all its tokens, and whether logprobs are of the raw
// or the processed distribution is the engine's (Sampling says what it
// was given).
//
//	c, err := capture.New(ctx, capture.Config{Engine: engine, Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"},
//		Store: store, BaseURL: "http://127.0.0.1:8080"})
//	ro, err := c.Create(ctx, capture.CreateOptions{Group: "sample-17"})
//	// run the harness with OPENAI_BASE_URL=ro.OpenAIBaseURL OPENAI_API_KEY=ro.Key
//	c.SetReward(ctx, ro.ID, 1); c.Finish(ctx, ro.ID)
//	trajs, report, err := c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
package capture
