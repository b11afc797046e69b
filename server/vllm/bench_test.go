package vllm_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/vllm"
)

// BenchmarkRoundTrip: wiretest.RoundTrip through httpapi and this client,
// on both endpoints.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	eng, req := wiretest.RoundTrip()
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
			defer wiretest.CPUPerOp(b)()
			for i := 0; i < b.N; i++ {
				o, err := c.Generate(ctx, req)
				if err != nil || len(o.TokenIDs) != 100 || len(o.Logprobs) != 100 {
					b.Fatal(err)
				}
			}
		})
	}
}
