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
// PyTorch implementation (testdata/gen_golden.py).
//
//	scores := trainer.FromBatch(batch.TokenLevelScores, batch)
//	adv := trainer.GRPO(scores, batch.ResponseMask, batch.GroupIDs, true)
//	res, err := trainer.PolicyLoss(oldLogprob, logprob, adv, batch.ResponseMask, trainer.PPOConfig{ClipLow: 0.2, ClipHigh: 0.28, ClipC: 3, Agg: trainer.TokenMean})
package trainer
