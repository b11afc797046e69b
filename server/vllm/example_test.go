package vllm_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/vllm"
)

// A client talking to a scripted engine served over vLLM's API on loopback.
func Example() {
	api, err := httpapi.Start(servertest.New(servertest.Config{Rule: servertest.Constant(11, 12, 13)}), httpapi.Config{})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	c, err := vllm.New(vllm.Config{BaseURL: api.URL()})
	if err != nil {
		panic(err)
	}
	out, err := c.Generate(context.Background(), server.GenerateRequest{
		RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3},
		Params:    server.SamplingParams{Temperature: 1, MaxNewTokens: 2},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(out.TokenIDs, out.StopReason)
	// Output: [11 12] length
}

// Tokens handed out as the server streams them; the chunks add up to the
// returned output.
func ExampleClient_GenerateStream() {
	api, err := httpapi.Start(servertest.New(servertest.Config{Rule: servertest.Constant(11, 12, 13)}), httpapi.Config{})
	if err != nil {
		panic(err)
	}
	defer api.Close()

	c, err := vllm.New(vllm.Config{BaseURL: api.URL()})
	if err != nil {
		panic(err)
	}
	var streamed []int32
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{
		RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3},
		Params:    server.SamplingParams{MaxNewTokens: 2, Logprobs: true},
	}, func(ch server.Chunk) error {
		streamed = append(streamed, ch.TokenIDs...) // e.g. forward to a UI
		return nil
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(streamed, out.TokenIDs, len(out.Logprobs), out.StopReason)
	// Output: [11 12] [11 12] 2 length
}
