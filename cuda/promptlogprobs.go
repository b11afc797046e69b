package cuda

import (
	"math"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/kvcache"
)

// Prompt logprobs (server.SamplingParams.PromptLogprobs) come from the
// prefill itself: the chunks that cover the wanted prompt positions run
// with all their rows' logits (model.Seq.AllLogits), and row p's
// log-softmax at token p+1 is that token's logprob. They are computed only
// for requests that ask, only over the rows they want, and the sampled
// token's row is the chunk's last as for any other request.

// promptLogitsBytes bounds the logits one request's prefill chunk asks for
// when it wants prompt logprobs (rows × vocabulary × 4 bytes): such chunks
// are cut to fewer tokens, which chunked prefill computes bitwise the same.
const promptLogitsBytes = 64 << 20

// plpFirstRow is the first row whose logits r's prompt logprobs need: the
// row before the first wanted position (position 0 has none).
func (r *request) plpFirstRow() int {
	return max(r.params.PromptLogprobsFrom, 1) - 1
}

// wantsPromptRows reports whether the chunk of positions [lo, hi) holds
// rows r's prompt logprobs still need: rows plpFirstRow to prompt-2 (the
// last prompt row predicts the first sampled token, not a prompt one).
func (r *request) wantsPromptRows(lo, hi int) bool {
	return r.params.PromptLogprobs && !r.plpDone && hi > r.plpFirstRow() && lo <= r.prompt-2
}

// chunkCap is the most tokens r's next chunk may have beyond the token
// budget: a chunk before the first wanted row ends at it (and needs no
// logits but its last), one from it on is cut to promptLogitsBytes.
func (s *sched) chunkCap(r *request) int {
	if !r.params.PromptLogprobs || r.plpDone {
		return math.MaxInt
	}
	if lead := r.plpFirstRow() - r.computed; lead > 0 {
		return lead
	}
	return max(1, promptLogitsBytes/(4*s.m.Config().VocabSize))
}

// acquire takes r's block table. A request whose prompt logprobs are still
// to compute is served from the prefix cache only up to its first wanted
// row: the cache holds keys and values, not logits, so those rows are
// recomputed (into fresh blocks; shared ones are never written).
func (s *sched) acquire(r *request) (*kvcache.Table, int, error) {
	if !r.params.PromptLogprobs || r.plpDone {
		return s.blocks.Acquire(r.tokens)
	}
	table, cached, err := s.blocks.Acquire(r.tokens[:r.plpFirstRow()+1])
	if err != nil {
		return nil, 0, err
	}
	if err := s.blocks.Grow(table, len(r.tokens)); err != nil {
		s.blocks.Release(table)
		return nil, 0, err
	}
	return table, cached, nil
}

// promptLogprobs reads the prompt logprobs out of the step's all-row
// logits and leaves each such member's logits as its last row, the one
// sampling reads. The rows split over the CPU's threads.
func (s *sched) promptLogprobs(logits [][]float32) {
	for i, q := range s.batch {
		if !q.AllLogits {
			continue
		}
		r, n := s.members[i], len(q.Tokens)
		V := len(logits[i]) / n
		rows := logits[i]
		lo, hi := max(q.Start, r.plpFirstRow()), min(q.Start+n, r.prompt-1) // positions whose row is wanted
		from := r.params.PromptLogprobsFrom
		if lo < hi {
			s.m.CPU().Split(hi-lo, func(a, b int) {
				for p := lo + a; p < lo+b; p++ {
					j := p - q.Start
					r.plp[p+1-from] = logSoftmaxAt(rows[j*V:(j+1)*V], r.tokens[p+1])
				}
			})
		}
		if q.Start+n >= r.prompt-1 {
			r.plpDone = true
		}
		logits[i] = rows[(n-1)*V : n*V : n*V]
	}
}

// logSoftmaxAt is log softmax(z)[tok] in float64, its normalizer summed
// as the sampler's (kernels.ExpShift), so a prompt token's logprob equals
// the one the sampler reports when it samples that token at temperature 1
// without truncation, up to the last bits of float32.
func logSoftmaxAt(z []float32, tok int32) float32 {
	mx := maxOf(z)
	return float32(float64(z[tok]) - mx - math.Log(kernels.ExpShiftSum32(z, mx)))
}
