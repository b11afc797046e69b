// Package trainer holds the algorithms a PPO/GRPO trainer applies to a
// collated trajectory.Batch: advantage estimators (GRPO and Dr.GRPO, RLOO,
// REINFORCE++, GAE), KL estimators, the clipped PPO policy loss with dual
// clip and its gradient, loss aggregation modes, truncated importance
// sampling between rollout and training logprobs with mismatch metrics, and
// the dynamic-sampling group filter.
//
// Everything is a pure function of row-major float32 tensors and is masked by
// the batch's response_mask: tokens the policy did not sample never
// contribute. Numerics follow verl's core_algos and are checked against a
// PyTorch implementation (testdata/gen_golden.py). Shapes are checked:
// tensors that do not fit together, a nil batch or negative sizes are
// ErrShape errors, never a panic.
//
//	scores, err := trainer.FromBatch(batch.TokenLevelScores, batch)
//	adv, err := trainer.GRPO(scores, batch.ResponseMask, batch.GroupIDs)
//	old, err := trainer.FromBatch(batch.RolloutLogprobs, batch) // an error when the rollouts had no logprobs
//	// logprobs: the trained policy's per-token logprobs of batch.Responses
//	// ([B,R] float32, from its forward pass over the batch)
//	logprob, err := trainer.FromBatch(logprobs, batch)
//	res, err := trainer.PolicyLoss(trainer.PolicyInputs{Old: old, LogProb: logprob, Advantages: adv, Mask: batch.ResponseMask},
//		trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, Agg: trainer.TokenMean})
//	// res.Loss, res.Grad (d loss / d logprob), res.ClipFrac, ...
//
// The package's Example runs this on a collated batch of two trajectories
// (TestDocSnippetsAreExamples keeps every line of the sketch in it).
package trainer
