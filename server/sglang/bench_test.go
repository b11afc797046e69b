package sglang_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/sglang"
)

// BenchmarkRoundTrip: wiretest.RoundTrip in process, then through httpapi
// and this client, whole and streamed (httpapi sends SGLang's cumulative
// events, one per token, so the client reads 100 growing events).
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	eng, req := wiretest.RoundTrip()
	b.Run("in-process", func(b *testing.B) {
		b.ReportAllocs()
		defer wiretest.CPUPerOp(b)()
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
		defer wiretest.CPUPerOp(b)()
		for i := 0; i < b.N; i++ {
			out, err := c.Generate(ctx, req)
			if err != nil || len(out.TokenIDs) != 100 || len(out.Logprobs) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("httpapi+sglang-stream", func(b *testing.B) {
		b.ReportAllocs()
		defer wiretest.CPUPerOp(b)()
		for i := 0; i < b.N; i++ {
			n := 0
			out, err := c.GenerateStream(ctx, req, func(ch server.Chunk) error { n += len(ch.TokenIDs); return nil })
			if err != nil || n != 100 || len(out.TokenIDs) != 100 || len(out.Logprobs) != 100 {
				b.Fatal(err)
			}
		}
	})
	b.Run("httpapi+sglang-parallel", func(b *testing.B) {
		b.ReportAllocs()
		defer wiretest.CPUPerOp(b)()
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
