package sglang_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

// TestTopLogprobsAndPenaltiesRoundTrip: top_logprobs_num and the
// presence and frequency penalties go out under SGLang's names, and
// output_top_logprobs (served by httpapi over servertest) comes back as
// the engine's alternatives, streamed or not.
func TestTopLogprobsAndPenaltiesRoundTrip(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 8, 2)})
	c, rec, _ := setup(t, eng, sglang.Config{})
	p := server.SamplingParams{Temperature: 1, MaxNewTokens: 3, PresencePenalty: 0.5, FrequencyPenalty: -0.25, TopLogprobs: 3}
	out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "t", PromptIDs: []int32{1}, Params: p})
	require.NoError(t, err)
	require.JSONEq(t, `{"rid":"t","input_ids":[1],
		"sampling_params":{"temperature":1,"top_p":1,"top_k":-1,"min_p":0,"repetition_penalty":1,"presence_penalty":0.5,"frequency_penalty":-0.25,
		"max_new_tokens":3,"skip_special_tokens":false,"no_stop_trim":true},
		"return_logprob":true,"top_logprobs_num":3,"logprob_start_len":-1,"stream":false}`, rec.Last("/generate").Body)
	require.Nil(t, out.Logprobs, "only the alternatives were asked for")
	want := make([][]server.TopLogprob, len(out.TokenIDs))
	for i, id := range out.TokenIDs {
		want[i] = servertest.DefaultTopLogprobs(id, servertest.DefaultLogprob(id, i), 3, 0)
	}
	require.Equal(t, want, out.TopLogprobs)
	var got servertest.Chunks
	sout, err := c.GenerateStream(ctx, server.GenerateRequest{RequestID: "t", PromptIDs: []int32{1}, Params: p}, got.Emit)
	require.NoError(t, err)
	require.Equal(t, want, sout.TopLogprobs)
	require.Equal(t, want, got.TopLogprobs)
}
