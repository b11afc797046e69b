package trainer

import (
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/agentrl/agentrl/trajectory"
	"github.com/stretchr/testify/require"
)

type goldenCase struct {
	B, R                                     int
	Groups                                   []string
	Mask                                     []int32
	Rewards, Old, Logp, Ref, Rollout, Values []float64
	Metric                                   []float64
	Out                                      map[string]json.RawMessage
}

type goldenPPO struct {
	Loss          float64   `json:"loss"`
	ClipFrac      float64   `json:"clipfrac"`
	ClipFracLower float64   `json:"clipfrac_lower"`
	ApproxKL      float64   `json:"approx_kl"`
	Grad          []float64 `json:"grad"`
}

func loadGolden(t *testing.T) []goldenCase {
	t.Helper()
	data, err := os.ReadFile("testdata/golden.json")
	require.NoError(t, err)
	var g struct{ Cases []goldenCase }
	require.NoError(t, json.Unmarshal(data, &g))
	require.NotEmpty(t, g.Cases)
	return g.Cases
}

func mat(c goldenCase, v []float64) Matrix {
	m := zeros(c.B, c.R)
	for i, x := range v {
		m.Data[i] = float32(x)
	}
	return m
}

// close reports whether got matches want to 1e-5 relative error (absolute
// near zero): the reference computes in float64, agentrl returns float32.
func requireClose(t *testing.T, want, got float64, what string) {
	t.Helper()
	tol := 1e-5 * math.Max(1, math.Abs(want))
	require.InDelta(t, want, got, tol, what)
}

func requireCloseSlice(t *testing.T, want []float64, got []float32, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		requireClose(t, want[i], float64(got[i]), what+"["+itoa(i)+"]")
	}
}

func itoa(i int) string {
	return string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

func (c goldenCase) floats(t *testing.T, key string) []float64 {
	t.Helper()
	var v []float64
	require.NoError(t, json.Unmarshal(c.Out[key], &v), key)
	return v
}

func (c goldenCase) scalar(t *testing.T, key string) float64 {
	t.Helper()
	var v float64
	require.NoError(t, json.Unmarshal(c.Out[key], &v), key)
	return v
}

func TestAgainstPyTorchReference(t *testing.T) {
	for ci, c := range loadGolden(t) {
		rewards, old, logp, ref := mat(c, c.Rewards), mat(c, c.Old), mat(c, c.Logp), mat(c, c.Ref)
		rollout, values := mat(c, c.Rollout), mat(c, c.Values)

		adv, err := GRPO(rewards, c.Mask, c.Groups)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "grpo"), adv.Data, "grpo")
		dr, err := DrGRPO(rewards, c.Mask, c.Groups)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "drgrpo"), dr.Data, "drgrpo")
		rl, err := RLOO(rewards, c.Mask, c.Groups)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "rloo"), rl.Data, "rloo")

		a, ret, err := ReinforcePP(rewards, c.Mask, 0.99)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "reinforcepp_adv"), a.Data, "reinforce++ adv")
		requireCloseSlice(t, c.floats(t, "reinforcepp_returns"), ret.Data, "reinforce++ returns")
		a, ret, err = GAE(rewards, values, c.Mask, 0.99, 0.95)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "gae_adv"), a.Data, "gae adv")
		requireCloseSlice(t, c.floats(t, "gae_returns"), ret.Data, "gae returns")

		for _, kind := range []KLKind{KLK1, KLAbs, KLK2, KLK3} {
			kl, err := KL(logp, ref, kind)
			require.NoError(t, err)
			requireCloseSlice(t, c.floats(t, "kl_"+string(kind)), kl.Data, "kl "+string(kind))
		}
		pen, meanKL, err := ApplyKLPenalty(rewards, old, ref, c.Mask, KLK3, 0.05)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "kl_penalty_rewards"), pen.Data, "kl penalty")
		requireClose(t, c.scalar(t, "kl_penalty_mean"), meanKL, "kl penalty mean")

		tokW, err := ImportanceWeights(old, rollout, c.Mask, ISToken, 2)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "is_token"), tokW.Data, "token IS")
		seqW, err := ImportanceWeights(old, rollout, c.Mask, ISSequence, 2)
		require.NoError(t, err)
		requireCloseSlice(t, c.floats(t, "is_sequence"), seqW.Data, "sequence IS")

		for _, mode := range []AggMode{TokenMean, SeqMeanTokenSum, SeqMeanTokenMean, SeqMeanTokenSumNorm} {
			got, err := AggLoss(values, c.Mask, mode)
			require.NoError(t, err)
			requireClose(t, c.scalar(t, "agg_"+string(mode)), got, "agg "+string(mode))
			checkPPO(t, c, "ppo_"+string(mode), PolicyInputs{Old: old, LogProb: logp, Advantages: adv, Mask: c.Mask}, mode)
		}
		checkPPO(t, c, "ppo_tis", PolicyInputs{Old: old, LogProb: logp, Advantages: adv, Mask: c.Mask, ISWeights: &tokW}, TokenMean)

		if raw, ok := c.Out["filter_keep"]; ok {
			var want []int
			require.NoError(t, json.Unmarshal(raw, &want))
			got, err := FilterGroups(c.Groups, c.Metric)
			require.NoError(t, err)
			if len(want) == 0 {
				require.Empty(t, got, "case %d", ci)
			} else {
				require.Equal(t, want, got, "case %d", ci)
			}
		}
	}
}

