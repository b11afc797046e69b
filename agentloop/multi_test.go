package agentloop

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// turnsLoop returns one trajectory per "turn", each with its own prompt,
// as an agent that rewrites its context between turns would; Sample.Extra
// "outputs" says how many (default 3), and "fail" makes it fail after them.
type turnsLoop struct{}

func (turnsLoop) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	ts, err := turnsLoop{}.RunMulti(ctx, s, p)
	if len(ts) == 0 {
		return nil, err
	}
	return ts[len(ts)-1], err
}

func (turnsLoop) RunMulti(_ context.Context, s Sample, _ server.SamplingParams) ([]*trajectory.Trajectory, error) {
	n := 3
	if v, ok := s.Extra["outputs"].(int); ok {
		n = v
	}
	var out []*trajectory.Trajectory
	for k := 0; k < n; k++ {
		resp := make([]int32, k+1)
		mask := make([]int8, k+1)
		for i := range resp {
			resp[i], mask[i] = int32(100+i), 1
		}
		out = append(out, &trajectory.Trajectory{PromptIDs: []int32{int32(10 + k)}, ResponseIDs: resp, ResponseMask: mask, NumTurns: 1})
	}
	if s.Extra["fail"] == true {
		return out, errors.New("engine went away")
	}
	return out, nil
}

func TestMultiOutputRollouts(t *testing.T) {
	reg := NewRegistry()
	require.NoError(t, reg.Register("turns", func(*Env, Config) (AgentLoop, error) { return turnsLoop{}, nil }, Config{}))
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: qwen3(t)}
	var scored atomic.Int64
	var keptMu sync.Mutex
	var kept []int // sizes of the groups KeepGroup saw (groups finish concurrently)
	m, err := NewManager(reg, env, Options{
		DefaultAgent: "turns", N: 2,
		// The reward is computed once per rollout, on its last trajectory.
		Reward: func(_ context.Context, in RewardInput) (float64, error) {
			scored.Add(1)
			return float64(len(in.Trajectory.ResponseIDs)), nil
		},
		KeepGroup: func(g []*trajectory.Trajectory) bool {
			keptMu.Lock()
			defer keptMu.Unlock()
			kept = append(kept, len(g))
			return true
		},
		Collate: trajectory.CollateOptions{PromptLen: 4, ResponseLen: 4},
	})
	require.NoError(t, err)
	hi := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	out, err := m.Generate(context.Background(), []Sample{
		{ID: "q", Messages: hi},
		{ID: "one", Messages: hi, Extra: map[string]any{"outputs": 1}},
	})
	require.NoError(t, err)
	require.Equal(t, int64(4), scored.Load(), "one reward per rollout, not per trajectory")

	r := out.Results[0]
	require.Len(t, r.Trajectories, 2, "Trajectories has one entry per rollout")
	require.Len(t, r.Outputs, 2)
	for s, outs := range r.Outputs {
		require.Len(t, outs, 3)
		require.Same(t, outs[2], r.Trajectories[s], "a rollout's result is its last trajectory")
		for k, tr := range outs {
			rid := "q/" + string(rune('0'+s))
			require.Equal(t, rid+"/"+string(rune('0'+k)), tr.ID)
			require.Equal(t, rid, tr.RolloutID)
			require.Equal(t, "q", tr.GroupID)
			require.Equal(t, s, tr.Session)
			require.Equal(t, k, tr.Output)
			require.Equal(t, "q_"+string(rune('0'+s))+"_"+string(rune('0'+k)), tr.Key())
			require.NotNil(t, tr.Reward)
			require.Equal(t, 3.0, *tr.Reward, "the last trajectory's reward, copied to the earlier ones")
			require.Equal(t, trajectory.StopCompleted, tr.StopReason)
		}
	}
	require.Equal(t, []int{2, 2}, kept, "KeepGroup sees each group's rollouts")

	// A RunMulti that returns one trajectory is an ordinary rollout.
	one := out.Results[1]
	require.Nil(t, one.Outputs)
	require.Equal(t, "one/1", one.Trajectories[1].ID)
	require.False(t, one.Trajectories[1].MultiOutput())

	require.Len(t, out.Trajectories, 8, "every trajectory is a row")
	require.Equal(t, out.Trajectories[:6], r.All())
	b := out.Batch
	require.Equal(t, 8, b.Size)
	require.Equal(t, []string{"q/0", "q/0", "q/0", "q/1", "q/1", "q/1", "one/0", "one/1"}, b.RolloutIDs)
	require.Equal(t, b.ResponseMask, b.LossMask)
	require.Equal(t, `"q_1_2"`, string(b.NonTensor[trajectory.NonTensorKey][5]))
	require.Equal(t, `"one/0"`, string(b.NonTensor[trajectory.NonTensorKey][6]))
	require.Equal(t, 4, out.Metrics.Trajectories, "metrics count rollouts")
}

func TestMultiOutputFailures(t *testing.T) {
	reg := NewRegistry()
	loops := map[string]MultiAgentLoop{
		"nil":   multiFunc(func() ([]*trajectory.Trajectory, error) { return []*trajectory.Trajectory{nil}, nil }),
		"empty": multiFunc(func() ([]*trajectory.Trajectory, error) { return nil, nil }),
		"panic": multiFunc(func() ([]*trajectory.Trajectory, error) { panic("boom") }),
	}
	for name, l := range loops {
		require.NoError(t, reg.Register(name, func(*Env, Config) (AgentLoop, error) { return l, nil }, Config{}))
	}
	require.NoError(t, reg.Register("turns", func(*Env, Config) (AgentLoop, error) { return turnsLoop{}, nil }, Config{}))
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: qwen3(t)}
	m, err := NewManager(reg, env, Options{RewardFromLoop: true})
	require.NoError(t, err)
	hi := []chat.Message{{Role: chat.RoleUser, Content: "hi"}}
	out, err := m.Generate(context.Background(), []Sample{
		{ID: "a", AgentName: "nil", Messages: hi}, {ID: "b", AgentName: "empty", Messages: hi}, {ID: "c", AgentName: "panic", Messages: hi},
		{ID: "d", AgentName: "turns", Messages: hi, Extra: map[string]any{"fail": true}},
	})
	require.NoError(t, err)
	for i, want := range []string{"returned a nil trajectory (output 0 of 1)", "returned neither a trajectory nor an error", "panicked on sample c: boom"} {
		require.Nil(t, out.Results[i].Trajectories[0])
		require.ErrorContains(t, out.Results[i].Errs[0], want)
	}
	// A loop that fails after some outputs keeps them, marked as errors.
	d := out.Results[3]
	require.ErrorContains(t, d.Errs[0], "engine went away")
	require.Len(t, d.Outputs[0], 3)
	for _, tr := range d.Outputs[0] {
		require.Equal(t, trajectory.StopError, tr.StopReason)
	}
	require.True(t, strings.HasPrefix(d.Trajectories[0].ID, "d/"))
}

type multiFunc func() ([]*trajectory.Trajectory, error)

func (f multiFunc) Run(context.Context, Sample, server.SamplingParams) (*trajectory.Trajectory, error) {
	return nil, errors.New("not used")
}

func (f multiFunc) RunMulti(context.Context, Sample, server.SamplingParams) ([]*trajectory.Trajectory, error) {
	return f()
}
