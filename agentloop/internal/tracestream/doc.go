// Package tracestream holds the agentloop event streams that the trace
// consumers' benchmarks (agentloop/agentprom, agentloop/otelagent) feed, so
// that both measure the same work: one agent-loop step, and the whole
// stream of one tool-calling trajectory under a Manager. It is imported by
// tests only.
//
//	for _, ev := range tracestream.Rollout(nil) {
//		collector.Trace(ev)
//	}
package tracestream
