package vllm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/vllm"
)

// BenchmarkRoundTrip: a 1,000-token prompt and 100 output tokens with
// logprobs through httpapi and this client, on both endpoints.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	out := make([]int32, 100)
	for i := range out {
		out[i] = int32(1000 + i*37)
	}
	prompt := make([]int32, 1000)
	for i := range prompt {
		prompt[i] = int32(i * 151 % 151000)
	}
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(out...)})
	req := server.GenerateRequest{RequestID: "bench", PromptIDs: prompt,
		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 100, Logprobs: true}}
	api, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(b, err)
	defer api.Close()
	for _, compl := range []bool{false, true} {
		name := "httpapi+vllm-generate"
		if compl {
			name = "httpapi+vllm-completions"
		}
		c, err := vllm.New(vllm.Config{BaseURL: api.URL(), Completions: compl})
		require.NoError(b, err)
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
			for i := 0; i < b.N; i++ {
				o, err := c.Generate(ctx, req)
				if err != nil || len(o.TokenIDs) != 100 || len(o.Logprobs) != 100 {
					b.Fatal(err)
				}
			}
		})
	}
}
