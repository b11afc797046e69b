package reference

import (
	"fmt"
	"math"
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/cuda/train"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func tinyConfig() *model.Config {
	return &model.Config{ModelType: model.Qwen3, VocabSize: 64, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8,
		RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 128}
}

func newTrainer(t *testing.T, seed uint64, cfg Config) *Trainer {
	t.Helper()
	mc := tinyConfig()
	m, err := train.New(mc, model.RandomWeights(mc, seed), train.Options{})
	require.NoError(t, err)
	tr, err := New(m, cfg)
	require.NoError(t, err)
	return tr
}

// toolTrace is a synthetic tool-use trajectory: the model writes a call
// for a+b (mask 1), the tool answers (mask 0), the model writes the answer
// and its end token (mask 1).
func toolTrace(t *testing.T, a, b int32) *trajectory.Trajectory {
	t.Helper()
	bld := trajectory.NewBuilder([]int32{1, 5, 10 + a, 10 + b, 6})
	require.NoError(t, bld.AppendModel([]int32{40, 10 + a, 10 + b, 41, 2}, nil))
	require.NoError(t, bld.AppendObservation([]int32{7, 50, 10 + (a+b)%20, 51, 6}))
	require.NoError(t, bld.AppendModel([]int32{10 + (a+b)%20, 2}, nil))
	tr := bld.Build()
	return tr
}

func toolBatch(t *testing.T) *trajectory.Batch {
	t.Helper()
	var trs []*trajectory.Trajectory
	for i, ab := range [][2]int32{{1, 2}, {3, 4}, {5, 9}, {7, 7}} {
		tr := toolTrace(t, ab[0], ab[1])
		tr.Index = i
		trs = append(trs, tr)
	}
	b, err := trajectory.Collate(trs, trajectory.CollateOptions{PromptLen: 8, ResponseLen: 16})
	require.NoError(t, err)
	return b
}

var sftConfig = Config{AdamW: AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8, WeightDecay: 0.01}, MaxGradNorm: 1}

func TestSFTLossDecreases(t *testing.T) {
	tr := newTrainer(t, 3, sftConfig)
	b := toolBatch(t)
	var losses []float64
	for range 25 {
		st, err := tr.SFTStep(b)
		require.NoError(t, err)
		require.Equal(t, 4*7, st.Tokens) // 5 + 2 model tokens per row
		require.Positive(t, st.GradNorm)
		losses = append(losses, st.Loss)
	}
	final, err := tr.EvalSFT(b)
	require.NoError(t, err)
	t.Logf("SFT loss: %.3f → %.3f (after 25 steps: %.3f)", losses[0], losses[len(losses)-1], final)
	require.Greater(t, losses[0], 3.0) // a random 64-token model: ≈ ln 64
	require.Less(t, final, losses[0]/4)
	require.Equal(t, 25, tr.Opt.Steps())
}

// TestMaskBugChangesLossAndGradients plants the bug the trajectory
// contract forbids — tool-output tokens with response_mask 1 — and shows
// the trainer's loss and gradients change: the mask is what decides what is
// trained on, end to end.
func TestMaskBugChangesLossAndGradients(t *testing.T) {
	good := toolBatch(t)
	bad := *good
	bad.ResponseMask = append([]int32(nil), good.ResponseMask...)
	planted := 0
	for i := 0; i < bad.Size; i++ {
		for j := 0; j < int(bad.ResponseLens[i]); j++ {
			if bad.ResponseMask[i*bad.ResponseLen+j] == 0 {
				bad.ResponseMask[i*bad.ResponseLen+j] = 1
				planted++
			}
		}
	}
	require.Equal(t, 4*5, planted)

	tr := newTrainer(t, 3, sftConfig)
	lossGood, err := tr.EvalSFT(good)
	require.NoError(t, err)
	lossBad, err := tr.EvalSFT(&bad)
	require.NoError(t, err)
	require.Greater(t, math.Abs(lossGood-lossBad), 1e-3, "good %v bad %v", lossGood, lossBad)

	// The correct loss is the mean NLL of exactly the model-sampled tokens,
	// computed here straight from the model's per-token logprobs.
	lp, err := tr.Model.Forward([][]int32{append(append([]int32(nil), good.Prompts[3:8]...), good.Responses[:12]...)})
	require.NoError(t, err)
	var nll float64
	for _, j := range []int{0, 1, 2, 3, 4, 10, 11} { // response positions with mask 1
		nll -= float64(lp[0][4+j])
	}
	lpm, _, _, err := tr.responseLogprobs(good)
	require.NoError(t, err)
	var row0 float64
	for j, m := range good.ResponseMask[:good.ResponseLen] {
		row0 -= float64(m) * float64(lpm.Row(0)[j])
	}
	require.InDelta(t, nll/7, row0/7, 1e-5)

	grads := func(b *trajectory.Batch) map[string][]float32 {
		lp, rs, plens, err := tr.responseLogprobs(b)
		require.NoError(t, err)
		_, g, _, err := SFTLoss(lp, b.ResponseMask)
		require.NoError(t, err)
		require.NoError(t, tr.backward(g, rs, plens))
		out := map[string][]float32{}
		for _, p := range tr.Model.Params() {
			out[p.Name] = append([]float32(nil), p.Grad...)
		}
		tr.Model.ZeroGrad()
		return out
	}
	gg, gb := grads(good), grads(&bad)
	var diff, norm float64
	for name, v := range gg {
		for i := range v {
			diff += math.Pow(float64(v[i]-gb[name][i]), 2)
			norm += math.Pow(float64(v[i]), 2)
		}
	}
	t.Logf("loss with correct mask %.4f, with tool tokens masked in %.4f; relative gradient change %.3f", lossGood, lossBad, math.Sqrt(diff/norm))
	require.Greater(t, math.Sqrt(diff/norm), 0.05)
}

