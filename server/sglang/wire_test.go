package sglang

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// refRequest is the /generate body as encoding/json would write it: the
// reference the hand-written encoder is checked against.
type refRequest struct {
	RID            string  `json:"rid"`
	InputIDs       []int32 `json:"input_ids"`
	SamplingParams struct {
		Temperature       float64 `json:"temperature"`
		TopP              float64 `json:"top_p"`
		TopK              int     `json:"top_k"`
		MinP              float64 `json:"min_p"`
		RepetitionPenalty float64 `json:"repetition_penalty"`
		MaxNewTokens      *int    `json:"max_new_tokens,omitempty"`
		StopTokenIDs      []int32 `json:"stop_token_ids,omitempty"`
		SkipSpecialTokens bool    `json:"skip_special_tokens"`
		NoStopTrim        bool    `json:"no_stop_trim"`
		SamplingSeed      *uint64 `json:"sampling_seed,omitempty"`
	} `json:"sampling_params"`
	ReturnLogprob   bool `json:"return_logprob"`
	LogprobStartLen int  `json:"logprob_start_len"`
	Priority        *int `json:"priority,omitempty"`
	Stream          bool `json:"stream"`
}

func TestAppendGenerateRequestMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 500; n++ {
		req := server.GenerateRequest{RequestID: []string{"", "a", "traj-\"42\"\n", "ü\u2028<"}[r.IntN(4)]}
		for range r.IntN(20) {
			req.PromptIDs = append(req.PromptIDs, r.Int32())
		}
		p := &req.Params
		p.Temperature = []float64{0, 1, 0.7, 1e-9, 123456789.5}[r.IntN(5)]
		p.TopP = []float64{0, 0.9, 1}[r.IntN(3)]
		p.TopK = r.IntN(5) - 2
		p.MinP = r.Float64()
		p.RepetitionPenalty = []float64{0, 1, 1.05}[r.IntN(3)]
		p.MaxNewTokens = r.IntN(3) * 100
		if r.IntN(2) == 0 {
			p.StopTokenIDs = []int32{151645, 2}
		}
		if r.IntN(2) == 0 {
			s := r.Uint64()
			p.Seed = &s
		}
		p.Logprobs = r.IntN(2) == 0
		req.Priority = r.IntN(3) - 1

		got, err := appendGenerateRequest(nil, req, false)
		require.NoError(t, err)
		var ref refRequest
		ref.RID, ref.InputIDs = req.RequestID, req.PromptIDs
		if ref.InputIDs == nil {
			ref.InputIDs = []int32{}
		}
		sp := &ref.SamplingParams
		sp.Temperature, sp.TopP, sp.TopK, sp.MinP, sp.RepetitionPenalty = p.Temperature, p.TopP, p.TopK, p.MinP, p.RepetitionPenalty
		if sp.TopP == 0 {
			sp.TopP = 1
		}
		if sp.TopK <= 0 {
			sp.TopK = -1
		}
		if sp.RepetitionPenalty == 0 {
			sp.RepetitionPenalty = 1
		}
		if p.MaxNewTokens > 0 {
			sp.MaxNewTokens = &p.MaxNewTokens
		}
		sp.StopTokenIDs, sp.NoStopTrim, sp.SamplingSeed = p.StopTokenIDs, true, p.Seed
		ref.ReturnLogprob, ref.LogprobStartLen = p.Logprobs, -1
		if req.Priority != 0 {
			ref.Priority = &req.Priority
		}
		want, err := json.Marshal(ref)
		require.NoError(t, err)
		require.JSONEq(t, string(want), string(got))
	}
	_, err := appendGenerateRequest(nil, server.GenerateRequest{Params: server.SamplingParams{Temperature: math.NaN()}}, false)
	require.ErrorIs(t, err, server.ErrBadRequest)
}

// FuzzParseLogprobTriples checks the scanner against encoding/json.
func FuzzParseLogprobTriples(f *testing.F) {
	for _, s := range []string{`[]`, `[[-0.5,3,null]]`, `[[-0.5,3,"a\"]b"],[0,4,"x"]]`, `[[-1e-3,7]]`,
		`[[null,1,null]]`, `[[0.5,1,null]]`, `[[-1,-1,null]]`, `[[-1,1.5,null]]`, `[[-1,1,{"a":[1,2]}]]`, `[1]`, `[[-1e400,2,null]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		lps, ids, err := parseLogprobTriples(data)
		var ref [][]json.RawMessage
		if json.Unmarshal(data, &ref) != nil || ref == nil {
			require.Error(t, err, "%s", data)
			return
		}
		var wantL []float32
		var wantI []int32
		ok := true
		for _, e := range ref {
			if len(e) < 2 || len(e) > 3 {
				ok = false
				break
			}
			isNull := string(e[0]) == "null"
			if isNull {
				// orjson writes -inf as null.
				e[0] = json.RawMessage("-Inf")
			}
			lp, err1 := strconv.ParseFloat(string(e[0]), 64)
			if err1 != nil && !isRange(err1) || lp > 0 || math.IsNaN(lp) {
				ok = false
				break
			}
			id, err2 := strconv.ParseInt(string(e[1]), 10, 32)
			if err2 != nil || id < 0 {
				ok = false
				break
			}
			if !isNull {
				lp = math.Max(lp, -math.MaxFloat32)
			}
			wantL = append(wantL, float32(lp))
			wantI = append(wantI, int32(id))
		}
		if !ok {
			require.Error(t, err, "%s", data)
			return
		}
		require.NoError(t, err, "%s", data)
		require.Equal(t, len(wantI), len(ids))
		if len(wantI) > 0 {
			require.Equal(t, wantI, ids)
			require.Equal(t, wantL, lps)
		}
	})
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}
