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
// The processed distribution, whose log-softmax is the reported logprob
// (and the top logprobs, see top):
//
//  1. repetition penalty (RepetitionPenalty > 0 and ≠ 1): every token id
//     that occurs in the prompt or the output so far has its logit divided
//     by the penalty if positive, multiplied if negative (as transformers
//     and vLLM do);
//  2. frequency and presence penalties, vLLM's apply_penalties (vllm
//     model_executor/layers/utils.py, after the repetition penalty): over
//     the output so far only, logit −= FrequencyPenalty × count, then
//     −= PresencePenalty where count > 0;
//  3. greedy (Temperature 0): the argmax (lowest id on ties); its logprob is
//     the log-softmax of the penalized logits at temperature 1;
//  4. otherwise logits / Temperature, then top-k (TopK > 0), then top-p
//     (0 < TopP < 1: the smallest most-probable set whose mass reaches
//     TopP), then min-p (MinP > 0: drop tokens below MinP × the top
//     probability), renormalized over what is kept. The token is drawn from
//     that distribution with the request's own random stream and its
//     logprob is log p under it.
type sampler struct {
	z   []float64
	p   []float64
	idx []int32
	// count and mark serve the frequency and presence penalties: count[id]
	// is id's count in the output where mark[id] == epoch (an epoch per
	// call, so nothing is cleared per token).
	count []int32
	mark  []uint32
	epoch uint32

	// What the last sample drew from, for top: greedy's z with its log
	// normalizer, or p over every token (cand nil) or over cand, with
	// its mass.
	last struct {
		greedy bool
		logZ   float64
		cand   []int32
		total  float64
	}
}

// sample returns the next token and, when prm.Logprobs, its logprob (else 0:
// the normalizer is skipped for greedy requests that do not want it). It
// runs the steps below in the documented order and allocates nothing once
// its buffers have the vocabulary's size.
//
// seen is the distinct ids of the prompt and output (for the repetition
// penalty), out the output so far (for the presence and frequency
// penalties); either may be nil when its penalty is off.
func (s *sampler) sample(logits []float32, prm *server.SamplingParams, seen, out []int32, rng *rand.Rand) (int32, float32) {
	V := len(logits)
	if cap(s.z) < V {
		s.z, s.p, s.idx = make([]float64, V), make([]float64, V), make([]int32, V)
	}
	z, p := s.z[:V], s.p[:V]
	for i, v := range logits {
		z[i] = float64(v)
	}
	penalize(z, seen, prm.RepetitionPenalty)
	if len(out) > 0 && (prm.FrequencyPenalty != 0 || prm.PresencePenalty != 0) {
		s.penalizeOutput(z, out, prm.FrequencyPenalty, prm.PresencePenalty)
	}
	s.last.cand = nil
	if prm.Temperature <= 0 {
		s.last.greedy = true
		if prm.TopLogprobs <= 0 {
			return greedy(z, prm.Logprobs)
		}
		// The top logprobs need greedy's normalizer: computed here as
		// greedy computes it, so the sampled token's logprob is the same.
		tok, _ := greedy(z, false)
		sum := kernels.ExpShift(nil, z, z[tok])
		s.last.logZ = z[tok] + math.Log(sum)
		if !prm.Logprobs {
			return tok, 0
		}
		return tok, float32(-math.Log(sum))
	}
	s.last.greedy = false
	total := temperature(p, z, prm.Temperature)
	topP := prm.TopP
	if topP <= 0 {
		topP = 1
	}
	if (prm.TopK <= 0 || prm.TopK >= V) && topP >= 1 && prm.MinP <= 0 {
		s.last.total = total
		return drawAll(p, total, rng.Float64()) // nothing truncated: no candidate list
	}
	cand, total := rank(s.idx[:0], p, prm.TopK, topP)
	cand = topK(cand, prm.TopK)
	cand = nucleus(cand, p, topP, total)
	cand = minP(cand, p, prm.MinP)
	tok, lp, mass := draw(cand, p, rng.Float64())
	s.last.cand, s.last.total = cand, mass
	return tok, lp
}

// penalizeOutput applies vLLM's frequency and presence penalties to z
// over the output tokens out: z[id] −= freq × count(id), then −= pres
// for each id that occurs (the two steps and their order as in vLLM's
// apply_penalties). It costs len(out), not the vocabulary.
func (s *sampler) penalizeOutput(z []float64, out []int32, freq, pres float64) {
	if len(s.mark) < len(z) {
		s.count, s.mark, s.epoch = make([]int32, len(z)), make([]uint32, len(z)), 0
	}
	if s.epoch++; s.epoch == 0 { // wrapped: old marks could match again
		clear(s.mark)
		s.epoch = 1
	}
	for _, id := range out {
		if s.mark[id] != s.epoch {
			s.mark[id], s.count[id] = s.epoch, 0
		}
		s.count[id]++
	}
	for _, id := range out {
		if c := s.count[id]; c > 0 {
			z[id] -= freq * float64(c)
			z[id] -= pres
			s.count[id] = 0 // once per distinct id
		}
	}
}

