package sglang_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

// benchSetup is the round trip: a 1,000-token prompt and 100
// output tokens with logprobs, from an engine with no latency of its own,
// so what is measured is the HTTP path alone.
func benchSetup(b *testing.B) (*servertest.Server, server.GenerateRequest) {
	out := make([]int32, 100)
	for i := range out {
		out[i] = int32(1000 + i*37)
	}
	prompt := make([]int32, 1000)
	for i := range prompt {
		prompt[i] = int32(i * 151 % 151000)
	}
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(out...)})
	return eng, server.GenerateRequest{RequestID: "bench", PromptIDs: prompt,
		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 100, Logprobs: true}}
}

func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	eng, req := benchSetup(b)
	b.Run("in-process", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
		for i := 0; i < b.N; i++ {
			out, err := eng.Generate(ctx, req)
			if err != nil || len(out.TokenIDs) != 100 {
				b.Fatal(err)
			}
		}
	})
	api, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(b, err)
	defer api.Close()
	c, err := sglang.New(sglang.Config{BaseURL: api.URL()})
	require.NoError(b, err)
	b.Run("httpapi+sglang", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
		for i := 0; i < b.N; i++ {
			out, err := c.Generate(ctx, req)
			if err != nil || len(out.TokenIDs) != 100 || len(out.Logprobs) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("httpapi+sglang-parallel", func(b *testing.B) {
		b.ReportAllocs()
		start := cpuTime()
		defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				out, err := c.Generate(ctx, req)
				if err != nil || len(out.TokenIDs) != 100 {
					b.Error(err)
					return
				}
			}
		})
	})
}
