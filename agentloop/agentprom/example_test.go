package agentprom_test

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/agentprom"
)

// Register the collector on your registry and set its Trace as
// agentloop.Env.Trace; here two events stand in for a rollout.
func Example() {
	c := agentprom.New(agentprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	var trace agentloop.TraceFunc = c.Trace // agentloop.Env{..., Trace: c.Trace}
	trace(agentloop.Event{Kind: agentloop.EventTool, TrajectoryID: "0/0", Tool: "calculator", Latency: 2 * time.Millisecond})
	trace(agentloop.Event{Kind: agentloop.EventDone, TrajectoryID: "0/0", Turn: 2, Stop: "completed"})

	n, _ := testutil.GatherAndCount(reg, "agentrl_agentloop_trajectories_total", "agentrl_agentloop_tool_calls_total")
	fmt.Println("series:", n)
	// Output:
	// series: 2
}

// The Manager traces every rollout queued, started and finished; the
// collector keeps the queue and the rollouts in flight per agent as
// gauges.
func Example_inFlight() {
	c := agentprom.New(agentprom.Options{})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)

	for _, id := range []string{"0/0", "0/1", "1/0"} {
		c.Trace(agentloop.Event{Kind: agentloop.EventQueued, TrajectoryID: id, Agent: "tool_agent"})
	}
	c.Trace(agentloop.Event{Kind: agentloop.EventStarted, TrajectoryID: "0/0", Agent: "tool_agent"})
	c.Trace(agentloop.Event{Kind: agentloop.EventStarted, TrajectoryID: "0/1", Agent: "tool_agent"})
	c.Trace(agentloop.Event{Kind: agentloop.EventFinished, TrajectoryID: "0/0", Agent: "tool_agent", Stop: "completed"})

	err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP agentrl_agentloop_trajectories_in_flight Rollouts running now, by agent name.
# TYPE agentrl_agentloop_trajectories_in_flight gauge
agentrl_agentloop_trajectories_in_flight{agent="tool_agent"} 1
# HELP agentrl_agentloop_trajectories_queued Rollouts the Manager took in that wait for a concurrency slot.
# TYPE agentrl_agentloop_trajectories_queued gauge
agentrl_agentloop_trajectories_queued 1
`), "agentrl_agentloop_trajectories_in_flight", "agentrl_agentloop_trajectories_queued")
	fmt.Println(err)
	// Output:
	// <nil>
}
