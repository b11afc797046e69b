package server_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// Example is the package doc's snippet against servertest's scripted
// engine, which stands in for an SGLang or vLLM client or the in-process
// engine: any server.LLMServer is used the same way.
func Example() {
	ctx := context.Background()
	var srv server.LLMServer = servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7)})
	prompt := []int32{1, 2, 3}

	out, err := srv.Generate(ctx, server.GenerateRequest{
		RequestID: "traj-42",
		PromptIDs: prompt,
		Params:    server.SamplingParams{Temperature: 1, MaxNewTokens: 256, Logprobs: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(out.TokenIDs, out.StopReason, len(out.Logprobs), "logprobs")

	// Optional capabilities are discovered by type assertion.
	if a, ok := srv.(server.Aborter); ok {
		fmt.Println("abort:", a.Abort(ctx, "traj-42"))
	}
	// Output:
	// [5 6 7] stop 3 logprobs
	// abort: <nil>
}

// A StopSet is built once per request and looked up after every sampled
// token, in constant time whatever the list's length.
func ExampleNewStopSet() {
	stops := server.NewStopSet([]int32{151645, 151643})
	for _, tok := range []int32{872, 151645} {
		fmt.Println(tok, stops.Has(tok))
	}
	// Output:
	// 872 false
	// 151645 true
}
