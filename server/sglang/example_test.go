package sglang_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

// A client talking to a scripted engine served over SGLang's API on
// loopback.
func Example() {
	api, err := httpapi.Start(servertest.New(servertest.Config{Rule: servertest.Constant(11, 12, 2)}), httpapi.Config{})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	c, err := sglang.New(sglang.Config{BaseURL: api.URL()})
	if err != nil {
		panic(err)
	}
	out, err := c.Generate(context.Background(), server.GenerateRequest{
		RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3},
		Params:    server.SamplingParams{Temperature: 1, MaxNewTokens: 16, StopTokenIDs: []int32{2}, Logprobs: true},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.TokenIDs, out.StopReason, len(out.Logprobs))
	// Output: [11 12 2] stop 3
}

// Tokens handed out as the server streams them; the chunks add up to the
// returned output.
func ExampleClient_GenerateStream() {
	api, err := httpapi.Start(servertest.New(servertest.Config{Rule: servertest.Constant(11, 12, 2)}), httpapi.Config{})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	c, err := sglang.New(sglang.Config{BaseURL: api.URL()})
	if err != nil {
		panic(err)
	}
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{
		RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3},
		Params:    server.SamplingParams{MaxNewTokens: 16, StopTokenIDs: []int32{2}, Logprobs: true},
	}, func(ch server.Chunk) error {
		fmt.Println("chunk", ch.TokenIDs, len(ch.Logprobs))
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.TokenIDs, out.StopReason)
	// Output:
	// chunk [11] 1
	// chunk [12] 1
	// chunk [2] 1
	// [11 12 2] stop
}
