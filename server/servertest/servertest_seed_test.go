package servertest_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestSeededRule: the same seed and prompt give the same tokens whatever
// the request id; another seed gives others; no seed and a zero
// vocabulary are errors (Random with vocab 0 used to panic).
func TestSeededRule(t *testing.T) {
	ctx := context.Background()
	srv := servertest.New(servertest.Config{Rule: servertest.Seeded(500, 8, 8)})
	gen := func(id string, seed *uint64) ([]int32, error) {
		out, err := srv.Generate(ctx, server.GenerateRequest{RequestID: id, PromptIDs: []int32{1, 2, 3},
			Params: server.SamplingParams{MaxNewTokens: 8, Seed: seed}})
		return out.TokenIDs, err
	}
	s1, s2 := uint64(1), uint64(2)
	a, err := gen("a", &s1)
	require.NoError(t, err)
	b, err := gen("b", &s1)
	require.NoError(t, err)
	require.Equal(t, a, b)
	c, err := gen("c", &s2)
	require.NoError(t, err)
	require.NotEqual(t, a, c)
	_, err = gen("d", nil)
	require.ErrorIs(t, err, server.ErrBadRequest)

	zero := servertest.New(servertest.Config{Rule: servertest.Random(1, 0, 1, 2)})
	_, err = zero.Generate(ctx, server.GenerateRequest{RequestID: "z", PromptIDs: []int32{1}, Params: server.SamplingParams{MaxNewTokens: 2}})
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "vocab 0")
}
