package arith_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/tokenizer"
)

// TestSeededGroupOnEngine: a seeded GRPO group of 8 on the in-process
// engine (the committed model's shape with random weights, so that
// temperature 1 has entropy to sample from; the trained model is nearly
// deterministic) through ToolAgent gives 8 distinct rollouts, and the same 8 bit for bit (tokens and logprobs) on a
// second engine. Before each rollout had its own seed (RolloutSeed), all 8
// sampled the same tokens.
func TestSeededGroupOnEngine(t *testing.T) {
	dir := embedded(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.NoError(t, model.WriteDir(dir, cfg, model.RandomWeights(cfg, 5)))
	tasks, err := arith.Generate(arith.DemoSeed, 1, arith.HeldOut)
	require.NoError(t, err)
	run := func() ([][]int32, [][]float32) {
		m, err := model.Load(dir, nil)
		require.NoError(t, err)
		e, err := cuda.New(m, arith.EngineOptions(2))
		require.NoError(t, err)
		defer e.Close()
		tools, err := arith.Tools()
		require.NoError(t, err)
		reg := agentloop.NewRegistry()
		require.NoError(t, reg.SetConfig(agentloop.ToolAgentName, arith.AgentConfig()))
		sp := arith.Sampling(tok, 1.0)
		seed := uint64(2026)
		sp.Seed = &seed
		mgr, err := agentloop.NewManager(reg, &agentloop.Env{Server: e, Tokenizer: tok, Tools: tools},
			agentloop.Options{RewardFromLoop: true, DefaultAgent: agentloop.ToolAgentName, N: 8, Sampling: sp})
		require.NoError(t, err)
		out, err := mgr.Generate(context.Background(), []agentloop.Sample{tasks[0].Sample(0)})
		require.NoError(t, err)
		var ids [][]int32
		var lps [][]float32
		for _, tr := range out.Results[0].Trajectories {
			ids, lps = append(ids, tr.ResponseIDs), append(lps, tr.Logprobs)
		}
		return ids, lps
	}
	ids, lps := run()
	require.Len(t, ids, 8)
	for i := range ids {
		for j := i + 1; j < len(ids); j++ {
			require.False(t, slices.Equal(ids[i], ids[j]), "rollouts %d and %d sampled the same tokens", i, j)
		}
	}
	ids2, lps2 := run()
	require.Equal(t, ids, ids2)
	require.Equal(t, lps, lps2)
}