func checkPPO(t *testing.T, c goldenCase, key string, in PolicyInputs, mode AggMode) {
	t.Helper()
	var want goldenPPO
	require.NoError(t, json.Unmarshal(c.Out[key], &want))
	got, err := PolicyLoss(in, PPOConfig{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, Agg: mode})
	require.NoError(t, err)
	requireClose(t, want.Loss, got.Loss, key+" loss")
	requireClose(t, want.ClipFrac, got.ClipFrac, key+" clipfrac")
	requireClose(t, want.ClipFracLower, got.ClipFracLower, key+" clipfrac lower")
	requireClose(t, want.ApproxKL, got.ApproxKL, key+" approx kl")
	requireCloseSlice(t, want.Grad, got.Grad.Data, key+" grad")
}

// TestMaskBugChangesLoss shows the contract is enforced end to end: a tool
// token that wrongly carries mask 1 changes the policy loss and gives that
// token a gradient.
func TestMaskBugChangesLoss(t *testing.T) {
	b := trajectory.NewBuilder([]int32{1, 2})
	require.NoError(t, b.AppendModel([]int32{10, 11}, []float32{-0.5, -0.7}))
	require.NoError(t, b.AppendObservation([]int32{20, 21, 22})) // tool output
	require.NoError(t, b.AppendModel([]int32{12}, []float32{-0.2}))
	tr := b.Build()
	tr.Reward = new(float64)
	*tr.Reward = 1
	other := b.Build()
	other.Reward = new(float64)
	batch, err := trajectory.Collate([]*trajectory.Trajectory{tr, other}, trajectory.CollateOptions{PromptLen: 2, ResponseLen: 6})
	require.NoError(t, err)
	batch.GroupIDs = []string{"g", "g"}

	loss := func(mask []int32) PolicyLossResult {
		scores, err := FromBatch(batch.TokenLevelScores, batch)
		require.NoError(t, err)
		adv, err := GRPO(scores, mask, batch.GroupIDs)
		require.NoError(t, err)
		old, err := FromBatch(batch.RolloutLogprobs, batch)
		require.NoError(t, err)
		cur, err := NewMatrix(old.Rows, old.Cols)
		require.NoError(t, err)
		for k := range cur.Data {
			cur.Data[k] = old.Data[k] - 0.05 // the trainer's logprobs differ a little
		}
		res, err := PolicyLoss(PolicyInputs{Old: old, LogProb: cur, Advantages: adv, Mask: mask}, PPOConfig{ClipLow: 0.2, ClipHigh: 0.2, ClipC: 3, Agg: TokenMean})
		require.NoError(t, err)
		return res
	}
	good := loss(batch.ResponseMask)
	for k := 2; k < 5; k++ {
		require.Zero(t, good.Grad.Data[k], "tool tokens get no gradient")
	}
	buggy := append([]int32(nil), batch.ResponseMask...)
	buggy[3] = 1 // a tool token marked as policy
	bad := loss(buggy)
	require.NotEqual(t, good.Loss, bad.Loss)
	require.NotZero(t, bad.Grad.Data[3])
}

func TestShapeAndNameErrors(t *testing.T) {
	m, err := NewMatrix(2, 3)
	require.NoError(t, err)
	_, err = GRPO(m, make([]int32, 5), []string{"a", "b"})
	require.ErrorIs(t, err, ErrShape)
	_, err = GRPO(m, make([]int32, 6), []string{"a"})
	require.ErrorIs(t, err, ErrShape)
	_, err = ParseKLKind("k9")
	require.ErrorIs(t, err, ErrUnknown)
	_, err = AggLoss(m, make([]int32, 6), "token-sum")
	require.ErrorIs(t, err, ErrUnknown)
	_, _, err = ReinforcePP(m, []int32{1, 0, 0, 0, 0, 0}, 1)
	require.ErrorIs(t, err, ErrTooFewTokens)
	_, err = PolicyLoss(PolicyInputs{Old: m, LogProb: m, Advantages: m, Mask: make([]int32, 6)}, PPOConfig{ClipC: 1, Agg: TokenMean})
	require.Error(t, err)
	_, err = ImportanceWeights(m, m, make([]int32, 6), "turn", 2)
	require.ErrorIs(t, err, ErrUnknown)
	_, err = FilterGroups([]string{"a"}, nil)
	require.ErrorIs(t, err, ErrShape)
}