// top appends to dst the k most probable tokens of the distribution the
// last sample drew from (most probable first, ties by lower id) with
// their logprobs under it: the same numbers as the sampled token's
// logprob. Tokens that distribution cannot draw (cut by top-k, top-p or
// min-p, or of zero probability) are left out. It must follow a sample
// call on the same sampler.
func (s *sampler) top(dst []server.TopLogprob, k int) []server.TopLogprob {
	if s.last.greedy {
		z := s.z
		logZ := s.last.logZ
		return selectTop(dst, k, len(z), func(i int) int32 { return int32(i) }, func(id int32) float64 { return z[id] },
			math.Inf(-1), func(v float64) float32 { return float32(v - logZ) })
	}
	p, total := s.p, s.last.total
	logp := func(v float64) float32 { return float32(math.Log(v / total)) }
	if s.last.cand == nil {
		return selectTop(dst, k, len(p), func(i int) int32 { return int32(i) }, func(id int32) float64 { return p[id] }, 0, logp)
	}
	cand := s.last.cand
	return selectTop(dst, k, len(cand), func(i int) int32 { return cand[i] }, func(id int32) float64 { return p[id] }, 0, logp)
}

// selectTop appends to dst the k ids among id(0..n-1) of highest score
// (ties by lower id; scores not above floor, NaN included, are skipped:
// a −Inf logit or a zero probability cannot be drawn), each with
// logp(score), best first. It keeps dst sorted and inserts only what
// beats its last entry, so a pass over a large vocabulary costs about n
// comparisons.
func selectTop(dst []server.TopLogprob, k, n int, id func(int) int32, score func(int32) float64, floor float64, logp func(float64) float32) []server.TopLogprob {
	base := len(dst)
	better := func(a, b int32) bool {
		sa, sb := score(a), score(b)
		return sa > sb || (sa == sb && a < b)
	}
	for i := range n {
		t := id(i)
		v := score(t)
		if !(v > floor) {
			continue
		}
		if len(dst)-base == k && !better(t, dst[len(dst)-1].TokenID) {
			continue
		}
		if len(dst)-base < k {
			dst = append(dst, server.TopLogprob{})
		}
		j := len(dst) - 1
		for j > base && better(t, dst[j-1].TokenID) {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = server.TopLogprob{TokenID: t}
	}
	for i := base; i < len(dst); i++ {
		dst[i].Logprob = logp(score(dst[i].TokenID))
	}
	return dst
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
	if len(z) == 0 {
		return 0, 0
	}
	best, bv := 0, z[0]
	for i, v := range z {
		if v > bv {
			best, bv = i, v
		}
	}
	if !logprobs {
		return int32(best), 0
	}
	return int32(best), float32(-math.Log(kernels.ExpShift(nil, z, z[best])))
}

// temperature scales z by 1/t in place, writes the unnormalized
// probabilities exp(z − max z) to p (the top token has 1, which min-p's
// threshold relies on) and returns their sum.
func temperature(p, z []float64, t float64) float64 {
	inv := 1 / t
	for i := range z {
		z[i] *= inv
	}
	return kernels.ExpShift(p, z, maxOf(z))
}

// maxOf is math.Max over v (−Inf for none, NaN if any is NaN) with plain
// comparisons in four independent lanes: math.Max is a call per element,
// which took as long as the rest of a temperature-sampled token, and one
// running maximum (slices.Max's too) waits on the previous comparison:
// slices.Max took 12× as long at 151,936 values.
func maxOf[F float32 | float64](v []F) float64 {
	inf := math.Inf(-1)
	m0, m1, m2, m3 := inf, inf, inf, inf
	nan := false
	i := 0
	for ; i+4 <= len(v); i += 4 {
		b := v[i : i+4 : i+4]
		f0, f1, f2, f3 := float64(b[0]), float64(b[1]), float64(b[2]), float64(b[3])
		// One comparison each in the common case (not larger, not NaN).
		if !(f0 <= m0) {
			m0, nan = max(m0, f0), nan || f0 != f0
		}
		if !(f1 <= m1) {
			m1, nan = max(m1, f1), nan || f1 != f1
		}
		if !(f2 <= m2) {
			m2, nan = max(m2, f2), nan || f2 != f2
		}
		if !(f3 <= m3) {
			m3, nan = max(m3, f3), nan || f3 != f3
		}
	}
	for ; i < len(v); i++ {
		if f := float64(v[i]); !(f <= m0) {
			m0, nan = max(m0, f), nan || f != f
		}
	}
	if nan {
		return math.NaN()
	}
	return max(max(m0, m1), max(m2, m3))
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

// drawAll picks from every token by inverse CDF at u in [0, 1) of p's
// mass total (ExpShift's sum of p), and returns the token with its log
// probability: draw without a candidate list, the temperature-only
// sampling RL rollouts use. The cumulative mass is added eight tokens at a
// time, then token by token inside the block where it passes u·total: a
// sequential sum waits on each add, and the result differs from it only
// where u·total falls within rounding of a boundary between tokens. Where
// rounding leaves u·total past the last cumulative sum, the token is the
// last one with mass.
func drawAll(p []float64, total, u float64) (int32, float32) {
	u *= total
	tok := len(p) - 1
	for tok > 0 && p[tok] == 0 {
		tok--
	}
	var cum float64
	i := 0
	for ; i+8 <= len(p); i += 8 {
		b := p[i : i+8 : i+8]
		s := ((b[0] + b[1]) + (b[2] + b[3])) + ((b[4] + b[5]) + (b[6] + b[7]))
		if u < cum+s {
			break
		}
		cum += s
	}
	for ; i < len(p); i++ {
		if cum += p[i]; u < cum {
			tok = i
			break
		}
	}
	return int32(tok), float32(math.Log(p[tok] / total))
}

// draw picks from the candidates in their order by inverse CDF at u in
// [0, 1) of their renormalized mass, and returns the token with its log
// probability under that distribution, and that mass.
func draw(cand []int32, p []float64, u float64) (int32, float32, float64) {
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
	return tok, float32(math.Log(p[tok] / total)), total
}
