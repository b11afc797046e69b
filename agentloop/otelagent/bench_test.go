package otelagent_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/otelagent"
)

// BenchmarkTrace is the cost of one trajectory's events (generate, parse,
// tool, observation, done) with the SDK recording every span into a
// batcher that drops them.
func BenchmarkTrace(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	tr := otelagent.New(tp.Tracer("bench"), otelagent.Options{})
	evs := []agentloop.Event{
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "calculator", Latency: time.Millisecond},
		{Kind: agentloop.EventObservation, TrajectoryID: "t", Turn: 1, Tokens: 20},
		{Kind: agentloop.EventDone, TrajectoryID: "t", Turn: 1, Stop: "completed"},
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, ev := range evs {
			tr.Trace(ev)
		}
	}
}

// BenchmarkTraceRollout is the cost of the 16 events of one tool-calling
// trajectory under a Manager (queued, started, prompt, tool session and
// instance, two turns, reward, finished: 8 spans).
func BenchmarkTraceRollout(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	tr := otelagent.New(tp.Tracer("bench"), otelagent.Options{})
	evs := []agentloop.Event{
		{Kind: agentloop.EventQueued, TrajectoryID: "t", Agent: "tool_agent"},
		{Kind: agentloop.EventStarted, TrajectoryID: "t", Agent: "tool_agent", Latency: time.Millisecond},
		{Kind: agentloop.EventPrompt, TrajectoryID: "t", Tokens: 200, Latency: 50 * time.Microsecond},
		{Kind: agentloop.EventSessionOpen, TrajectoryID: "t"},
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, PromptTokens: 200, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventToolCreate, TrajectoryID: "t", Tool: "python", Latency: time.Millisecond},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "python", Latency: time.Millisecond},
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
	for i := 0; i < b.N; i++ {
		for _, ev := range evs {
			tr.Trace(ev)
		}
	}
}
