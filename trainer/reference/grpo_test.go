package reference

import (
	"context"
	"hash/fnv"
	"testing"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/cuda/train"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/stretchr/testify/require"
)

// byteTok is a minimal chat tokenizer over the tiny model's 64 ids: 1 =
// start, 2 = end of turn, 4..7 = roles, 8 + byte%56 for text.
type byteTok struct{}

func roleID(role string) int32 {
	switch role {
	case "system":
		return 4
	case "user":
		return 5
	case "assistant":
		return 6
	}
	return 7
}

func (byteTok) messages(ms []chat.Message) []int32 {
	var ids []int32
	for _, m := range ms {
		ids = append(ids, roleID(m.Role))
		for _, c := range []byte(m.Content) {
			ids = append(ids, 8+int32(c)%56)
		}
		ids = append(ids, 2)
	}
	return ids
}

func (t byteTok) EncodeChat(c tokenizer.ChatContext) ([]int32, error) {
	ids := append([]int32{1}, t.messages(c.Messages)...)
	if c.AddGenerationPrompt {
		ids = append(ids, 6)
	}
	return ids, nil
}

func (t byteTok) EncodeDelta(c tokenizer.ChatContext, added []chat.Message) ([]int32, error) {
	ids := t.messages(added)
	if c.AddGenerationPrompt {
		ids = append(ids, 6)
	}
	return ids, nil
}

func (byteTok) Decode(ids []int32, skipSpecial bool) (string, error) {
	b := make([]byte, 0, len(ids))
	for _, id := range ids {
		if id >= 8 {
			b = append(b, byte('0'+id%64))
		}
	}
	return string(b), nil
}

func (byteTok) EOSTokenIDs() []int32 { return []int32{2} }

// seeded gives every request a seed derived from its trajectory id and the
// training step, so the whole run is reproducible while the rollouts of a
// group still differ.
type seeded struct {
	*cuda.Engine
	step *int
}

func (s seeded) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	h := fnv.New64a()
	h.Write([]byte(req.RequestID))
	seed := h.Sum64() + uint64(*s.step)*0x9e3779b97f4a7c15
	req.Params.Seed = &seed
	return s.Engine.Generate(ctx, req)
}

// goodToken is what the reward pays for: a quarter of the vocabulary.
func goodToken(id int32) bool { return id%4 == 0 }

func TestGRPOStepRaisesReward(t *testing.T) {
	ctx := context.Background()
	mc := tinyConfig()
	w := model.RandomWeights(mc, 5)
	em, err := model.New(mc, kernels.NewCPU(0))
	require.NoError(t, err)
	shapes := mc.TensorShapes()
	for name, v := range w {
		require.NoError(t, em.SetTensor(name, shapes[name], v))
	}
	eng, err := cuda.New(em, cuda.Options{KVBlocks: 256})
	require.NoError(t, err)
	defer eng.Close()
	step := 0
	env := &agentloop.Env{Server: seeded{eng, &step}, Tokenizer: byteTok{}}
	reward := func(_ context.Context, in agentloop.RewardInput) (float64, error) {
		tr := in.Trajectory
		n, good := 0, 0
		for j, id := range tr.ResponseIDs {
			if tr.ResponseMask[j] == 1 && id != 2 {
				n++
				if goodToken(id) {
					good++
				}
			}
		}
		if n == 0 {
			return 0, nil
		}
		return float64(good) / float64(n), nil
	}
	mgr, err := agentloop.NewManager(nil, env, agentloop.Options{
		N:        8,
		Sampling: server.SamplingParams{Temperature: 1, MaxNewTokens: 8, Logprobs: true},
		Reward:   reward,
		Collate:  trajectory.CollateOptions{PromptLen: 16, ResponseLen: 8},
	})
	require.NoError(t, err)
	m, err := train.New(mc, w, train.Options{})
	require.NoError(t, err)
	tr, err := New(m, Config{AdamW: AdamWConfig{LR: 2e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}, MaxGradNorm: 1})
	require.NoError(t, err)
	g := &GRPO{Trainer: tr, Manager: mgr, Engine: eng,
		Config: GRPOConfig{PPO: trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, Agg: trainer.TokenMean}, TISCap: 2}}
	var samples []agentloop.Sample
	for i, q := range []string{"add 2 3", "say hi", "count", "7*6"} {
		samples = append(samples, agentloop.Sample{Index: i, Messages: []chat.Message{{Role: "user", Content: q}}})
	}
	const steps = 10
	var rewards []float64
	for step = 0; step < steps; step++ {
		st, err := g.Step(ctx, samples)
		require.NoError(t, err)
		require.Equal(t, 32, st.Trajectories)
		require.Equal(t, int64(step+1), st.Version)
		require.Equal(t, int64(step+1), g.Version())
		// Rollout and training ran the same weights: their logprobs agree
		// up to float32 kernel differences.
		require.Positive(t, st.Mismatch.Tokens)
		require.Less(t, st.Mismatch.MaxAbsDiff, 1e-4, "step %d", step)
		t.Logf("step %d: reward %.3f loss %+.4f grad norm %.3f mismatch max|Δlogp| %.2g k3 %.2g", step, st.MeanReward, st.Loss, st.GradNorm, st.Mismatch.MaxAbsDiff, st.Mismatch.K3)
		rewards = append(rewards, st.MeanReward)
	}
	// The engine serves the new weights: the next rollout reports them.
	out, err := mgr.Generate(ctx, samples[:1])
	require.NoError(t, err)
	for _, tj := range out.Trajectories {
		require.Equal(t, int64(steps), tj.MaxWeightVersion)
	}
	first := (rewards[0] + rewards[1]) / 2
	last := (rewards[steps-1] + rewards[steps-2]) / 2
	require.Greater(t, last, first+0.15, "rewards %v", rewards)
}

