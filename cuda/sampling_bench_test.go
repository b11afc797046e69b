package cuda

import (
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/server"
)

// BenchmarkSample is one token's sampling from a Qwen3-sized vocabulary
// (151,936 logits): greedy with its logprob, and temperature 1 as RL
// rollouts sample.
func BenchmarkSample(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	logits := make([]float32, 151936)
	for i := range logits {
		logits[i] = float32(3 * r.NormFloat64())
	}
	for _, c := range []struct {
		name string
		prm  server.SamplingParams
	}{{"greedy", server.SamplingParams{Logprobs: true}}, {"t1", server.SamplingParams{Temperature: 1, Logprobs: true}}} {
		b.Run(c.name, func(b *testing.B) {
			var s sampler
			for b.Loop() {
				s.sample(logits, &c.prm, nil, nil, r)
			}
		})
	}
}
