package agentprom_test

import (
	"errors"
	"testing"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/agentprom"
	"github.com/agentrl/agentrl/agentloop/internal/tracestream"
)

// BenchmarkTrace is the cost the collector adds to one agent-loop step
// (it runs on the trajectory's goroutine): a generate, a parse, a tool
// call, an observation and done, per iteration.
func BenchmarkTrace(b *testing.B) {
	c := agentprom.New(agentprom.Options{})
	benchTrace(b, c, tracestream.Step(errors.New("x")))
}

// BenchmarkTraceRollout is the collector's cost for the whole event stream
// of one tool-calling trajectory under a Manager (16 events: queued,
// started, prompt, tool session and instance, two turns, reward,
// finished), per iteration.
func BenchmarkTraceRollout(b *testing.B) {
	c := agentprom.New(agentprom.Options{})
	metrics := map[string]float64{"wall_timeout": 0, "cpu_limit": 0, "memory_limit": 0, "output_truncated": 0}
	benchTrace(b, c, tracestream.Rollout(metrics))
}

// benchTrace feeds evs to c once per iteration, from parallel goroutines
// as a Manager's trajectories do.
func benchTrace(b *testing.B, c *agentprom.Collector, evs []agentloop.Event) {
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, ev := range evs {
				c.Trace(ev)
			}
		}
	})
}
