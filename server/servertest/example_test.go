package servertest_test

import (
	"context"
	"errors"
	"fmt"

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
