package reference

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trainer"
	"github.com/agentrl/agentrl/trajectory"
)

// GRPOConfig configures GRPO steps.
type GRPOConfig struct {
	// PPO is the clipped surrogate (ClipLow/ClipHigh/ClipC/Agg).
	PPO trainer.PPOConfig
	// DrGRPO drops the division by the group std.
	DrGRPO bool
	// TISCap > 0 multiplies each token's loss by the truncated importance
	// weight min(exp(train − rollout), TISCap) (token level), correcting for
	// the engine's logprobs differing from the trainer's.
	TISCap float64
}

// GRPOStats report one GRPO step.
type GRPOStats struct {
	Trajectories int
	Tokens       int     // mask-1 response tokens trained on
	MeanReward   float64 // mean sequence reward of the rollouts
	Loss         float64
	ClipFrac     float64
	GradNorm     float64 // before clipping
	// Mismatch compares the logprobs the engine returned during rollout with
	// the trainer's recomputation under the same weights (the TIS input).
	Mismatch trainer.Mismatch
	// Version is the weight version sent to the engine after the update.
	Version int64
	Rollout agentloop.Metrics
}

// GRPO runs the on-policy loop: rollout through an agentloop.Manager on an
// engine, group-relative advantages, a policy-gradient update of the
// trainer's model, and the new weights sent back to the engine.
type GRPO struct {
	Trainer *Trainer
	Manager *agentloop.Manager // must collate (Options.Collate) and request logprobs
	Engine  server.WeightUpdater
	Config  GRPOConfig
	version int64
}

// Version is the weight version last sent to the engine (0 before the
// first step).
func (g *GRPO) Version() int64 { return g.version }

// Step runs one GRPO iteration on samples: rollouts (the Manager's N per
// sample form the groups), advantages, one policy update, UpdateWeights.
func (g *GRPO) Step(ctx context.Context, samples []agentloop.Sample) (GRPOStats, error) {
	out, err := g.Manager.Generate(ctx, samples)
	if err != nil {
		return GRPOStats{}, fmt.Errorf("reference: rollout: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return GRPOStats{}, fmt.Errorf("reference: rollout: %w", err)
	}
	b := out.Batch
	if b == nil {
		return GRPOStats{}, fmt.Errorf("%w: the Manager produced no batch (set Options.Collate and check the rollout errors)", ErrBatch)
	}
	st, err := g.Update(b)
	st.Rollout = out.Metrics
	if err != nil {
		return st, err
	}
	if err := g.Sync(ctx); err != nil {
		return st, err
	}
	st.Version = g.version
	return st, nil
}

// Sync sends the trainer's current weights to the engine as the next
// version. Step calls it after each update; when that fails (the model has
// stepped, the engine still serves the old weights) the caller may retry
// it.
func (g *GRPO) Sync(ctx context.Context) error {
	next := g.version + 1
	if err := g.Engine.UpdateWeights(ctx, g.Trainer.Model.Weights(next)); err != nil {
		return fmt.Errorf("reference: update weights to version %d: %w", next, err)
	}
	g.version = next
	return nil
}

// Update is the training half of Step on an already collated batch (with
// rewards): advantages, PPO loss, backward, clip, AdamW.
func (g *GRPO) Update(b *trajectory.Batch) (GRPOStats, error) {
	t := g.Trainer
	lp, rs, plens, err := t.responseLogprobs(b)
	if err != nil {
		return GRPOStats{}, err
	}
	mask := b.ResponseMask
	rewards, err := trainer.FromBatch(b.TokenLevelScores, b)
	if err != nil {
		return GRPOStats{}, fmt.Errorf("reference: rewards: %w", err)
	}
	// A group counts its rollouts, not the trajectories of multi-output
	// ones (b.RolloutIDs is nil when every rollout returned one).
	adv, err := trainer.GRPORollouts(rewards, mask, b.GroupIDs, b.RolloutIDs)
	if g.Config.DrGRPO {
		adv, err = trainer.DrGRPORollouts(rewards, mask, b.GroupIDs, b.RolloutIDs)
	}
	if err != nil {
		return GRPOStats{}, fmt.Errorf("reference: advantages: %w", err)
	}
	st := GRPOStats{Trajectories: b.Size}
	for _, r := range b.Rewards {
		st.MeanReward += float64(r) / float64(b.Size)
	}
	for _, m := range mask {
		st.Tokens += int(m)
	}
	in := trainer.PolicyInputs{Old: lp, LogProb: lp, Advantages: adv, Mask: mask}
	if b.RolloutLogprobs != nil {
		rollout, err := trainer.FromBatch(b.RolloutLogprobs, b)
		if err != nil {
			return st, fmt.Errorf("reference: rollout logprobs: %w", err)
		}
		if st.Mismatch, err = trainer.MismatchMetrics(lp, rollout, mask); err != nil {
			return st, fmt.Errorf("reference: mismatch: %w", err)
		}
		if g.Config.TISCap > 0 {
			w, err := trainer.ImportanceWeights(lp, rollout, mask, trainer.ISToken, g.Config.TISCap)
			if err != nil {
				return st, fmt.Errorf("reference: importance weights: %w", err)
			}
			in.ISWeights = &w
		}
	}
	// One update per rollout: the behaviour policy is the current one, so
	// old = the trainer's own logprobs and the ratio is 1 (the gradient is
	// the plain policy gradient, with PPO's aggregation).
	res, err := trainer.PolicyLoss(in, g.Config.PPO)
	if err != nil {
		return st, fmt.Errorf("reference: policy loss: %w", err)
	}
	st.Loss, st.ClipFrac = res.Loss, res.ClipFrac
	if err := t.backward(res.Grad, rs, plens); err != nil {
		return st, err
	}
	st.GradNorm, err = t.step()
	return st, err
}
