package httpapi_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestCompletionsPromptLogprobs: prompt_logprobs 0 gives vLLM's shape, a
// null first entry then {"<id>": {logprob, rank, decoded_token}} per
// prompt token (vllm/entrypoints/openai CompletionResponseChoice).
func TestCompletionsPromptLogprobs(t *testing.T) {
	cp := &capture{rule: servertest.Constant(7)}
	s := start(t, servertest.New(servertest.Config{Rule: cp.Rule}), httpapi.Config{})
	{
		code, resp := post(t, s.URL()+"/v1/completions", `{"prompt":[11,12,13],"max_tokens":1,"prompt_logprobs":0}`)
		require.Equal(t, 200, code, resp)
		require.True(t, cp.last().Params.PromptLogprobs)
		require.Zero(t, cp.last().Params.PromptLogprobsFrom)
		var r struct {
			Choices []struct {
				PromptLogprobs []map[string]struct {
					Logprob      float32 `json:"logprob"`
					Rank         *int    `json:"rank"`
					DecodedToken *string `json:"decoded_token"`
				} `json:"prompt_logprobs"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal([]byte(resp), &r), resp)
		plp := r.Choices[0].PromptLogprobs
		require.Len(t, plp, 3)
		require.Nil(t, plp[0])
		for p, id := range []string{"", "12", "13"} {
			if p == 0 {
				continue
			}
			e, ok := plp[p][id]
			require.True(t, ok, "entry %d is keyed by its token id", p)
			require.Equal(t, servertest.DefaultPromptLogprob(int32(11+p), p), e.Logprob)
			require.Nil(t, e.DecodedToken, "no tokenizer")
		}
	}
	// Without it there is no prompt_logprobs and the engine computes none.
	code, resp := post(t, s.URL()+"/v1/completions", `{"prompt":[11,12,13],"max_tokens":1}`)
	require.Equal(t, 200, code, resp)
	require.NotContains(t, resp, "prompt_logprobs")
	require.False(t, cp.last().Params.PromptLogprobs)
	// Top alternatives are not computed, nor streamed prompt logprobs.
	for _, body := range []string{`{"prompt":[11,12,13],"max_tokens":1,"prompt_logprobs":2}`,
		`{"prompt":[11,12,13],"max_tokens":1,"prompt_logprobs":0,"stream":true}`} {
		code, resp = post(t, s.URL()+"/v1/completions", body)
		require.Equal(t, 400, code, resp)
		require.Contains(t, resp, "prompt_logprobs")
	}
}
