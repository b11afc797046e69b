package tracestream

import (
	"time"

	"github.com/agentrl/agentrl/agentloop"
)

// Step is the events of one agent-loop step of trajectory "t": a generate,
// a parse, a call of the calculator tool, an observation and done. toolErr
// is the tool call's error (nil: it succeeded).
func Step(toolErr error) []agentloop.Event {
	return []agentloop.Event{
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "calculator", Latency: time.Millisecond, Err: toolErr},
		{Kind: agentloop.EventObservation, TrajectoryID: "t", Turn: 1, Tokens: 20},
		{Kind: agentloop.EventDone, TrajectoryID: "t", Turn: 1, Stop: "completed"},
	}
}

// Rollout is the 16 events of one tool-calling trajectory "t" under a
// Manager: queued, started, prompt, the tool session and a python
// instance, two turns (the first calling the tool), reward, finished.
// toolMetrics are the tool call's metrics (nil: none).
func Rollout(toolMetrics map[string]float64) []agentloop.Event {
	return []agentloop.Event{
		{Kind: agentloop.EventQueued, TrajectoryID: "t", Agent: "tool_agent"},
		{Kind: agentloop.EventStarted, TrajectoryID: "t", Agent: "tool_agent", Latency: time.Millisecond},
		{Kind: agentloop.EventPrompt, TrajectoryID: "t", Tokens: 200, Latency: 50 * time.Microsecond},
		{Kind: agentloop.EventSessionOpen, TrajectoryID: "t"},
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 1, Tokens: 100, PromptTokens: 200, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 1, Calls: 1},
		{Kind: agentloop.EventToolCreate, TrajectoryID: "t", Tool: "python", Latency: time.Millisecond},
		{Kind: agentloop.EventTool, TrajectoryID: "t", Turn: 1, Tool: "python", Latency: time.Millisecond, Metrics: toolMetrics},
		{Kind: agentloop.EventObservation, TrajectoryID: "t", Turn: 1, Tokens: 20},
		{Kind: agentloop.EventGenerate, TrajectoryID: "t", Turn: 2, Tokens: 10, PromptTokens: 320, CachedTokens: 300, Latency: 30 * time.Millisecond, EngineStop: "stop"},
		{Kind: agentloop.EventParse, TrajectoryID: "t", Turn: 2},
		{Kind: agentloop.EventToolRelease, TrajectoryID: "t", Tool: "python", Latency: time.Second},
		{Kind: agentloop.EventSessionClose, TrajectoryID: "t", Latency: time.Second},
		{Kind: agentloop.EventDone, TrajectoryID: "t", Turn: 2, Stop: "completed"},
		{Kind: agentloop.EventReward, TrajectoryID: "t", Reward: 1, Latency: time.Millisecond},
		{Kind: agentloop.EventFinished, TrajectoryID: "t", Agent: "tool_agent", Stop: "completed", Latency: time.Second},
	}
}
