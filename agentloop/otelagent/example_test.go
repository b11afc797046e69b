package otelagent_test

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/otelagent"
)

// The Tracer's Trace method is an agentloop.TraceFunc: set it as
// Env.Trace. Here two events stand in for a rollout.
func Example() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	tr := otelagent.New(tp.Tracer("rollout"), otelagent.Options{})
	var trace agentloop.TraceFunc = tr.Trace // agentloop.Env{..., Trace: tr.Trace}
	trace(agentloop.Event{Kind: agentloop.EventGenerate, TrajectoryID: "0/0", Turn: 1, Tokens: 12, Latency: 40 * time.Millisecond})
	trace(agentloop.Event{Kind: agentloop.EventTool, TrajectoryID: "0/0", Turn: 1, Tool: "calculator", Latency: time.Millisecond})
	trace(agentloop.Event{Kind: agentloop.EventDone, TrajectoryID: "0/0", Turn: 1, Stop: "completed"})
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// agentrl.generate
	// agentrl.tool
	// agentrl.trajectory
}

// Under a Manager the trajectory's span opens when the rollout starts and
// ends when it finishes, after its reward; the prompt's encoding is a
// child span.
func Example_manager() {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer tp.Shutdown(context.Background())

	tr := otelagent.New(tp.Tracer("rollout"), otelagent.Options{})
	for _, ev := range []agentloop.Event{
		{Kind: agentloop.EventQueued, Agent: "single_turn_agent"},
		{Kind: agentloop.EventStarted, Agent: "single_turn_agent", Latency: time.Millisecond},
		{Kind: agentloop.EventPrompt, Tokens: 31, Latency: 80 * time.Microsecond},
		{Kind: agentloop.EventGenerate, Turn: 1, Tokens: 12, Latency: 40 * time.Millisecond},
		{Kind: agentloop.EventDone, Turn: 1, Stop: "completed"},
		{Kind: agentloop.EventReward, Reward: 1, Latency: time.Millisecond},
		{Kind: agentloop.EventFinished, Agent: "single_turn_agent", Stop: "completed"},
	} {
		ev.TrajectoryID = "0/0"
		tr.Trace(ev)
	}
	for _, s := range exp.GetSpans() {
		fmt.Println(s.Name)
	}
	// Output:
	// agentrl.prompt
	// agentrl.generate
	// agentrl.reward
	// agentrl.trajectory
}
