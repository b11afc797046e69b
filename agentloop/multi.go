package agentloop

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// MultiAgentLoop is an AgentLoop whose rollout may return several
// trajectories, as verl's agent loops may return list[AgentLoopOutput]
// (verl/trainer/ppo/v1/agent_loop_tq.py): e.g. an agent whose prompt
// changes between turns (context pruned or summarized) cannot make its
// turns one token sequence, so each becomes a training row of its own. The
// Manager calls RunMulti instead of Run for a loop that implements it.
//
// The trajectories come back in the order the loop returns them; the last
// one is the rollout's result. The Manager names them (ID "<rollout id>/<k>",
// RolloutID the rollout's id, Session its index in the group, Output k),
// scores only the last and copies its reward to the others, as verl does.
// A group still counts rollouts: KeepGroup, Result.Trajectories and the
// metrics see one trajectory per rollout, and trainer.GRPORollouts gives
// each rollout one place in its group's statistics. A RunMulti that returns
// one trajectory is an ordinary rollout.
type MultiAgentLoop interface {
	AgentLoop
	RunMulti(ctx context.Context, s Sample, p server.SamplingParams) ([]*trajectory.Trajectory, error)
}

// All returns every trajectory of the group: each rollout's outputs in
// order (its one trajectory for an ordinary rollout), nil entries left
// out. These are the rows a batch is made of.
func (r Result) All() []*trajectory.Trajectory {
	out := make([]*trajectory.Trajectory, 0, len(r.Trajectories))
	for i, t := range r.Trajectories {
		if i < len(r.Outputs) && r.Outputs[i] != nil {
			out = append(out, r.Outputs[i]...)
			continue
		}
		if t != nil {
			out = append(out, t)
		}
	}
	return out
}

// runMulti runs a MultiAgentLoop rollout. It returns the last trajectory
// (the rollout's result, named as the Manager names any rollout) and, when
// there were several, all of them named as multi-output trajectories.
func (m *Manager) runMulti(ctx context.Context, loop MultiAgentLoop, s Sample) (*trajectory.Trajectory, []*trajectory.Trajectory, error) {
	outs, err := m.safeRunMulti(ctx, loop, s)
	for i, t := range outs {
		if t == nil {
			return nil, nil, fmt.Errorf("agentloop: agent %q returned a nil trajectory (output %d of %d) for sample %s", m.agentName(s), i, len(outs), s.ID)
		}
	}
	switch len(outs) {
	case 0:
		if err == nil {
			err = fmt.Errorf("agentloop: agent %q returned neither a trajectory nor an error for sample %s", m.agentName(s), s.ID)
		}
		return nil, nil, err
	case 1:
		return outs[0], nil, err
	}
	for i, t := range outs {
		t.ID = s.ID + "/" + strconv.Itoa(i)
		t.GroupID, t.Index = s.GroupID, s.Index
		t.RolloutID, t.Session, t.Output = s.ID, s.Rollout, i
	}
	return outs[len(outs)-1], outs, err
}

func (m *Manager) safeRunMulti(ctx context.Context, loop MultiAgentLoop, s Sample) (ts []*trajectory.Trajectory, err error) {
	defer func() {
		if v := recover(); v != nil {
			ts, err = nil, fmt.Errorf("agentloop: agent %q panicked on sample %s: %v", m.agentName(s), s.ID, v)
		}
	}()
	return loop.RunMulti(ctx, s, rolloutSampling(m.opts.Sampling, s))
}

// shareReward copies the last output's reward (and reward error) to the
// earlier ones, as verl copies reward_score and reward_extra_info.
func shareReward(outs []*trajectory.Trajectory) {
	if len(outs) < 2 {
		return
	}
	last := outs[len(outs)-1]
	for _, t := range outs[:len(outs)-1] {
		if last.Reward != nil {
			v := *last.Reward
			t.Reward = &v
		}
		if raw, ok := last.Extra[ExtraRewardError]; ok {
			if t.Extra == nil {
				t.Extra = map[string]json.RawMessage{}
			}
			t.Extra[ExtraRewardError] = raw
		}
	}
}
