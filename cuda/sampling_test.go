package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// TestSampler checks the processed distribution: the logprob reported for
// every drawn token equals log p under a direct computation of
// penalty → temperature → top-k → top-p → min-p, tokens outside the kept
// set are never drawn, and frequencies follow p.
func TestSampler(t *testing.T) {
	logits := []float32{2.0, 1.5, 1.0, 0.5, -1.0, 1.5, -3}
	tests := []struct {
		name string
		p    server.SamplingParams
		seen []int32
		want []float64 // processed probabilities
	}{
		{"temperature", server.SamplingParams{Temperature: 0.7}, nil, nil},
		{"top-k", server.SamplingParams{Temperature: 1, TopK: 3}, nil, nil},
		{"top-p", server.SamplingParams{Temperature: 1, TopP: 0.6}, nil, nil},
		{"min-p", server.SamplingParams{Temperature: 1.3, MinP: 0.3}, nil, nil},
		{"penalty", server.SamplingParams{Temperature: 1, RepetitionPenalty: 1.5}, []int32{0, 4}, nil},
		{"all", server.SamplingParams{Temperature: 0.8, TopK: 5, TopP: 0.9, MinP: 0.05, RepetitionPenalty: 1.2}, []int32{1, 6}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := processed(logits, tt.p, tt.seen)
			var s sampler
			r := rand.New(rand.NewPCG(1, 2))
			counts := make([]int, len(logits))
			const n = 40000
			for i := 0; i < n; i++ {
				tok, lp := s.sample(logits, &tt.p, tt.seen, r)
				require.Greater(t, want[tok], 0.0, "token %d outside the kept set", tok)
				require.InDelta(t, math.Log(want[tok]), float64(lp), 1e-6)
				counts[tok]++
			}
			for i, c := range counts {
				require.InDelta(t, want[i], float64(c)/n, 0.01, "token %d", i)
			}
		})
	}
}

// processed is a direct, unoptimized statement of the documented pipeline.
func processed(logits []float32, p server.SamplingParams, seen []int32) []float64 {
	z := make([]float64, len(logits))
	for i, v := range logits {
		z[i] = float64(v)
	}
	for _, id := range seen {
		if z[id] > 0 {
			z[id] /= p.RepetitionPenalty
		} else {
			z[id] *= p.RepetitionPenalty
		}
	}
	prob := make([]float64, len(z))
	var sum float64
	for i := range z {
		prob[i] = math.Exp(z[i] / p.Temperature)
		sum += prob[i]
	}
	for i := range prob {
		prob[i] /= sum
	}
	// rank by probability, ties by id
	order := make([]int, len(prob))
	for i := range order {
		order[i] = i
	}
	for i := range order {
		for j := i + 1; j < len(order); j++ {
			a, b := order[i], order[j]
			if prob[b] > prob[a] || (prob[b] == prob[a] && b < a) {
				order[i], order[j] = b, a
			}
		}
	}
	keep := make([]bool, len(prob))
	k := len(prob)
	if p.TopK > 0 && p.TopK < k {
		k = p.TopK
	}
	var kmass float64
	for _, id := range order[:k] {
		kmass += prob[id]
	}
	var cum float64
	for _, id := range order[:k] {
		keep[id] = true
		cum += prob[id]
		if p.TopP > 0 && p.TopP < 1 && cum >= p.TopP*kmass {
			break
		}
	}
	top := prob[order[0]]
	var total float64
	for i := range prob {
		if keep[i] && prob[i] < p.MinP*top {
			keep[i] = false
		}
		if keep[i] {
			total += prob[i]
		}
	}
	out := make([]float64, len(prob))
	for i := range prob {
		if keep[i] {
			out[i] = prob[i] / total
		}
	}
	return out
}

func TestGreedyLogprob(t *testing.T) {
	var s sampler
	logits := []float32{0.5, 3, 3, -1}
	tok, lp := s.sample(logits, &server.SamplingParams{Logprobs: true}, nil, rand.New(rand.NewPCG(1, 1)))
	require.Equal(t, int32(1), tok, "lowest id wins ties")
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v))
	}
	require.InDelta(t, 3-math.Log(sum), float64(lp), 1e-6)
}

// TestSamplerTopPLargeVocab: the pre-filter used before sorting a large
// vocabulary keeps exactly the top-p set.
func TestSamplerTopPLargeVocab(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	logits := make([]float32, 1000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2)
	}
	for _, topP := range []float64{0.5, 0.9, 0.99} {
		p := server.SamplingParams{Temperature: 1, TopP: topP}
		want := processed(logits, p, nil)
		var s sampler
		for i := 0; i < 2000; i++ {
			tok, lp := s.sample(logits, &p, nil, r)
			require.Greater(t, want[tok], 0.0)
			require.InDelta(t, math.Log(want[tok]), float64(lp), 1e-6)
		}
	}
}
