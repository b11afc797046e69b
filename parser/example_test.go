package parser_test

import (
	"fmt"

	"github.com/agentrl/agentrl/parser"
)

func Example() {
	p, err := parser.New("hermes", parser.Options{ThinkAware: true})
	if err != nil {
		panic(err)
	}
	res := p.Parse(`<think>The user wants the weather.</think>
Let me check.
<tool_call>
{"name": "get_weather", "arguments": {"city": "Paris"}}
</tool_call>
<tool_call>
{"name": "get_weather", "arguments": {"city": }}
</tool_call>`, nil)

	fmt.Println("reasoning:", res.Reasoning)
	fmt.Println("content:", res.Content)
	for _, c := range res.Calls {
		fmt.Println("call:", c.Function.Name, c.Function.Arguments)
	}
	for _, e := range res.Errors {
		fmt.Println("error:", e.Message)
	}
	// Output:
	// reasoning: The user wants the weather.
	// content: Let me check.
	// call: get_weather {"city": "Paris"}
	// error: tool call 2: invalid JSON in <tool_call> (invalid character '}' looking for beginning of value): "{\"name\": \"get_weather\", \"arguments\": {\"city\": }}"
}
