package agentprom_test

import (
	"errors"
	"testing"
	"time"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/agentprom"
)

// BenchmarkTrace is the cost the collector adds to one agent-loop step
// (it runs on the trajectory's goroutine): a generate, a parse, a tool
// call, an observation and done, per iteration.
func BenchmarkTrace(b *testing.B) {
	c := agentprom.New(agentprom.Options{})
	evs := []agentloop.Event{
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "calculator", Latency: time.Millisecond, Err: errors.New("x")},
		{Kind: agentloop.EventObservation, TrajectoryID: "t", Turn: 1, Tokens: 20},
		{Kind: agentloop.EventDone, TrajectoryID: "t", Turn: 1, Stop: "completed"},
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, ev := range evs {
				c.Trace(ev)
			}
		}
	})
}

// BenchmarkTraceRollout is the collector's cost for the whole event stream
// of one tool-calling trajectory under a Manager (16 events: queued,
// started, prompt, tool session and instance, two turns, reward,
// finished), per iteration.
func BenchmarkTraceRollout(b *testing.B) {
	c := agentprom.New(agentprom.Options{})
	metrics := map[string]float64{"wall_timeout": 0, "cpu_limit": 0, "memory_limit": 0, "output_truncated": 0}
	evs := []agentloop.Event{
		{Kind: agentloop.EventQueued, TrajectoryID: "t", Agent: "tool_agent"},
		{Kind: agentloop.EventStarted, TrajectoryID: "t", Agent: "tool_agent", Latency: time.Millisecond},
		{Kind: agentloop.EventPrompt, TrajectoryID: "t", Tokens: 200, Latency: 50 * time.Microsecond},
		{Kind: agentloop.EventSessionOpen, TrajectoryID: "t"},
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, PromptTokens: 200, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventToolCreate, TrajectoryID: "t", Tool: "python", Latency: time.Millisecond},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "python", Latency: time.Millisecond, Metrics: metrics},
		{Kind: agentloop.EventObservation, TrajectoryID: "t", Turn: 1, Tokens: 20},
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 2, Tokens: 10, PromptTokens: 320, CachedTokens: 300, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 2},
		{Kind: agentloop.EventToolRelease, TrajectoryID: "t", Tool: "python", Latency: time.Second},
		{Kind: agentloop.EventSessionClose, TrajectoryID: "t", Latency: time.Second},
		{Kind: agentloop.EventDone, TrajectoryID: "t", Turn: 2, Stop: "completed"},
		{Kind: agentloop.EventReward, TrajectoryID: "t", Reward: 1, Latency: time.Millisecond},
		{Kind: agentloop.EventFinished, TrajectoryID: "t", Agent: "tool_agent", Stop: "completed", Latency: time.Second},
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for _, ev := range evs {
				c.Trace(ev)
			}
		}
	})
}
