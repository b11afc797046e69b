// Package reference is agentrl's reference trainer: it trains the in-process
// engine's models (cuda/train) on trajectories, to prove they are trainable
// end to end.
//
// It has AdamW exactly as torch.optim.AdamW, global-norm gradient clipping
// as torch.nn.utils.clip_grad_norm_, SFT on the mask-1 tokens of a
// trajectory.Batch (tool output and template glue are context only), and
// GRPO: rollouts through an agentloop.Manager on an engine → rewards →
// group-relative advantages (trainer.GRPO) → trainer.PolicyLoss's per-token
// gradient fed to the model's backward pass → AdamW → the new weights sent
// to the engine with UpdateWeights under a new version. Every step also
// reports how far the engine's rollout logprobs are from the trainer's
// recomputation (trainer.MismatchMetrics), and can correct for it with
// truncated importance sampling.
//
//	m, _ := train.Load(dir, train.Options{})
//	tr, _ := reference.New(m, reference.Config{AdamW: reference.AdamWConfig{
//		LR: 1e-3, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}, MaxGradNorm: 1})
//	st, _ := tr.SFTStep(batch) // st.Loss, st.GradNorm
//	g := &reference.GRPO{Trainer: tr, Manager: mgr, Engine: engine, Config: cfg}
//	st2, _ := g.Step(ctx, samples) // rollout, update, UpdateWeights
package reference
