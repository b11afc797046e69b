package tool

import (
	"context"
	"testing"

	"github.com/agentrl/agentrl/chat"
)

const benchExpr = `{"expression": "(12.5 + 3) * 4 - 7 / 2"}`

// BenchmarkCalculate is the work itself: parse and evaluate the expression.
func BenchmarkCalculate(b *testing.B) {
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Calculate("(12.5 + 3) * 4 - 7 / 2"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolExecute adds JSON decoding of the arguments (NewFunc).
func BenchmarkToolExecute(b *testing.B) {
	t := NewCalculator()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := t.Execute(context.Background(), "", []byte(benchExpr)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionCall is the full path the agent loop takes: lookup,
// schema validation, limits, instance, guarded Execute.
func BenchmarkSessionCall(b *testing.B) {
	for _, bc := range []struct {
		name string
		lim  Limits
	}{
		{"nolimits", Limits{}},
		{"limits", Limits{MaxConcurrency: 64, RatePerSecond: 1e9, Burst: 1 << 20, Timeout: 1e9}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := NewSet(NewCalculator())
			if err != nil {
				b.Fatal(err)
			}
			if err := s.SetLimits("calculator", bc.lim); err != nil {
				b.Fatal(err)
			}
			ss := s.Session(nil)
			defer ss.Close(context.Background())
			c := chat.ToolCall{Function: chat.FunctionCall{Name: "calculator", Arguments: benchExpr}}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if r := ss.Call(ctx, c); r.Err != nil {
					b.Fatal(r.Err)
				}
			}
		})
	}
}

// BenchmarkSessionCallParallel: many trajectories calling at once.
func BenchmarkSessionCallParallel(b *testing.B) {
	s, err := NewSet(NewCalculator())
	if err != nil {
		b.Fatal(err)
	}
	c := chat.ToolCall{Function: chat.FunctionCall{Name: "calculator", Arguments: benchExpr}}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ss := s.Session(nil)
		defer ss.Close(context.Background())
		for pb.Next() {
			if r := ss.Call(context.Background(), c); r.Err != nil {
				b.Error(r.Err)
				return
			}
		}
	})
}