// failingUpdater rejects every weight update.
type failingUpdater struct{}

func (failingUpdater) UpdateWeights(context.Context, server.Weights) error {
	return &server.Error{Server: "test", Op: "update_weights", Err: server.ErrUnavailable}
}

func TestGRPOStepErrors(t *testing.T) {
	ctx := context.Background()
	mc := tinyConfig()
	w := model.RandomWeights(mc, 5)
	em, err := model.NewRandom(mc, 5, kernels.NewCPU(1))
	require.NoError(t, err)
	eng, err := cuda.New(em, cuda.Options{KVBlocks: 64})
	require.NoError(t, err)
	defer eng.Close()
	env := &agentloop.Env{Server: eng, Tokenizer: byteTok{}}
	m, err := train.New(mc, w, train.Options{})
	require.NoError(t, err)
	tr, err := New(m, Config{AdamW: AdamWConfig{LR: 1e-3, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}})
	require.NoError(t, err)
	samples := []agentloop.Sample{{Messages: []chat.Message{{Role: "user", Content: "hi"}}}}
	ppo := trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.2, ClipC: 3, Agg: trainer.TokenMean}
	sampling := server.SamplingParams{Temperature: 1, MaxNewTokens: 4, Logprobs: true}
	score := func(context.Context, agentloop.RewardInput) (float64, error) { return 1, nil }

	// Without collation there is nothing to train on.
	noCollate, err := agentloop.NewManager(nil, env, agentloop.Options{N: 2, Sampling: sampling, Reward: score})
	require.NoError(t, err)
	_, err = (&GRPO{Trainer: tr, Manager: noCollate, Engine: eng, Config: GRPOConfig{PPO: ppo}}).Step(ctx, samples)
	require.ErrorIs(t, err, ErrBatch)
	require.ErrorContains(t, err, "produced no batch")

	// A failed weight update is reported with the version it tried, and
	// the version does not advance.
	mgr, err := agentloop.NewManager(nil, env, agentloop.Options{N: 2, Sampling: sampling, Reward: score,
		Collate: trajectory.CollateOptions{PromptLen: 16, ResponseLen: 4}})
	require.NoError(t, err)
	g := &GRPO{Trainer: tr, Manager: mgr, Engine: failingUpdater{}, Config: GRPOConfig{PPO: ppo}}
	_, err = g.Step(ctx, samples)
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.ErrorContains(t, err, "update weights to version 1")
	require.Equal(t, int64(0), g.Version())
	g.Engine = eng
	require.NoError(t, g.Sync(ctx))
	require.Equal(t, int64(1), g.Version())

	// A bad PPO config surfaces from the loss.
	g = &GRPO{Trainer: tr, Manager: mgr, Engine: eng, Config: GRPOConfig{PPO: trainer.PPOConfig{ClipC: 0.5}}}
	_, err = g.Step(ctx, samples)
	require.ErrorContains(t, err, "ClipC must be > 1")

	// A cancelled context stops before training.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err = g.Step(cctx, samples)
	require.ErrorIs(t, err, context.Canceled)
}
