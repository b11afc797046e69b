package agentloop_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// hintLoop is a custom tool loop on ToolKit: the tool step (calls,
// observations, limits, tracing) is ToolAgent's, and the loop adds only its
// own logic, a hint on every failed call's observation.
type hintLoop struct{ kit *agentloop.ToolKit }

func (l hintLoop) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	e := l.kit.Episode(s, p)
	if !e.Start() {
		return e.Finish()
	}
	for {
		turn, ok := e.GenerateTurn(ctx)
		if !ok {
			break
		}
		if !turn.HasCalls() {
			e.Stop(trajectory.StopCompleted)
			break
		}
		step := e.CallTools(ctx, turn)
		if step.Ended {
			break
		}
		for i, r := range step.Results {
			if r.Err != nil {
				step.Messages[i].Content += " Hint: write the expression with digits."
			}
		}
		if !e.Observe(step.Messages...) {
			break
		}
	}
	return e.Finish()
}

// A custom tool loop built on the public tool step, run by a Manager.
func ExampleToolKit() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	say := func(text string) []int32 { return append(tok.Encode(text), imEnd) }
	calc := func(expr string) []int32 {
		return say("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"" + expr + "\"}}\n</tool_call>")
	}
	engine := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
		"q": {calc("six*7"), calc("6*7"), say("42")},
	}, nil)})
	tools, err := tool.NewSet(tool.NewCalculator())
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := agentloop.NewRegistry()
	_ = reg.Register("hint_agent", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		kit, err := agentloop.NewToolKit(env, cfg)
		return hintLoop{kit}, err
	}, agentloop.Config{})
	m, err := agentloop.NewManager(reg, &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools},
		agentloop.Options{DefaultAgent: "hint_agent", RewardFromLoop: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate(context.Background(), []agentloop.Sample{
		{ID: "q", Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := out.Trajectories[0]
	text, _ := tok.Decode(t.ResponseIDs, false)
	fmt.Println(t.StopReason, t.ToolCalls, t.ToolErrors, t.Validate())
	fmt.Println(strings.Count(text, "Hint:"), strings.Contains(text, "<tool_response>\n42\n</tool_response>"))
	// Output:
	// completed 2 1 <nil>
	// 1 true
}
