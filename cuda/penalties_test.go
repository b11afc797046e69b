package cuda

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/agentrl/agentrl/server"
	"github.com/stretchr/testify/require"
)

// penaltyGolden is one case of testdata/penalties_golden.json, computed by
// PyTorch with vLLM's penalty semantics (see the generator's docstring).
type penaltyGolden struct {
	Seed              int       `json:"seed"`
	Logits            []float32 `json:"logits"`
	Prompt            []int32   `json:"prompt"`
	Output            []int32   `json:"output"`
	RepetitionPenalty float64   `json:"repetition_penalty"`
	PresencePenalty   float64   `json:"presence_penalty"`
	FrequencyPenalty  float64   `json:"frequency_penalty"`
	Temperature       float64   `json:"temperature"`
	Penalized         []float64 `json:"penalized"`
	Argmax            int32     `json:"argmax"`
	TopIDs            []int32   `json:"top_ids"`
	TopLogprobs       []float64 `json:"top_logprobs"`
}

// TestPenaltiesTorchGolden: the repetition, frequency and presence
// penalties, and the top logprobs after them (greedy, and at a
// temperature), agree with PyTorch's computation of vLLM's
// apply_penalties.
func TestPenaltiesTorchGolden(t *testing.T) {
	data, err := os.ReadFile("testdata/penalties_golden.json")
	require.NoError(t, err)
	var file struct{ Cases []penaltyGolden }
	require.NoError(t, json.Unmarshal(data, &file))
	require.NotEmpty(t, file.Cases)
	for _, c := range file.Cases {
		prm := server.SamplingParams{Temperature: c.Temperature, RepetitionPenalty: c.RepetitionPenalty,
			PresencePenalty: c.PresencePenalty, FrequencyPenalty: c.FrequencyPenalty, Logprobs: true, TopLogprobs: len(c.TopIDs)}
		seen := distinct(append(append([]int32(nil), c.Prompt...), c.Output...))
		var s sampler
		tok, lp := s.sample(c.Logits, &prm, seen, c.Output, rand.New(rand.NewPCG(uint64(c.Seed), 1)))
		if c.Temperature == 0 {
			// sample scaled nothing: z is the penalized logits.
			for i, want := range c.Penalized {
				require.InDelta(t, want, s.z[i], 1e-5, "case %d: penalized logit %d", c.Seed, i)
			}
			require.Equal(t, c.Argmax, tok, "case %d", c.Seed)
		}
		top := s.top(nil, prm.TopLogprobs)
		require.Len(t, top, len(c.TopIDs), "case %d", c.Seed)
		for i, e := range top {
			require.Equal(t, c.TopIDs[i], e.TokenID, "case %d: top %d", c.Seed, i)
			require.InDelta(t, c.TopLogprobs[i], float64(e.Logprob), 2e-5, "case %d: top %d", c.Seed, i)
			if e.TokenID == tok {
				require.Equal(t, lp, e.Logprob, "case %d: the sampled token's logprob is its top entry", c.Seed)
			}
		}
	}
}

func distinct(ids []int32) []int32 {
	set := map[int32]bool{}
	var out []int32
	for _, id := range ids {
		if !set[id] {
			set[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TestTopLogprobsTruncated: under top-k, top-p or min-p the alternatives
// are the kept tokens only, renormalized as the draw is, so they sum
// to at most 1, the sampled token's logprob is among them, and a request
// for more than are kept gets what is kept.
func TestTopLogprobsTruncated(t *testing.T) {
	logits := []float32{2.0, 1.5, 1.0, 0.5, -1.0, 1.5, -3}
	for _, prm := range []server.SamplingParams{
		{Temperature: 1, TopK: 3, TopLogprobs: 5, Logprobs: true},
		{Temperature: 0.8, TopP: 0.6, TopLogprobs: 7, Logprobs: true},
		{Temperature: 1.3, MinP: 0.3, TopLogprobs: 7, Logprobs: true},
	} {
		want := processed(logits, prm, nil)
		kept := 0
		for _, v := range want {
			if v > 0 {
				kept++
			}
		}
		var s sampler
		r := rand.New(rand.NewPCG(9, 9))
		for range 50 {
			tok, lp := s.sample(logits, &prm, nil, nil, r)
			top := s.top(nil, prm.TopLogprobs)
			require.Len(t, top, min(kept, prm.TopLogprobs), "%+v", prm)
			found := false
			for i, e := range top {
				require.InDelta(t, math.Log(want[e.TokenID]), float64(e.Logprob), 1e-6)
				if i > 0 {
					require.GreaterOrEqual(t, top[i-1].Logprob, e.Logprob)
				}
				if e.TokenID == tok {
					found = true
					require.Equal(t, lp, e.Logprob)
				}
			}
			require.True(t, found, "sampled %d not among %v", tok, top)
		}
	}
}

// TestTopLogprobsTies: equal logits rank by lower id, and −Inf logits
// (tokens that cannot be drawn) are never listed.
func TestTopLogprobsTies(t *testing.T) {
	inf := float32(math.Inf(-1))
	logits := []float32{inf, 1, 3, 1, 3, inf}
	var s sampler
	s.sample(logits, &server.SamplingParams{TopLogprobs: 6}, nil, nil, nil)
	top := s.top(nil, 6)
	ids := make([]int32, len(top))
	for i, e := range top {
		ids[i] = e.TokenID
	}
	require.Equal(t, []int32{2, 4, 1, 3}, ids)
}

// TestPenaltiesOffAllocs: the output penalties allocate nothing once warm
// either (their per-id marks are kept between calls).
func TestPenaltiesOffAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	logits := make([]float32, 5000)
	for i := range logits {
		logits[i] = float32(r.NormFloat64())
	}
	out := []int32{1, 5, 9, 5, 5, 1}
	prm := server.SamplingParams{Temperature: 1, PresencePenalty: 0.5, FrequencyPenalty: 0.2}
	var s sampler
	s.sample(logits, &prm, nil, out, r)
	require.Zero(t, testing.AllocsPerRun(20, func() { s.sample(logits, &prm, nil, out, r) }))
}