func TestSeqMeanTokenMeanSkipsEmptyRows(t *testing.T) {
	loss := Matrix{Rows: 2, Cols: 2, Data: []float32{1, 3, 100, 100}}
	got, err := AggLoss(loss, []int32{1, 1, 0, 0}, SeqMeanTokenMean)
	require.NoError(t, err)
	require.InDelta(t, 1.0, got, 1e-12) // (2 + 0) / 2, not NaN
}

func TestMismatchMetricsPerTurn(t *testing.T) {
	train := Matrix{Rows: 1, Cols: 6, Data: []float32{-1, -1, 0, -2, -2, 0}}
	rollout := Matrix{Rows: 1, Cols: 6, Data: []float32{-1, -1.5, 0, -2, -1, 0}}
	mm, err := MismatchMetrics(train, rollout, []int32{1, 1, 0, 1, 1, 0})
	require.NoError(t, err)
	require.Equal(t, 4, mm.Tokens)
	require.Len(t, mm.PerTurn, 2)
	require.Equal(t, 2, mm.PerTurn[0].Tokens)
	require.InDelta(t, -0.25, mm.PerTurn[0].K1, 1e-6) // (0 + -0.5)/2
	require.InDelta(t, 0.5, mm.PerTurn[1].K1, 1e-6)   // (0 + 1)/2
	require.InDelta(t, 1.0, mm.MaxAbsDiff, 1e-6)
	d := 0.5 // turn 0, token 1: train − rollout
	require.InDelta(t, (math.Exp(d)-d-1)/2, mm.PerTurn[0].K3, 1e-6)
}

// TestConstructorsRefuseBadShapes is issue 35's panics: FromBatch(nil, nil)
// and NewMatrix(-1, 3) are ErrShape errors, and so are data that do not
// fill the batch (rollouts made without logprobs) and sizes no batch has.
func TestConstructorsRefuseBadShapes(t *testing.T) {
	_, err := FromBatch(nil, nil)
	require.ErrorIs(t, err, ErrShape)
	require.ErrorContains(t, err, "nil batch")
	b := &trajectory.Batch{Size: 2, ResponseLen: 3, TokenLevelScores: make([]float32, 6)}
	_, err = FromBatch(b.RolloutLogprobs, b)
	require.ErrorIs(t, err, ErrShape)
	require.ErrorContains(t, err, "0 values for the batch's [2,3]")
	m, err := FromBatch(b.TokenLevelScores, b)
	require.NoError(t, err)
	require.Equal(t, 2, m.Rows)

	for _, rc := range [][2]int{{-1, 3}, {3, -1}, {1 << 40, 1 << 40}, {math.MaxInt, 2}} {
		_, err := NewMatrix(rc[0], rc[1])
		require.ErrorIs(t, err, ErrShape, "%v", rc)
	}
	m, err = NewMatrix(0, 5)
	require.NoError(t, err)
	require.Empty(t, m.Data)
}

// A group is its rollouts: a rollout that returned two trajectories (which
// share its reward, as verl's V1 copies the last one's) counts once in the
// group's mean and std, and each of its rows gets the rollout's advantage.
func TestGRPORolloutsCountsRollouts(t *testing.T) {
	// Rows: rollout a (two trajectories, reward 1), rollout b (reward 0),
	// rollout c (reward 0); one group. Each row's reward is on its one
	// column.
	rewards := Matrix{Rows: 4, Cols: 1, Data: []float32{1, 1, 0, 0}}
	mask := []int32{1, 1, 1, 1}
	groups := []string{"g", "g", "g", "g"}
	adv, err := GRPORollouts(rewards, mask, groups, []string{"a", "a", "b", "c"})
	require.NoError(t, err)
	// Over the rollouts {1, 0, 0}: mean 1/3, unbiased std sqrt(1/3).
	sd := math.Sqrt(1.0 / 3)
	want := []float64{(1 - 1.0/3) / (sd + 1e-6), (1 - 1.0/3) / (sd + 1e-6), (0 - 1.0/3) / (sd + 1e-6), (0 - 1.0/3) / (sd + 1e-6)}
	for i, w := range want {
		require.InDelta(t, w, adv.Data[i], 1e-5, "row %d", i)
	}
	// Counting rows instead ({1, 1, 0, 0}: mean 1/2) gives other numbers.
	rows, err := GRPO(rewards, mask, groups)
	require.NoError(t, err)
	require.NotEqual(t, rows.Data, adv.Data)
	// nil rollouts is GRPO; DrGRPORollouts only subtracts the mean.
	same, err := GRPORollouts(rewards, mask, groups, nil)
	require.NoError(t, err)
	require.Equal(t, rows.Data, same.Data)
	dr, err := DrGRPORollouts(rewards, mask, groups, []string{"a", "a", "b", "c"})
	require.NoError(t, err)
	require.InDeltaSlice(t, []float32{2.0 / 3, 2.0 / 3, -1.0 / 3, -1.0 / 3}, dr.Data, 1e-6)
	_, err = GRPORollouts(rewards, mask, groups, []string{"a"})
	require.ErrorIs(t, err, ErrShape)
}
