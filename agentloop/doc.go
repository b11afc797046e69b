// Package agentloop turns dataset samples into trainable trajectories by
// running agent loops against token-in/token-out engines.
//
// An AgentLoop runs one sample: SingleTurn (render, generate, done) or
// ToolAgent (the PENDING → GENERATING → PROCESSING_TOOLS | INTERACTING →
// TERMINATED state machine with tools and interactions), or any loop
// registered under its own agent name. Loops assemble tokens only through a
// trajectory.Builder: sampled tokens are appended as the engine returned
// them (mask 1, logprobs) and everything else as a tokenizer delta (mask 0),
// so history is never re-tokenized.
//
// Episode is the per-turn machinery the built-in loops are written with
// (prompt and response budgets, resumable generation with weight versions,
// observations as deltas, stop reasons, counters, tracing); a custom loop
// composes it the same way and registers under its own name (Register).
// A tool-calling loop builds on ToolKit and ToolEpisode instead: ToolAgent's
// own tool step (the sample's tool subset and session, call ids,
// tool.CallInfo, trace events, counters, tool rewards, MaxParallelCalls,
// MaxConsecutiveInvalidToolCalls, MaxAssistantTurns), so the loop holds
// only its own logic (examples/customloop retries failed calls with a hint).
//
// A Manager runs batches (Generate) or streams (Stream) of samples with
// bounded concurrency, n rollouts per prompt as groups, per-trajectory
// timeouts, reward scoring as each trajectory finishes, and partial
// trajectories on cancellation or timeout (stop reason aborted, keeping
// every token the engine produced before the cut):
//
//	env := &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools}
//	m, err := agentloop.NewManager(nil, env, agentloop.Options{DefaultAgent: agentloop.ToolAgentName, N: 4, Reward: score})
//	out, err := m.Generate(ctx, samples) // out.Trajectories, out.Metrics
//
// What would fail every sample is checked when the Manager is made: the
// environment, the sampling settings (server.SamplingParams.Validate), N
// (at most MaxN), that rewards come from somewhere (Options.Reward, or
// Options.RewardFromLoop when interactions or the loops score), and the
// default agent's loop, which NewManager builds (a config's parser format
// is checked when it is registered). Rollouts ask the engine for logprobs
// unless Options.NoLogprobs is set. Generate refuses a batch over
// MaxBatchRollouts and a context already done before anything runs.
//
// A group is the n rollouts of one sample (verl's uid): samples are grouped
// by GroupID, else ID, else Index, and a batch of samples that name nothing
// is numbered by position; ambiguous ids are an ErrSample error (see
// Sample.GroupID). An Accumulator keeps, counts and collates finished groups
// the same way for Generate and for a caller reading Stream.
//
// Images (vision-language models, Qwen2/2.5/3-VL): with Env.Vision set, a
// sample's image parts (chat.Image) and the images tools return
// (tool.Result.Images, placed before the text as verl's ToolAgentLoop
// does) are decoded and processed; the chat template's collapsed
// <|vision_start|><|image_pad|><|vision_end|> block of each is expanded
// on the token ids of the prompt or of the observation's delta, never by
// re-tokenizing; every generate call carries the images so far
// (server.GenerateRequest.Vision); the trajectory gets verl's
// multi_modal_inputs and M-RoPE position ids (trajectory.MultiModal). An
// image that cannot be read, decoded or processed fails the sample with an
// ErrImage error naming the sample and the image.
//
// Request ids: every engine call of a trajectory carries the trajectory's
// id (Trajectory.ID, "<ID>" or "<ID>/<rollout>", see Sample.ID) as
// server.GenerateRequest.RequestID and its group as GroupID, on every turn
// and on every resume of a turn the engine aborted (GenerateResumable
// resends the prompt plus the tokens so far under the same id). Engines
// abort by that id, routers keep a trajectory on one server by it, and
// servertest counts a conversation's turns by it. Within a batch the ids
// are unique (ids that would repeat are an ErrSample error); a later batch
// may reuse them, as a dataset read again does.
//
// A loop that implements MultiAgentLoop may return several trajectories
// for one rollout (verl's list[AgentLoopOutput]): each becomes a row of its
// own, keyed {uid}_{session}_{index} as verl keys them, with the reward of
// the last copied to the others; groups still count rollouts
// (Result.Trajectories, KeepGroup, trainer.GRPORollouts) and Result.All
// gives every trajectory.
//
// Continuous tokens: verl v0.9 builds a trajectory by appending the
// engine's tokens unchanged and each new message as a token-level suffix,
// with one boundary rule per model family (Qwen inserts "\n" after a
// trailing <|im_end|>, GLM drops a trailing <|observation|>, Gemma 4
// re-inserts <|tool_response>, ...). agentrl's deltas (the tokenizer's
// EncodeDelta) already carry that glue; Env.Boundary, a
// tokenizer.NewBoundary of the family that tokenizer.ContinuousFamilyForModelType
// picks from the model's config.json model_type (as verl picks it, and as
// `agentrl rollout --continuous-family auto` does), checks every
// observation's delta against the family's rule, so a template whose
// deltas would disagree with verl's stream fails its episode naming the
// family instead of training on other tokens.
//
// Env.Trace receives an Event for each step: the prompt's encoding, each
// generate call, parse, tool call and observation, the tool session and
// its instances, the end; and, from the Manager, each rollout queued,
// started, scored and finished. agentprom (Prometheus) and otelagent
// (OpenTelemetry) are built on it.
package agentloop
