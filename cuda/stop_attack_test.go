package cuda

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// TestAttackLongStopList: the stop list is checked after every sampled
// token, so its length multiplied the work of the whole generation (8 M
// ids made a 4,000-token request take 47 s instead of 20 s, and the
// requests beside it eight times slower). A list longer than the
// vocabulary is refused; a list of the whole vocabulary's length is held
// as a set, built once: the scheduler keeps no list to scan.
func TestAttackLongStopList(t *testing.T) {
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	vocab := ref.cfg.VocabSize

	over := make([]int32, vocab+1)
	_, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: ref.prompt,
		Params: server.SamplingParams{StopTokenIDs: over, MaxNewTokens: 4}})
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "257 stop token ids: more than the vocabulary of 256")

	// vocab ids, every one but the first three greedy tokens repeated,
	// the 3rd greedy token last: the scan this replaces found it last.
	stop := ref.tokens[2]
	var ids []int32
	for id := int32(0); len(ids) < vocab-1; id = (id + 1) % int32(vocab) {
		if !slices.Contains(ref.tokens[:3], id) {
			ids = append(ids, id)
		}
	}
	ids = append(ids, stop)
	var seen []server.SamplingParams
	var sets int
	require.NoError(t, e.do(context.Background(), "test hook", func(s *sched) error {
		s.afterStep = func(s *sched) {
			for _, r := range s.running {
				seen = append(seen, r.params)
				if r.stops.Has(stop) {
					sets++
				}
			}
		}
		return nil
	}))
	out, err := e.Generate(context.Background(), server.GenerateRequest{PromptIDs: ref.prompt,
		Params: server.SamplingParams{StopTokenIDs: ids, MaxNewTokens: 32}})
	require.NoError(t, err)
	require.Equal(t, server.StopEOS, out.StopReason)
	require.Equal(t, ref.tokens[:3], out.TokenIDs)
	require.NotEmpty(t, seen)
	require.Equal(t, len(seen), sets, "every step's request holds the stop set")
	for _, p := range seen {
		require.Nil(t, p.StopTokenIDs, "no stop list is left for the scheduler to scan per token")
	}
}
