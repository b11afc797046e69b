// Package trajectory is the contract between rollout and training: a
// Trajectory holds the exact token ids the engine saw, a response mask that
// is 1 only on tokens the policy sampled, the rollout logprobs and rewards.
// Collate turns trajectories into a padded Batch, of fixed widths or
// (FitLongest) the batch's longest, checking the sizes against
// MaxCollateElements before allocating; JSONL and safetensors writers move
// them to trainers in any language.
//
//	b := trajectory.NewBuilder(promptIDs)
//	_ = b.AppendModel(sampled, logprobs) // mask 1
//	_ = b.AppendObservation(toolDelta)   // mask 0
//	t := b.Build()
//	batch, err := trajectory.Collate([]*trajectory.Trajectory{t}, trajectory.CollateOptions{PromptLen: 1024, ResponseLen: 3072})
package trajectory
