package agentloop_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
)

// loadQwen3 stands for tokenizer.Load on a model directory; the tests
// share one copy of the Qwen3 tokenizer.
func loadQwen3() (*tokenizer.Tokenizer, error) {
	tok, err := agentloop.SharedQwen3()
	if tok == nil && err == nil {
		err = errors.New("Qwen3 tokenizer not found")
	}
	return tok, err
}

// A tool-calling rollout: the (scripted) model calls the calculator, sees
// its result as an observation and answers.
func Example() {
	tok, err := loadQwen3()
	if err != nil {
		fmt.Println(err)
		return
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	call := append(tok.Encode(`<tool_call>
{"name": "calculator", "arguments": {"expression": "6*7"}}
</tool_call>`), imEnd)
	answer := append(tok.Encode("6*7 = 42."), imEnd)
	engine := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"0/0": {call, answer}}, nil)})

	tools, _ := tool.NewSet(tool.NewCalculator())
	m, err := agentloop.NewManager(nil, &agentloop.Env{Server: engine, Tokenizer: tok, Tools: tools},
		agentloop.Options{RewardFromLoop: true, DefaultAgent: agentloop.ToolAgentName, Sampling: server.SamplingParams{Logprobs: true}})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := m.Generate(context.Background(), []agentloop.Sample{
		{Messages: []chat.Message{{Role: chat.RoleUser, Content: "What is 6*7?"}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t := out.Trajectories[0]
	text, _ := tok.Decode(t.ResponseIDs, false)
	fmt.Println(t.StopReason, t.NumTurns, t.MaskOnes() == len(call)+len(answer))
	fmt.Printf("%q\n", text)
	// Output:
	// completed 4 true
	// "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>\n<|im_start|>user\n<tool_response>\n42\n</tool_response><|im_end|>\n<|im_start|>assistant\n6*7 = 42.<|im_end|>"
}