func TestBatchErrors(t *testing.T) {
	tr := newTrainer(t, 1, sftConfig)
	b := toolBatch(t)

	_, err := tr.SFTStep(nil)
	require.ErrorIs(t, err, ErrBatch)

	pad := *b
	pad.ResponseMask = append([]int32(nil), b.ResponseMask...)
	pad.ResponseMask[b.ResponseLen-1] = 1
	_, err = tr.SFTStep(&pad)
	require.ErrorIs(t, err, ErrBatch)
	require.ErrorContains(t, err, "row 0: response_mask is 1 on padding position 15 (response length 12)")

	none := *b
	none.ResponseMask = make([]int32, len(b.ResponseMask))
	_, err = tr.SFTStep(&none)
	require.ErrorContains(t, err, "no response token has mask 1")

	short := *b
	short.InputIDs = b.InputIDs[:10]
	_, err = tr.SFTStep(&short)
	require.ErrorContains(t, err, "tensors do not match")

	noPrompt := *b
	noPrompt.AttentionMask = append([]int32(nil), b.AttentionMask...)
	W := b.PromptLen + b.ResponseLen
	for j := 0; j < b.PromptLen; j++ {
		noPrompt.AttentionMask[W+j] = 0
	}
	_, err = tr.SFTStep(&noPrompt)
	require.ErrorContains(t, err, "row 1 has an empty prompt")

	_, err = New(tr.Model, Config{AdamW: sftConfig.AdamW, MaxGradNorm: -1})
	require.ErrorIs(t, err, ErrConfig)
}

// groupBatch is two GRPO groups of two rollouts with the given rewards.
func groupBatch(t *testing.T, rewards [4]float64) *trajectory.Batch {
	t.Helper()
	var trs []*trajectory.Trajectory
	for i, r := range rewards {
		tr := toolTrace(t, int32(i), int32(2*i))
		tr.Index, tr.GroupID, tr.ID = i/2, []string{"a", "b"}[i/2], fmt.Sprint(i)
		rr := r
		tr.Reward = &rr
		trs = append(trs, tr)
	}
	b, err := trajectory.Collate(trs, trajectory.CollateOptions{PromptLen: 8, ResponseLen: 16})
	require.NoError(t, err)
	return b
}

func TestGRPOUpdate(t *testing.T) {
	ppo := trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.2, ClipC: 3, Agg: trainer.TokenMean}
	// Equal rewards within every group: zero advantage, zero gradient, and
	// (without weight decay) AdamW leaves the weights exactly as they were.
	tr := newTrainer(t, 2, Config{AdamW: AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}})
	before := tr.Model.Tensors()
	st, err := (&GRPO{Trainer: tr, Config: GRPOConfig{PPO: ppo}}).Update(groupBatch(t, [4]float64{1, 1, 0, 0}))
	require.NoError(t, err)
	require.Zero(t, st.GradNorm)
	require.Equal(t, 0.5, st.MeanReward)
	require.Equal(t, 4*7, st.Tokens)
	require.Equal(t, before, tr.Model.Tensors())

	// Different rewards: GRPO and Dr.GRPO both move the policy; GRPO divides
	// the advantages by the group std (0.71 and 0.35 here), so its gradient
	// is the larger one.
	norms := map[bool]float64{}
	for _, dr := range []bool{false, true} {
		tr := newTrainer(t, 2, Config{AdamW: AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.99, Eps: 1e-8}})
		st, err := (&GRPO{Trainer: tr, Config: GRPOConfig{PPO: ppo, DrGRPO: dr}}).Update(groupBatch(t, [4]float64{1, 0, 0.5, 0}))
		require.NoError(t, err)
		require.Positive(t, st.GradNorm)
		norms[dr] = st.GradNorm
	}
	require.Less(t, norms[true], norms[false])
}
