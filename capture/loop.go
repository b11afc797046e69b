package capture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// ExtraCaptureReport is the Trajectory.Extra key under which HarnessLoop
// stores its rollout's rebuild Report (JSON), so a trajectories file says
// how each harness run was segmented and what was dropped.
const ExtraCaptureReport = "capture_report"

// HarnessLoop is an agentloop.AgentLoop (and MultiAgentLoop) that runs a
// harness command through a Capture: each rollout the Manager asks for
// is a capture rollout, the harness is run once for it with the sample's
// prompt, and the trajectories rebuilt from its recorded calls are the
// rollout's outputs (one for an append-only run; one per segment where
// the harness compacted or forked). Register it with
//
//	reg.Register("harness", func(*agentloop.Env, agentloop.Config) (agentloop.AgentLoop, error) { return loop, nil }, agentloop.Config{})
//
// The harness picks its own sampling settings and max_tokens, as it does
// against any server: the Manager's SamplingParams do not reach it (the
// capture's httpapi.Config, e.g. ClampMaxTokens, bounds them instead).
type HarnessLoop struct {
	Capture *Capture
	Harness Harness
	// Rebuild is how trajectories are rebuilt (auxiliary-call rules,
	// KeepIncomplete).
	Rebuild RebuildOptions
	// KeepRollouts keeps each rollout's records in the store after its
	// trajectories are rebuilt; by default they are deleted, as the
	// trajectories are the output.
	KeepRollouts bool
}

// Run runs the harness once and returns the rollout's last trajectory;
// the Manager calls RunMulti instead, which returns all of them.
func (l *HarnessLoop) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	ts, err := l.RunMulti(ctx, s, p)
	if len(ts) == 0 {
		return nil, err
	}
	return ts[len(ts)-1], err
}

// RunMulti runs the harness once for s and returns every trajectory its
// calls rebuild into, in chain order. A harness that failed (non-zero
// exit, timeout) still returns the trajectories of the calls it made,
// with its error; a run that made no call is an error.
func (l *HarnessLoop) RunMulti(ctx context.Context, s agentloop.Sample, _ server.SamplingParams) ([]*trajectory.Trajectory, error) {
	if l.Capture == nil {
		return nil, errors.New("capture: HarnessLoop.Capture is nil")
	}
	prompt, err := HarnessPrompt(s)
	if err != nil {
		return nil, err
	}
	group := s.GroupID
	if group == "" {
		group = s.ID
	}
	ro, err := l.Capture.Create(ctx, CreateOptions{Group: group, Metadata: map[string]string{"sample": s.ID}})
	if err != nil {
		return nil, err
	}
	runErr := l.Harness.Run(ctx, ro, prompt)
	// The rollout is finished and rebuilt also when ctx ended: its
	// recorded calls are real and the Manager keeps partial rollouts.
	bg := context.WithoutCancel(ctx)
	if err := l.Capture.Finish(bg, ro.ID); err != nil {
		return nil, errors.Join(runErr, err)
	}
	ts, rep, err := l.Capture.Rebuild(bg, ro.ID, l.Rebuild)
	if err != nil {
		return nil, errors.Join(runErr, err)
	}
	if !l.KeepRollouts {
		if err := l.Capture.Delete(bg, ro.ID); err != nil {
			return nil, errors.Join(runErr, err)
		}
	}
	if len(ts) == 0 {
		return nil, errors.Join(runErr, fmt.Errorf("capture: harness run for sample %s (rollout %s) produced no trajectory: %d calls recorded, incomplete %v %s",
			s.ID, ro.ID, rep.Calls, rep.Incomplete, rep.IncompleteReason))
	}
	raw, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	for _, t := range ts {
		if t.Extra == nil {
			t.Extra = map[string]json.RawMessage{}
		}
		t.Extra[ExtraCaptureReport] = raw
		if ctx.Err() != nil && t.StopReason == trajectory.StopCompleted {
			// The harness was cut off: it may have meant to go on.
			t.StopReason = trajectory.StopAborted
		}
	}
	return ts, runErr
}

// HarnessPrompt is the prompt a harness gets for s: its user messages'
// text, in order, separated by blank lines. A harness takes one task
// text; the sample's system messages are the harness's own business
// (its system prompt), so they are not passed.
func HarnessPrompt(s agentloop.Sample) (string, error) {
	var parts []string
	for _, m := range s.Messages {
		if m.Role == "user" {
			if t := m.Text(); t != "" {
				parts = append(parts, t)
			}
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("capture: sample %s has no user message with text to give a harness as its prompt", s.ID)
	}
	return strings.Join(parts, "\n\n"), nil
}
