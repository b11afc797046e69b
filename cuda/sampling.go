package cuda

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/agentrl/agentrl/cuda/kernels"
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
// the normalizer is skipped for greedy requests that do not want it). It
// runs the steps below in the documented order and allocates nothing once
// its buffers have the vocabulary's size.
func (s *sampler) sample(logits []float32, prm *server.SamplingParams, seen []int32, rng *rand.Rand) (int32, float32) {
	V := len(logits)
	if cap(s.z) < V {
		s.z, s.p, s.idx = make([]float64, V), make([]float64, V), make([]int32, V)
	}
	z, p := s.z[:V], s.p[:V]
	for i, v := range logits {
		z[i] = float64(v)
	}
	penalize(z, seen, prm.RepetitionPenalty)
	if prm.Temperature <= 0 {
		return greedy(z, prm.Logprobs)
	}
	temperature(p, z, prm.Temperature)
	topP := prm.TopP
	if topP <= 0 {
		topP = 1
	}
	cand, total := rank(s.idx[:0], p, prm.TopK, topP)
	cand = topK(cand, prm.TopK)
	cand = nucleus(cand, p, topP, total)
	cand = minP(cand, p, prm.MinP)
	return draw(cand, p, rng.Float64())
}

// penalize applies the repetition penalty rp to the logits z of the seen
// token ids: divided by rp if positive, multiplied if not (transformers'
// and vLLM's rule). rp ≤ 0 or 1 leaves z as it is.
func penalize(z []float64, seen []int32, rp float64) {
	if rp <= 0 || rp == 1 {
		return
	}
	for _, id := range seen {
		if z[id] > 0 {
			z[id] /= rp
		} else {
			z[id] *= rp
		}
	}
}

// greedy returns the argmax of z (lowest id on ties) and, when logprobs,
// its log-softmax at temperature 1 (else 0).
func greedy(z []float64, logprobs bool) (int32, float32) {
	best := 0
	for i, v := range z {
		if v > z[best] {
			best = i
		}
	}
	if !logprobs {
		return int32(best), 0
	}
	return int32(best), float32(-math.Log(kernels.ExpShift(nil, z, z[best])))
}

// temperature scales z by 1/t in place and writes the unnormalized
// probabilities exp(z − max z) to p: the top token has 1, which min-p's
// threshold relies on.
func temperature(p, z []float64, t float64) {
	inv := 1 / t
	for i := range z {
		z[i] *= inv
	}
	kernels.ExpShift(p, z, maxOf(z))
}

// maxOf is math.Max over v (−Inf for none, NaN if any is NaN) with a plain
// comparison: math.Max is a call per element, which took as long as the
// rest of a temperature-sampled token.
func maxOf[F float32 | float64](v []F) float64 {
	mx, nan := math.Inf(-1), false
	for _, x := range v {
		if f := float64(x); f > mx {
			mx = f
		} else if f != f {
			nan = true
		}
	}
	if nan {
		return math.NaN()
	}
	return mx
}

// rank appends the candidate token ids to cand, ordered by probability
// then id when top-k or top-p need ranks (by id otherwise), and returns
// them with the mass top-p is measured against (0 when rank did not need
// it: nucleus then sums the candidates after top-k).
//
// With top-p alone, tokens below eps = (1−topP)·Σp/V can never be in the
// kept set: together they hold less than (1−topP) of the mass, so the
// most-probable prefix reaches topP before any of them. Dropping them
// before sorting gives the same set and saves sorting a large vocabulary.
func rank(cand []int32, p []float64, k int, topP float64) ([]int32, float64) {
	V := len(p)
	eps, total := 0.0, 0.0
	if topP < 1 && (k <= 0 || k >= V) {
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
	if (k > 0 && k < V) || topP < 1 {
		slices.SortFunc(cand, func(a, b int32) int {
			if c := cmp.Compare(p[b], p[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
	}
	return cand, total
}

// topK keeps the k most probable of the ranked candidates (k ≤ 0: all).
func topK(cand []int32, k int) []int32 {
	if k > 0 && k < len(cand) {
		return cand[:k]
	}
	return cand
}

// nucleus keeps the shortest prefix of the ranked candidates whose mass
// reaches topP of total (total 0: of the candidates' own mass); topP ≥ 1
// keeps all.
func nucleus(cand []int32, p []float64, topP, total float64) []int32 {
	if topP >= 1 {
		return cand
	}
	if total == 0 {
		for _, id := range cand {
			total += p[id]
		}
	}
	var cum float64
	for i, id := range cand {
		cum += p[id]
		if cum >= topP*total {
			return cand[:i+1]
		}
	}
	return cand
}

// minP drops the candidates whose probability is below minP times the top
// one's (which is 1 after temperature, so the top token always stays);
// minP ≤ 0 keeps all. The order of the rest is kept.
func minP(cand []int32, p []float64, minP float64) []int32 {
	if minP <= 0 {
		return cand
	}
	kept := cand[:0]
	for _, id := range cand {
		if p[id] >= minP {
			kept = append(kept, id)
		}
	}
	return kept
}

// draw picks from the candidates in their order by inverse CDF at u in
// [0, 1) of their renormalized mass, and returns the token with its log
// probability under that distribution.
func draw(cand []int32, p []float64, u float64) (int32, float32) {
	var total float64
	for _, id := range cand {
		total += p[id]
	}
	u *= total
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
