package httpapi

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-written encoders must agree with encoding/json on the same
// values (the references below use plain reflection, not the appenders).
func TestResponseEncodersMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "plain", "quote\" back\\ nl\n <tag> & \u2028 ü", "\x00\x1f"}
	for n := 0; n < 300; n++ {
		k := r.IntN(6)
		ids := make([]int32, k)
		lps := make([]float32, k)
		for i := range ids {
			ids[i] = r.Int32N(200000)
			lps[i] = -r.Float32() * []float32{1, 100, 1e-6}[r.IntN(3)]
		}
		if k > 0 && r.IntN(4) == 0 {
			lps[0] = float32(math.Inf(-1))
		}
		finishes := []sglFinish{{Type: "abort", Message: texts[r.IntN(len(texts))]}, {Type: "stop"}}
		if k > 0 {
			last := ids[k-1]
			finishes = append(finishes, sglFinish{Type: "stop", Matched: &last}, sglFinish{Type: "length", Length: &k})
		}
		resp := sglGenerateResponse{Text: texts[r.IntN(len(texts))], OutputIDs: ids, MetaInfo: sglMeta{
			ID: texts[r.IntN(len(texts))], FinishReason: finishes[r.IntN(len(finishes))], PromptTokens: r.IntN(5000),
			CompletionTokens: k, CachedTokens: r.IntN(100), WeightVersion: "7", NumRetractions: r.IntN(3), E2ELatency: r.Float64()}}
		withLP := r.IntN(2) == 0
		if withLP {
			resp.MetaInfo.OutputTokenLogprobs = &logprobTriples{lps: lps, ids: ids}
		}
		// Reference: the same value through reflection, triples as [][]any.
		type refMeta struct {
			ID                  string    `json:"id"`
			FinishReason        sglFinish `json:"finish_reason"`
			PromptTokens        int       `json:"prompt_tokens"`
			CompletionTokens    int       `json:"completion_tokens"`
			CachedTokens        int       `json:"cached_tokens"`
			WeightVersion       string    `json:"weight_version"`
			NumRetractions      int       `json:"num_retractions"`
			OutputTokenLogprobs *[][]any  `json:"output_token_logprobs,omitempty"`
			E2ELatency          float64   `json:"e2e_latency"`
		}
		m := resp.MetaInfo
		ref := struct {
			Text      string  `json:"text"`
			OutputIDs []int32 `json:"output_ids"`
			MetaInfo  refMeta `json:"meta_info"`
		}{resp.Text, ids, refMeta{m.ID, m.FinishReason, m.PromptTokens, m.CompletionTokens, m.CachedTokens, m.WeightVersion, m.NumRetractions, nil, m.E2ELatency}}
		if withLP {
			triples := [][]any{}
			for i, id := range ids {
				triples = append(triples, []any{float64(finiteLogprob(lps[i])), id, nil})
			}
			ref.MetaInfo.OutputTokenLogprobs = &triples
		}
		checkSame(t, ref, resp.appendJSON(nil))

		// vLLM.
		vr := vllmGenerateResponse{RequestID: resp.MetaInfo.ID, CachedTokens: r.IntN(9), WeightVersion: r.Int64N(100) - 50,
			Choices: []vllmGenerateChoice{{FinishReason: "stop", TokenIDs: ids}}}
		type refEntry struct {
			Token   string  `json:"token"`
			TokenID int32   `json:"token_id"`
			Logprob float64 `json:"logprob"`
			Top     []int   `json:"top_logprobs"`
		}
		type refChoice struct {
			Index        int     `json:"index"`
			FinishReason string  `json:"finish_reason"`
			TokenIDs     []int32 `json:"token_ids"`
			Logprobs     *struct {
				Content []refEntry `json:"content"`
			} `json:"logprobs"`
		}
		vref := struct {
			RequestID     string      `json:"request_id"`
			Choices       []refChoice `json:"choices"`
			CachedTokens  int         `json:"num_cached_tokens"`
			WeightVersion int64       `json:"weight_version"`
		}{vr.RequestID, []refChoice{{FinishReason: "stop", TokenIDs: ids}}, vr.CachedTokens, vr.WeightVersion}
		if withLP {
			vr.Choices[0].Logprobs = &struct {
				Content *vllmContent `json:"content"`
			}{&vllmContent{ids: ids, lps: lps}}
			vref.Choices[0].Logprobs = &struct {
				Content []refEntry `json:"content"`
			}{Content: []refEntry{}}
			for i, id := range ids {
				vref.Choices[0].Logprobs.Content = append(vref.Choices[0].Logprobs.Content,
					refEntry{tokenAsID(id), id, float64(finiteLogprob(lps[i])), []int{}})
			}
		}
		checkSame(t, vref, vr.appendJSON(nil))
	}
}

// checkSame compares decoded values: float32 text may differ in digits, not
// in value once read back as float32.
func checkSame(t *testing.T, ref any, got []byte) {
	t.Helper()
	want, err := json.Marshal(ref)
	require.NoError(t, err)
	require.True(t, json.Valid(got), "%s", got)
	var a, b any
	require.NoError(t, json.Unmarshal(want, &a))
	require.NoError(t, json.Unmarshal(got, &b))
	require.Equal(t, roundFloats(a), roundFloats(b), "hand: %s\nref:  %s", got, want)
}

func roundFloats(v any) any {
	switch x := v.(type) {
	case float64:
		return float32(x)
	case []any:
		for i := range x {
			x[i] = roundFloats(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = roundFloats(x[k])
		}
	}
	return v
}
