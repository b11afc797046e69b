package agentloop_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// draftThenAnswer is a multi-output loop: it drafts, then answers from a
// fresh prompt that holds only the draft, so its two turns do not share one
// token sequence and each is a trajectory of its own.
type draftThenAnswer struct{ single agentloop.AgentLoop }

func (d draftThenAnswer) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	ts, err := d.RunMulti(ctx, s, p)
	if len(ts) == 0 {
		return nil, err
	}
	return ts[len(ts)-1], err
}

func (d draftThenAnswer) RunMulti(ctx context.Context, s agentloop.Sample, p server.SamplingParams) ([]*trajectory.Trajectory, error) {
	draft, err := d.single.Run(ctx, s, p)
	if err != nil {
		return nil, err
	}
	s.Messages = []chat.Message{{Role: chat.RoleUser, Content: "Improve this draft."}}
	answer, err := d.single.Run(ctx, s, p)
	return []*trajectory.Trajectory{draft, answer}, err
}

// A rollout of a MultiAgentLoop gives several trajectories: the Manager
// names them after verl's {uid}_{session}_{index} keys, scores the last and
// copies its reward to the earlier ones.
func ExampleMultiAgentLoop() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	engine := servertest.New(servertest.Config{Rule: servertest.Constant(append(tok.Encode("ok"), imEnd)...)})
	reg := agentloop.NewRegistry()
	_ = reg.Register("draft_then_answer", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		single, err := agentloop.NewSingleTurn(env, cfg)
		return draftThenAnswer{single}, err
	}, agentloop.Config{})
	m, err := agentloop.NewManager(reg, &agentloop.Env{Server: engine, Tokenizer: tok}, agentloop.Options{
		DefaultAgent: "draft_then_answer", N: 2,
		Reward: func(context.Context, agentloop.RewardInput) (float64, error) { return 1, nil },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate(context.Background(), []agentloop.Sample{
		{ID: "q", Messages: []chat.Message{{Role: chat.RoleUser, Content: "Write a haiku."}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(out.Results[0].Trajectories), "rollouts,", len(out.Trajectories), "trajectories")
	for _, t := range out.Trajectories {
		fmt.Println(t.ID, t.Key(), *t.Reward)
	}
	// Output:
	// 2 rollouts, 4 trajectories
	// q/0/0 q_0_0 1
	// q/0/1 q_0_1 1
	// q/1/0 q_1_0 1
	// q/1/1 q_1_1 1
}
