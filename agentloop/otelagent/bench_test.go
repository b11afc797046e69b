package otelagent_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/internal/tracestream"
	"github.com/agentrl/agentrl/agentloop/otelagent"
)

// BenchmarkTrace is the cost of one trajectory's events (generate, parse,
// tool, observation, done) with the SDK recording every span into a
// batcher that drops them.
func BenchmarkTrace(b *testing.B) {
	benchTrace(b, tracestream.Step(nil))
}

// BenchmarkTraceRollout is the cost of the 16 events of one tool-calling
// trajectory under a Manager (queued, started, prompt, tool session and
// instance, two turns, reward, finished: 8 spans).
func BenchmarkTraceRollout(b *testing.B) {
	benchTrace(b, tracestream.Rollout(nil))
}

// benchTrace feeds evs once per iteration to a tracer whose SDK records
// every span into a batcher that drops them.
func benchTrace(b *testing.B, evs []agentloop.Event) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	defer tp.Shutdown(context.Background())
	tr := otelagent.New(tp.Tracer("bench"), otelagent.Options{})
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		for _, ev := range evs {
			tr.Trace(ev)
		}
	}
}
