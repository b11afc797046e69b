package router_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/router"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

func Example() {
	gpu0 := servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 2)})
	gpu1 := servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 2)})
	r, err := router.New(router.Config{},
		router.Backend{Name: "gpu0", Server: gpu0},
		router.Backend{Name: "gpu1", Server: gpu1})
	if err != nil {
		panic(err)
	}
	defer r.Close()

	// Three turns of one trajectory, then a second trajectory: the turns
	// stick to one server, the new trajectory goes to the idle one.
	for _, rid := range []string{"traj-1", "traj-1", "traj-1", "traj-2"} {
		out, err := r.Generate(context.Background(), server.GenerateRequest{RequestID: rid, PromptIDs: []int32{1, 2, 3}})
		if err != nil {
			panic(err)
		}
		fmt.Println(rid, out.TokenIDs)
	}
	for _, s := range r.Snapshot().Servers {
		fmt.Printf("%s: %d calls, %d sticky hits, %d in flight\n", s.Name, s.Assigned, s.StickyHits, s.InFlight)
	}
	// Output:
	// traj-1 [5 6 2]
	// traj-1 [5 6 2]
	// traj-1 [5 6 2]
	// traj-2 [5 6 2]
	// gpu0: 3 calls, 2 sticky hits, 0 in flight
	// gpu1: 1 calls, 0 sticky hits, 0 in flight
}
