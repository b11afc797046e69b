package cuda

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/agentrl/agentrl/server"
)

// sampler turns one row of logits into a token. It owns scratch buffers
// and is used only by the scheduler goroutine.
//
// The processed distribution, whose log-softmax is the reported logprob:
//
//  1. repetition penalty (RepetitionPenalty > 0 and ≠ 1): every token id
//     that occurs in the prompt or the output so far has its logit divided
//     by the penalty if positive, multiplied if negative (as transformers
//     and vLLM do);
//  2. greedy (Temperature 0): the argmax (lowest id on ties); its logprob is
//     the log-softmax of the penalized logits at temperature 1;
//  3. otherwise logits / Temperature, then top-k (TopK > 0), then top-p
//     (0 < TopP < 1: the smallest most-probable set whose mass reaches
//     TopP), then min-p (MinP > 0: drop tokens below MinP × the top
//     probability), renormalized over what is kept. The token is drawn from
//     that distribution with the request's own random stream and its
//     logprob is log p under it.
type sampler struct {
	z   []float64
	p   []float64
	idx []int32
}

// sample returns the next token and, when prm.Logprobs, its logprob (else 0:
// the normalizer is skipped for greedy requests that do not want it).
func (s *sampler) sample(logits []float32, prm *server.SamplingParams, seen []int32, rng *rand.Rand) (int32, float32) {
	V := len(logits)
	if cap(s.z) < V {
		s.z, s.p, s.idx = make([]float64, V), make([]float64, V), make([]int32, V)
	}
	z, p := s.z[:V], s.p[:V]
	for i, v := range logits {
		z[i] = float64(v)
	}
	if rp := prm.RepetitionPenalty; rp > 0 && rp != 1 {
		for _, id := range seen {
			if z[id] > 0 {
				z[id] /= rp
			} else {
				z[id] *= rp
			}
		}
	}
	if prm.Temperature <= 0 {
		best := 0
		for i, v := range z {
			if v > z[best] {
				best = i
			}
		}
		if !prm.Logprobs {
			return int32(best), 0
		}
		var sum float64
		for _, v := range z {
			sum += math.Exp(v - z[best])
		}
		return int32(best), float32(-math.Log(sum))
	}
	inv := 1 / prm.Temperature
	mx := math.Inf(-1)
	for i := range z {
		z[i] *= inv
		mx = math.Max(mx, z[i])
	}
	for i, v := range z {
		p[i] = math.Exp(v - mx) // unnormalized; the top token has 1
	}
	// Candidates in a fixed order: by probability then id when top-k/top-p
	// need ranks, else by id.
	cand := s.idx[:0]
	minKeep := 0.0
	if prm.MinP > 0 {
		minKeep = prm.MinP // relative to the top probability, which is 1 here
	}
	topK := prm.TopK
	topP := prm.TopP
	if topP <= 0 {
		topP = 1
	}
	// With top-p alone, tokens below eps = (1−TopP)·Σp/V can never be in
	// the kept set: together they hold less than (1−TopP) of the mass, so
	// the most-probable prefix reaches TopP before any of them. Dropping
	// them before sorting gives the same set and saves sorting a large
	// vocabulary.
	eps := 0.0
	if topP < 1 && (topK <= 0 || topK >= V) {
		var total float64
		for _, v := range p {
			total += v
		}
		eps = (1 - topP) * total / float64(V)
	}
	for i, v := range p {
		if v >= eps {
			cand = append(cand, int32(i))
		}
	}
	if (topK > 0 && topK < V) || topP < 1 {
		slices.SortFunc(cand, func(a, b int32) int {
			if c := cmp.Compare(p[b], p[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		if topK > 0 && topK < len(cand) {
			cand = cand[:topK]
		}
		if topP < 1 {
			var total float64
			if eps > 0 {
				for _, v := range p {
					total += v
				}
			} else {
				for _, id := range cand {
					total += p[id]
				}
			}
			var cum float64
			for i, id := range cand {
				cum += p[id]
				if cum >= topP*total {
					cand = cand[:i+1]
					break
				}
			}
		}
	}
	if minKeep > 0 {
		// the kept set always contains the top token (p = 1 ≥ MinP)
		kept := cand[:0]
		for _, id := range cand {
			if p[id] >= minKeep {
				kept = append(kept, id)
			}
		}
		cand = kept
	}
	var total float64
	for _, id := range cand {
		total += p[id]
	}
	u := rng.Float64() * total
	tok := cand[len(cand)-1]
	var cum float64
	for _, id := range cand {
		cum += p[id]
		if u < cum {
			tok = id
			break
		}
	}
	return tok, float32(math.Log(p[tok] / total))
}
