package servertest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestTopLogprobs: scripted alternatives are cut to the request's count
// and streamed with their tokens; without a script the defaults put the
// sampled token first with its logprob; penalties pass the check.
func TestTopLogprobs(t *testing.T) {
	ctx := context.Background()
	top := [][]server.TopLogprob{{{TokenID: 5, Logprob: -0.1}, {TokenID: 8, Logprob: -2.5}, {TokenID: 1, Logprob: -3}}, {{TokenID: 6, Logprob: -0.2}}}
	s := servertest.New(servertest.Config{Rule: func(servertest.Call) servertest.Reply {
		return servertest.Reply{Tokens: []int32{5, 6}, Logprobs: []float32{-0.1, -0.2}, TopLogprobs: top}
	}})
	var streamed [][]server.TopLogprob
	out, err := s.GenerateStream(ctx, req("a", []int32{1}, server.SamplingParams{Logprobs: true, TopLogprobs: 2, PresencePenalty: 1, FrequencyPenalty: -1}),
		func(c server.Chunk) error { streamed = append(streamed, c.TopLogprobs...); return nil })
	require.NoError(t, err)
	want := [][]server.TopLogprob{top[0][:2], top[1]}
	require.Equal(t, want, out.TopLogprobs)
	require.Equal(t, want, streamed)

	d := servertest.New(servertest.Config{Rule: servertest.Constant(7, 9), Vocab: 10})
	out, err = d.Generate(ctx, req("b", []int32{1}, server.SamplingParams{Logprobs: true, TopLogprobs: 3}))
	require.NoError(t, err)
	require.Len(t, out.TopLogprobs, 2)
	for i, l := range out.TopLogprobs {
		require.Len(t, l, 3)
		require.Equal(t, out.TokenIDs[i], l[0].TokenID)
		require.Equal(t, out.Logprobs[i], l[0].Logprob)
		require.Greater(t, l[0].Logprob, l[1].Logprob)
	}
	require.Equal(t, int32(0), out.TopLogprobs[1][1].TokenID, "ids wrap at the vocabulary")
	_, err = d.Generate(ctx, req("c", []int32{1}, server.SamplingParams{PresencePenalty: 3}))
	require.ErrorIs(t, err, server.ErrBadRequest)
}
