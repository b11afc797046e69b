package agentloop

import (
	"time"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// EventKind names a trace event.
type EventKind string

// Trace event kinds.
const (
	EventGenerate    EventKind = "generate"    // a model turn finished: Tokens, Latency, EngineStop, Preempted
	EventParse       EventKind = "parse"       // the turn was parsed: Calls, ParseErrors
	EventTool        EventKind = "tool"        // one tool call finished: Tool, Latency, Err
	EventInteraction EventKind = "interaction" // the interaction answered: Latency, Reward, Err
	EventObservation EventKind = "observation" // an observation delta was appended: Tokens
	EventDone        EventKind = "done"        // the trajectory ended: Stop, Err
)

// Event is one step of one trajectory.
type Event struct {
	Kind         EventKind
	TrajectoryID string
	// Turn is the assistant turn the event belongs to (1-based).
	Turn        int
	Tokens      int
	Calls       int
	ParseErrors int
	Tool        string
	Latency     time.Duration
	Reward      float64
	EngineStop  server.StopReason
	Preempted   int
	Stop        trajectory.StopReason
	Err         error
}

// TraceFunc receives events; it must be safe for concurrent use and fast
// (it runs on the trajectory's goroutine).
type TraceFunc func(Event)
