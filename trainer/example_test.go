package trainer_test

import (
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trajectory"
)

// Example is the package doc's snippet on a real batch: two rollouts of
// one prompt (one group), rewarded 1 and 0, collated, then GRPO advantages
// and the PPO loss with the training policy equal to the rollout policy
// (ratio 1: no clipping, the loss is minus the mean advantage).
func Example() {
	build := func(id string, sampled []int32, reward float64) *trajectory.Trajectory {
		b := trajectory.NewBuilder([]int32{1, 2, 3})
		_ = b.AppendModel(sampled, []float32{-0.5, -1, -0.25}[:len(sampled)])
		t := b.Build()
		t.ID, t.GroupID, t.Reward = id, "q0", &reward
		return t
	}
	batch, err := trajectory.Collate([]*trajectory.Trajectory{
		build("q0/0", []int32{7, 8, 9}, 1),
		build("q0/1", []int32{7, 5}, 0),
	}, trajectory.CollateOptions{PromptLen: 4, ResponseLen: 4})
	if err != nil {
		fmt.Println(err)
		return
	}

	scores, err := trainer.FromBatch(batch.TokenLevelScores, batch)
	if err != nil {
		fmt.Println(err)
		return
	}
	adv, err := trainer.GRPO(scores, batch.ResponseMask, batch.GroupIDs)
	if err != nil {
		fmt.Println(err)
		return
	}
	old, err := trainer.FromBatch(batch.RolloutLogprobs, batch) // an error when the rollouts had no logprobs
	if err != nil {
		fmt.Println(err)
		return
	}
	// A first, on-policy step: the trained policy is still the rollout
	// policy, so its logprobs are the rollout's.
	logprobs := slices.Clone(batch.RolloutLogprobs)
	logprob, err := trainer.FromBatch(logprobs, batch)
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := trainer.PolicyLoss(trainer.PolicyInputs{Old: old, LogProb: logprob, Advantages: adv, Mask: batch.ResponseMask},
		trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, Agg: trainer.TokenMean})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 0; i < adv.Rows; i++ {
		fmt.Printf("advantages %s: %.4f\n", batch.GroupIDs[i], adv.Row(i))
	}
	fmt.Printf("loss %.4f, clip fraction %.2f\n", res.Loss, res.ClipFrac)
	// Output:
	// advantages q0: [0.7071 0.7071 0.7071 0.0000]
	// advantages q0: [-0.7071 -0.7071 -0.0000 -0.0000]
	// loss -0.1414, clip fraction 0.00
}
