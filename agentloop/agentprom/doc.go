// Package agentprom exports agent-loop metrics to Prometheus:
//
//   - trajectories by stop reason, assistant turns, generate calls with
//     their latency and tokens, parse errors, observation tokens;
//   - the prompt tokens sent to the engines and the share they served
//     from their prefix caches, for any engine that reports cached tokens
//     (SGLang, vLLM, the in-process engine);
//   - prompt encoding (chat template and tokenization) latency and tokens;
//   - the Manager's rollouts: queued, in flight by agent name, time queued,
//     rollout time, reward latency and outcome;
//   - tool calls by tool and outcome (tool.ErrorKind: ok, timeout,
//     invalid_arguments, ...) with their latency, results cut short (by the
//     loop's max_tool_response_length or by the tool), sandbox limit kills
//     the python tool reports (wall time, CPU time, memory);
//   - tool sessions opened, closed, active and their lifetime; tool
//     instances created, released, alive by tool, their lifetime and
//     Create latency.
//
// (Calls waiting on an engine are the router's and the engine's metrics:
// routerprom, cudaprom.)
//
// The metrics are fed by agentloop's trace events (Collector.Trace is an
// agentloop.TraceFunc), so the loop's hot path is not touched and there is
// no global state. A library user registers the Collector on their own
// registry:
//
//	c := agentprom.New(agentprom.Options{})
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(c)
//	env := &agentloop.Env{Server: srv, Tokenizer: tok, Trace: c.Trace}
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// To feed agentprom and otelagent at once, call both from one TraceFunc.
package agentprom
