package agentloop

import (
	"time"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
)

// EventKind names a trace event.
type EventKind string

// Trace event kinds of a loop's steps (sent by Episode and ToolAgent).
const (
	EventPrompt      EventKind = "prompt"      // the prompt was rendered (chat template) and tokenized: Tokens, Latency, Err
	EventGenerate    EventKind = "generate"    // a model turn finished: Tokens, PromptTokens, CachedTokens, Latency, EngineStop, Preempted
	EventParse       EventKind = "parse"       // the turn was parsed: Calls, ParseErrors
	EventTool        EventKind = "tool"        // one tool call finished: Tool, Latency, Err, Truncated, Metrics
	EventInteraction EventKind = "interaction" // the interaction answered: Latency, Reward, Err
	EventObservation EventKind = "observation" // an observation delta was appended: Tokens
	EventDone        EventKind = "done"        // the trajectory ended: Stop, Err
)

// Trace event kinds of a ToolAgent's tool session: one session per
// trajectory that has tools, one instance per tool it calls.
const (
	EventSessionOpen  EventKind = "session_open"  // the trajectory's tool session opened
	EventSessionClose EventKind = "session_close" // it closed, its instances released: Latency (the session's lifetime), Err (release errors)
	EventToolCreate   EventKind = "tool_create"   // a tool instance was created: Tool, Latency, Err (no instance then)
	EventToolRelease  EventKind = "tool_release"  // a tool instance was released: Tool, Latency (its lifetime), Err
)

// Trace event kinds of the Manager, for every rollout it runs (custom
// loops included): queued, started, then finished, always in that order
// and each once, so queued minus started is the queue and started minus
// finished the rollouts in flight.
const (
	EventQueued   EventKind = "queued"   // the Manager took the rollout in; it waits for a slot (Options.Concurrency): Agent
	EventStarted  EventKind = "started"  // it got its slot and its loop runs: Agent, Latency (time queued)
	EventReward   EventKind = "reward"   // Options.Reward scored it: Reward, Latency, Err
	EventFinished EventKind = "finished" // the Manager is done with it (loop and reward): Agent, Stop, Latency (since started), Err
)

// Event is one step of one trajectory.
//
// Tool-instance events (EventToolCreate, EventToolRelease) may come from
// a tool's goroutine, and one whose call was abandoned at its timeout
// may come after the trajectory's EventDone; they carry no Turn.
type Event struct {
	Kind         EventKind
	TrajectoryID string
	// Turn is the assistant turn the event belongs to (1-based; 0 before
	// the first and on Manager and tool-instance events).
	Turn   int
	Tokens int
	// PromptTokens and CachedTokens, on EventGenerate, are the prompt
	// tokens sent to the engine and those it served from its prefix cache
	// (Generation.PromptTokens, CachedTokens).
	PromptTokens int
	CachedTokens int
	Calls        int
	ParseErrors  int
	Tool         string
	// Agent is the rollout's agent name, on Manager events.
	Agent      string
	Latency    time.Duration
	Reward     float64
	EngineStop server.StopReason
	Preempted  int
	Stop       trajectory.StopReason
	// Truncated: the tool result was cut to Config.MaxToolResponseLength.
	Truncated bool
	// Metrics are the tool result's own metrics (tool.Result.Metrics; the
	// python sandbox reports limit kills there). They must not be modified.
	Metrics map[string]float64
	Err     error
}

// TraceFunc receives events; it must be safe for concurrent use and fast
// (it runs on the trajectory's goroutine).
type TraceFunc func(Event)
