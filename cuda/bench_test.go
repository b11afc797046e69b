package cuda

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

// benchConfig is the 156M-parameter Llama the llama.cpp numbers
// were measured on (fp32).
var benchConfig = &model.Config{ModelType: model.Llama, VocabSize: 32000, HiddenSize: 768, IntermediateSize: 2816,
	NumHiddenLayers: 12, NumAttentionHeads: 12, NumKeyValueHeads: 12, HeadDim: 64, RMSNormEps: 1e-6,
	RopeTheta: 10000, MaxPositionEmbeddings: 2048}

func benchEngine(b *testing.B, opts Options) *Engine {
	m, err := model.NewRandom(benchConfig, 1, kernels.NewCPU(opts.Threads))
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(m, opts)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	for !e.Stats().KVPopulated { // the steady state: see Stats.KVPopulated
		time.Sleep(10 * time.Millisecond)
	}
	return e
}

func benchPrompt(i, n int) []int32 {
	p := make([]int32, n)
	for j := range p {
		p[j] = int32((i*7919 + j*104729) % 32000)
	}
	return p
}

// BenchmarkDecode reports aggregate decode tokens/s for 1 and 32
// concurrent sequences (64 tokens each after a 16-token prompt).
func BenchmarkDecode(b *testing.B) {
	for _, conc := range []int{1, 32} {
		b.Run(fmt.Sprint("seqs", conc), func(b *testing.B) {
			e := benchEngine(b, Options{MaxSeqs: 64})
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var wg sync.WaitGroup
				for s := 0; s < conc; s++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: benchPrompt(i*conc+s, 16),
							Params: server.SamplingParams{MaxNewTokens: 64}})
						if err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
			}
			b.ReportMetric(float64(conc*64*b.N)/b.Elapsed().Seconds(), "tok/s")
		})
	}
}

// BenchmarkPrefill reports prompt tokens/s for a 512-token prompt.
func BenchmarkPrefill(b *testing.B) {
	e := benchEngine(b, Options{})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: benchPrompt(i, 512),
			Params: server.SamplingParams{MaxNewTokens: 1}}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(512*b.N)/b.Elapsed().Seconds(), "tok/s")
}
