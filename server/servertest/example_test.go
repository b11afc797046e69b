package servertest_test

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

func Example() {
	srv := servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7, 8)})
	srv.FaultNext(1, servertest.Unavailable()) // the first call fails before any token

	ctx := context.Background()
	req := server.GenerateRequest{RequestID: "traj-1", PromptIDs: []int32{1, 2},
		Params: server.SamplingParams{StopTokenIDs: []int32{7}}}
	_, err := srv.Generate(ctx, req)
	fmt.Println(errors.Is(err, server.ErrUnavailable))
	out, _ := srv.Generate(ctx, req)
	fmt.Println(out.TokenIDs, out.StopReason, srv.Stats().Calls)
	// Output:
	// true
	// [5 6 7] stop 2
}

// A caller that can stream finds the capability by type assertion and
// receives the tokens as they are sampled; the returned output is the
// whole turn, as Generate returns it.
func ExampleServer_GenerateStream() {
	var eng server.LLMServer = servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7)})
	req := server.GenerateRequest{PromptIDs: []int32{1}, Params: server.SamplingParams{Logprobs: true}}
	st, ok := eng.(server.Streamer)
	if !ok {
		return // a whole-turn engine: call Generate
	}
	out, err := st.GenerateStream(context.Background(), req, func(c server.Chunk) error {
		fmt.Println("chunk", c.TokenIDs, len(c.Logprobs))
		return nil
	})
	fmt.Println(out.TokenIDs, out.StopReason, err)
	// Output:
	// chunk [5] 1
	// chunk [6] 1
	// chunk [7] 1
	// [5 6 7] stop <nil>
}

// Chunks records a stream for a test to check against the returned output.
func ExampleChunks() {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7)})
	req := server.GenerateRequest{PromptIDs: []int32{1}, Params: server.SamplingParams{Logprobs: true}}
	var got servertest.Chunks
	out, err := eng.GenerateStream(context.Background(), req, got.Emit)
	fmt.Println(got.Calls, got.TokenIDs, len(got.Logprobs), err)
	fmt.Println(slices.Equal(got.TokenIDs, out.TokenIDs), slices.Equal(got.Logprobs, out.Logprobs))
	// Output:
	// 3 [5 6 7] 3 <nil>
	// true true
}
