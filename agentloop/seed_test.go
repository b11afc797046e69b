package agentloop_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestSeededGroupDiffers is the seed bug: with Options.Sampling.Seed set
// and N > 1, every rollout of a group was sent the same seed, so an engine
// that honours seeds (servertest.Seeded, as the in-process engine, SGLang
// and vLLM do) sampled the same tokens N times and every GRPO advantage was
// 0. Each rollout now gets its own RolloutSeed: a group of 8 gives 8
// distinct rollouts, and the same batch gives the same 8 on every run.
func TestSeededGroupDiffers(t *testing.T) {
	tok, err := loadQwen3()
	if err != nil {
		t.Fatal(err)
	}
	run := func() [][]int32 {
		engine := servertest.New(servertest.Config{Rule: servertest.Seeded(1000, 4, 12)})
		reg := agentloop.NewRegistry()
		seed := uint64(42)
		m, err := agentloop.NewManager(reg, &agentloop.Env{Server: engine, Tokenizer: tok}, agentloop.Options{RewardFromLoop: true,
			N: 8, Sampling: server.SamplingParams{Temperature: 1, MaxNewTokens: 16, Seed: &seed},
		})
		require.NoError(t, err)
		out, err := m.Generate(context.Background(), []agentloop.Sample{{ID: "q",
			Messages: []chat.Message{{Role: chat.RoleUser, Content: "Say something."}}}})
		require.NoError(t, err)
		require.Len(t, out.Results, 1)
		var got [][]int32
		for _, tr := range out.Results[0].Trajectories {
			got = append(got, tr.ResponseIDs)
		}
		return got
	}
	a := run()
	require.Len(t, a, 8)
	for i := range a {
		for j := i + 1; j < len(a); j++ {
			require.False(t, slices.Equal(a[i], a[j]), "rollouts %d and %d sampled the same tokens", i, j)
		}
	}
	require.Equal(t, a, run(), "a seeded batch must be reproducible")
}

// TestRolloutSeed: distinct per rollout, group and id; stable; 63 bits.
func TestRolloutSeed(t *testing.T) {
	seen := map[uint64]bool{}
	for _, g := range []string{"a", "b", "ab"} {
		for r := 0; r < 64; r++ {
			s := agentloop.RolloutSeed(7, g, g+"/x", r)
			require.False(t, seen[s], "seed repeats at group %q rollout %d", g, r)
			require.Less(t, s, uint64(1)<<63)
			seen[s] = true
		}
	}
	require.Equal(t, agentloop.RolloutSeed(7, "a", "a/1", 1), agentloop.RolloutSeed(7, "a", "a/1", 1))
	require.NotEqual(t, agentloop.RolloutSeed(7, "a", "a/1", 1), agentloop.RolloutSeed(8, "a", "a/1", 1))
}

func ExampleRolloutSeed() {
	// The seeds the Manager sends rollouts 0 and 1 of group "q" for base 42.
	s0 := agentloop.RolloutSeed(42, "q", "q/0", 0)
	s1 := agentloop.RolloutSeed(42, "q", "q/1", 1)
	fmt.Println(s0 != s1, s0 < 1<<63)
	// Output: true true
}
