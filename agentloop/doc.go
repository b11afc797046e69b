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
//
// A Manager runs batches (Generate) or streams (Stream) of samples with
// bounded concurrency, n rollouts per prompt as groups, per-trajectory
// timeouts, reward scoring as each trajectory finishes, and partial
// trajectories on cancellation or timeout (stop reason aborted, keeping
// every token the engine produced before the cut):
//
//	env := &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools}
//	m, err := agentloop.NewManager(nil, env, agentloop.Options{DefaultAgent: agentloop.ToolAgentName, N: 4})
//	out, err := m.Generate(ctx, samples) // out.Trajectories, out.Metrics
//
// A group is the n rollouts of one sample (verl's uid): samples are grouped
// by GroupID, else ID, else Index, and a batch of samples that name nothing
// is numbered by position; ambiguous ids are an ErrSample error (see
// Sample.GroupID). An Accumulator keeps, counts and collates finished groups
// the same way for Generate and for a caller reading Stream.
//
// A loop that implements MultiAgentLoop may return several trajectories
// for one rollout (verl's list[AgentLoopOutput]): each becomes a row of its
// own, keyed {uid}_{session}_{index} as verl keys them, with the reward of
// the last copied to the others; groups still count rollouts
// (Result.Trajectories, KeepGroup, trainer.GRPORollouts) and Result.All
// gives every trajectory.
//
// Env.Trace receives an Event for each step: the prompt's encoding, each
// generate call, parse, tool call and observation, the tool session and
// its instances, the end; and, from the Manager, each rollout queued,
// started, scored and finished. agentprom (Prometheus) and otelagent
// (OpenTelemetry) are built on it.
package agentloop
