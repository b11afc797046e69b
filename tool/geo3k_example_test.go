package tool_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
)

func ExampleGeo3K() {
	ctx := context.Background()
	set, err := tool.NewSet(tool.NewGeo3K(chat.ToolSchema{}))
	if err != nil {
		panic(err)
	}
	// The sample's ground truth reaches the tool as a create kwarg.
	ss := set.Session(map[string]map[string]any{"calc_geo3k_reward": {"ground_truth": `4\sqrt{3}`}})
	defer ss.Close(ctx)
	for _, a := range []string{`6.93`, `\sqrt{48}`} {
		r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{
			Name: "calc_geo3k_reward", Arguments: fmt.Sprintf(`{"answer": %q}`, a)}})
		fmt.Println(r.Text, r.Reward)
	}
	// Output:
	// Current parsed answer='6.93' reward=0.0 -0.05
	// Current parsed answer='\\sqrt{48}' reward=1.0 0
}
