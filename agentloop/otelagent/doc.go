// Package otelagent turns agentloop's trace events into OpenTelemetry
// spans: one span per trajectory, with a child span for the prompt's
// encoding (chat template and tokenization, gen_ai.usage.input_tokens),
// each generate call, tool call, interaction reply and reward, and for
// each tool instance (its Create, and its life from Create to Release);
// attributes for tokens and outcomes; span events for parsed turns,
// appended observations and the tool session opening and closing.
//
// agentloop reports each step when it has finished, with its latency
// (agentloop.Event); this package reconstructs the step's start as the
// report time minus the latency, so the spans line up on a timeline
// without touching the loop's hot path. Under a Manager a trajectory's
// span runs from the rollout's start (after its wait for a concurrency
// slot, an attribute) to its finish, after the reward; a loop run on its
// own has a span from its first step's start (the prompt's encoding) to
// its done event.
//
// The smallest use:
//
//	tr := otelagent.New(otel.Tracer("rollout"), otelagent.Options{})
//	env := &agentloop.Env{Server: srv, Tokenizer: tok, Trace: tr.Trace}
//	// ... run the Manager ...
//	tr.Close() // ends the spans of trajectories that never finished
package otelagent
