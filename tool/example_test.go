package tool_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
)

func ExampleSession_Call() {
	ctx := context.Background()
	set, err := tool.NewSet(tool.NewCalculator())
	if err != nil {
		panic(err)
	}
	ss := set.Session(nil) // one session per trajectory
	defer ss.Close(ctx)

	r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{
		Name: "calculator", Arguments: `{"expression": "2 * (3 + 4) / 8"}`}})
	fmt.Println(r.Text, r.Err)

	// Failures are values with a message for the model.
	r = ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{
		Name: "calculator", Arguments: `{"expression": 7}`}})
	fmt.Println(r.Text)
	fmt.Println(errors.Is(r.Err, tool.ErrInvalidArguments))
	// Output:
	// 1.75 <nil>
	// Error: invalid arguments for tool "calculator": /expression: expected string, got number
	// true
}

func ExampleNewFunc() {
	type weatherArgs struct {
		City string `json:"city" jsonschema:"city name"`
		Days int    `json:"days,omitempty" jsonschema:"forecast length"`
	}
	weather, err := tool.NewFunc("weather", "Get the forecast.",
		func(_ context.Context, a weatherArgs) (string, error) {
			return fmt.Sprintf("%s: sunny for %d days", a.City, max(a.Days, 1)), nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(weather.Schema().Function.Parameters))
	r, _ := weather.Execute(context.Background(), "", []byte(`{"city": "Oslo", "days": 3}`))
	fmt.Println(r.Text)
	// Output:
	// {"type":"object","properties":{"city":{"type":"string","description":"city name"},"days":{"type":"integer","description":"forecast length"}},"required":["city"],"additionalProperties":false}
	// Oslo: sunny for 3 days
}

func ExampleTruncate() {
	s := "0123456789"
	fmt.Println(tool.Truncate(s, 4, tool.TruncateLeft))
	fmt.Println(tool.Truncate(s, 4, tool.TruncateRight))
	fmt.Println(tool.Truncate(s, 4, tool.TruncateMiddle))
	// Output:
	// (truncated)...6789
	// 0123...(truncated)
	// 01...(truncated)...89
}

func ExampleLoadConfig() {
	ctx := context.Background()
	// verl's GSM8K tool config, unchanged.
	set, err := tool.LoadConfig(ctx, "testdata/gsm8k_tool_config.yaml")
	if err != nil {
		panic(err)
	}
	defer set.Close(ctx)
	fmt.Println(set.Names())

	// Per-sample create kwargs, as verl's tools_kwargs[name].create_kwargs.
	ss := set.Session(map[string]map[string]any{"calc_gsm8k_reward": {"ground_truth": "72"}})
	defer ss.Close(ctx)
	r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{
		Name: "calc_gsm8k_reward", Arguments: `{"answer": "72"}`}})
	fmt.Println(r.Text, r.Metrics["score"])
	// Output:
	// [calc_gsm8k_reward]
	// Current parsed answer='72' reward=1.0 1
}

func ExampleSet_SessionWith() {
	ctx := context.Background()
	set, err := tool.NewSet(tool.NewCalculator())
	if err != nil {
		panic(err)
	}
	// The observer sees each tool instance made and released (metrics of
	// instances alive and their lifetime; agentloop turns these into
	// trace events).
	ss := set.SessionWith(nil, tool.SessionOptions{Observe: func(ev tool.InstanceEvent) {
		fmt.Println(ev.Tool, "released:", ev.Released, "error:", ev.Err)
	}})
	for _, expr := range []string{`{"expression": "1+1"}`, `{"expression": 2}`} {
		r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{Name: "calculator", Arguments: expr}})
		fmt.Println(tool.ErrorKind(r.Err))
	}
	_ = ss.Close(ctx)
	// Output:
	// calculator released: false error: <nil>
	// ok
	// invalid_arguments
	// calculator released: true error: <nil>
}
