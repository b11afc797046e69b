package trajectory_test

import (
	"bytes"
	"fmt"

	"github.com/agentrl/agentrl/trajectory"
)

// Example is the package doc's snippet: a prompt, a sampled model turn
// (mask 1, with its logprobs), a tool observation (mask 0), then the padded
// batch a trainer gets.
func Example() {
	b := trajectory.NewBuilder([]int32{11, 12, 13})
	if err := b.AppendModel([]int32{21, 22}, []float32{-0.1, -0.2}); err != nil { // mask 1
		fmt.Println(err)
		return
	}
	if err := b.AppendObservation([]int32{31, 32, 33}); err != nil { // mask 0
		fmt.Println(err)
		return
	}
	t := b.Build()
	reward := 1.0
	t.ID, t.GroupID, t.Reward = "q7/0", "q7", &reward
	fmt.Println("response ", t.ResponseIDs)
	fmt.Println("mask     ", t.ResponseMask)
	fmt.Println("logprobs ", t.Logprobs)

	batch, err := trajectory.Collate([]*trajectory.Trajectory{t}, trajectory.CollateOptions{PromptLen: 4, ResponseLen: 6})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("prompts  ", batch.Prompts, "(left-padded)")
	fmt.Println("responses", batch.Responses, "(right-padded)")
	fmt.Println("mask     ", batch.ResponseMask)
	fmt.Println("scores   ", batch.TokenLevelScores)

	var jsonl bytes.Buffer
	if err := trajectory.WriteJSONL(&jsonl, []*trajectory.Trajectory{t}); err != nil {
		fmt.Println(err)
		return
	}
	back, err := trajectory.ReadJSONL(&jsonl)
	fmt.Println("JSONL round trip:", err == nil && len(back) == 1 && *back[0].Reward == 1)
	// Output:
	// response  [21 22 31 32 33]
	// mask      [1 1 0 0 0]
	// logprobs  [-0.1 -0.2 0 0 0]
	// prompts   [0 11 12 13] (left-padded)
	// responses [21 22 31 32 33 0] (right-padded)
	// mask      [1 1 0 0 0 0]
	// scores    [0 0 0 0 1 0]
	// JSONL round trip: true
}

// ExampleCollate_fitLongest pads to the longest prompt and response of
// the batch instead of fixed widths.
func ExampleCollate_fitLongest() {
	short := trajectory.NewBuilder([]int32{11})
	_ = short.AppendModel([]int32{21}, nil)
	long := trajectory.NewBuilder([]int32{12, 13, 14})
	_ = long.AppendModel([]int32{22, 23}, nil)
	batch, err := trajectory.Collate([]*trajectory.Trajectory{short.Build(), long.Build()},
		trajectory.CollateOptions{PromptLen: trajectory.FitLongest, ResponseLen: trajectory.FitLongest})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("widths   ", batch.PromptLen, batch.ResponseLen)
	fmt.Println("prompts  ", batch.Prompts)
	fmt.Println("responses", batch.Responses)
	// Output:
	// widths    3 2
	// prompts   [0 0 11 12 13 14]
	// responses [21 0 22 23]
}
