package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// eventLog is a TraceFunc that keeps events in the order they came.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
}

func (l *eventLog) trace(ev Event) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.evs...)
}

// Every rollout the Manager runs, custom and panicking loops included, is
// traced queued, started and finished, in that order and once each, with
// its loop's events and its reward in between; the rollouts running at
// once never exceed Options.Concurrency.
func TestManagerTraceLifecycle(t *testing.T) {
	tok := qwen3(t)
	for _, mode := range []string{"Generate", "Stream"} {
		t.Run(mode, func(t *testing.T) {
			reg := NewRegistry()
			require.NoError(t, reg.Register("flaky", func(*Env, Config) (AgentLoop, error) { return flakyLoop{}, nil }, Config{}))
			var log eventLog
			env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "4")...)}), Tokenizer: tok, Trace: log.trace}
			m, err := NewManager(reg, env, Options{N: 2, Concurrency: 1,
				Reward: func(context.Context, RewardInput) (float64, error) { return 1, nil }})
			require.NoError(t, err)
			samples := userSamples(4)
			samples[0].AgentName, samples[1].AgentName = "flaky", "flaky" // Index 0 panics, 1 fails
			var results []Result
			if mode == "Generate" {
				out, err := m.Generate(context.Background(), samples)
				require.NoError(t, err)
				results = out.Results
			} else {
				in := make(chan Sample, len(samples))
				for _, s := range samples {
					in <- s
				}
				close(in)
				for r := range m.Stream(context.Background(), in) {
					results = append(results, r)
				}
			}
			require.Len(t, results, 4)

			evs := log.events()
			byID := map[string][]Event{}
			running, queued, maxRunning, maxQueued := 0, 0, 0, 0
			for _, ev := range evs {
				byID[ev.TrajectoryID] = append(byID[ev.TrajectoryID], ev)
				switch ev.Kind {
				case EventQueued:
					queued++
				case EventStarted:
					queued--
					running++
				case EventFinished:
					running--
				}
				maxRunning, maxQueued = max(maxRunning, running), max(maxQueued, queued)
				require.GreaterOrEqual(t, queued, 0)
				require.GreaterOrEqual(t, running, 0)
			}
			require.Zero(t, running)
			require.Zero(t, queued)
			require.Equal(t, 1, maxRunning, "Options.Concurrency")
			if mode == "Generate" {
				require.Equal(t, 8, maxQueued, "a batch is queued whole")
			} else {
				require.Equal(t, 2, maxQueued, "a streamed sample's rollouts are queued as it is read")
			}
			require.Len(t, byID, 8)
			for _, r := range results {
				for i := range r.Trajectories {
					id := m.rolloutSample(r.Sample, i).ID
					got := byID[id]
					require.GreaterOrEqual(t, len(got), 3, id)
					first, second, last := got[0], got[1], got[len(got)-1]
					require.Equal(t, EventQueued, first.Kind, id)
					require.Equal(t, EventStarted, second.Kind, id)
					require.Equal(t, EventFinished, last.Kind, id)
					require.GreaterOrEqual(t, second.Latency, first.Latency, "Started.Latency is the time queued")
					for _, ev := range got[2 : len(got)-1] {
						require.NotContains(t, []EventKind{EventQueued, EventStarted, EventFinished}, ev.Kind, id)
					}
					if r.Sample.AgentName == "flaky" {
						require.Equal(t, "flaky", last.Agent)
						require.Equal(t, trajectory.StopError, last.Stop)
						require.Error(t, last.Err)
						require.Len(t, got, 3, "a custom loop sends no events of its own")
						continue
					}
					require.Equal(t, SingleTurnAgent, last.Agent)
					require.Equal(t, SingleTurnAgent, first.Agent)
					require.NoError(t, last.Err)
					require.Equal(t, trajectory.StopCompleted, last.Stop)
					var kinds []EventKind
					for _, ev := range got {
						kinds = append(kinds, ev.Kind)
					}
					require.Equal(t, []EventKind{EventQueued, EventStarted, EventPrompt, EventGenerate, EventDone, EventReward, EventFinished}, kinds, id)
					require.Equal(t, 1.0, got[5].Reward)
					require.Equal(t, len(r.Trajectories[i].PromptIDs), got[2].Tokens)
				}
			}
		})
	}
}

// metricTool returns a long text and the metrics a sandbox reports.
type metricTool struct{}

func (metricTool) Schema() chat.ToolSchema {
	return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{Name: "run", Parameters: json.RawMessage(`{"type":"object"}`)}}
}
func (metricTool) Create(context.Context, map[string]any) (string, error) { return "i", nil }
func (metricTool) Execute(context.Context, string, json.RawMessage) (tool.Result, error) {
	return tool.Result{Text: "a long output of many characters", Metrics: map[string]float64{"wall_timeout": 1}}, nil
}
func (metricTool) Release(context.Context, string) error { return nil }

// A tool event says whether the loop cut the result and carries the
// tool's own metrics.
func TestToolEventTruncatedAndMetrics(t *testing.T) {
	tok := qwen3(t)
	set, err := tool.NewSet(metricTool{}, addTool(t))
	require.NoError(t, err)
	call := "<tool_call>\n{\"name\": \"run\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>"
	srv := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"s": {turn(t, tok, call), turn(t, tok, "Done.")}}, nil)})
	var log eventLog
	loop, err := NewToolAgent(&Env{Server: srv, Tokenizer: tok, Tools: set, Trace: log.trace}, Config{MaxParallelCalls: 2, MaxToolResponseLength: 10})
	require.NoError(t, err)
	traj, err := loop.Run(context.Background(), Sample{ID: "s", Messages: []chat.Message{{Role: chat.RoleUser, Content: "go"}}}, server.SamplingParams{})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, traj.StopReason)
	var tools []Event
	for _, ev := range log.events() {
		if ev.Kind == EventTool {
			tools = append(tools, ev)
		}
	}
	require.Len(t, tools, 2)
	require.Equal(t, "run", tools[0].Tool)
	require.True(t, tools[0].Truncated)
	require.Equal(t, map[string]float64{"wall_timeout": 1}, tools[0].Metrics)
	require.Equal(t, "add", tools[1].Tool)
	require.False(t, tools[1].Truncated, "3 fits in 10 characters")
	require.Nil(t, tools[1].Metrics)
}

// failingTemplate fails to render every prompt.
type failingTemplate struct{ Tokenizer }

func (failingTemplate) EncodeChat(tokenizer.ChatContext) ([]int32, error) {
	return nil, errors.New("template error")
}

// A prompt that cannot be encoded is traced with its error, then done.
func TestPromptEventOnEncodeError(t *testing.T) {
	var log eventLog
	loop, err := NewSingleTurn(&Env{Server: servertest.New(servertest.Config{}), Tokenizer: failingTemplate{qwen3(t)}, Trace: log.trace}, Config{})
	require.NoError(t, err)
	_, err = loop.Run(context.Background(), Sample{ID: "x", Messages: []chat.Message{{Role: chat.RoleUser, Content: "hi"}}}, server.SamplingParams{})
	require.ErrorContains(t, err, "template error")
	evs := log.events()
	require.Len(t, evs, 2)
	require.Equal(t, EventPrompt, evs[0].Kind)
	require.ErrorContains(t, evs[0].Err, "template error")
	require.Zero(t, evs[0].Tokens)
	require.Equal(t, EventDone, evs[1].Kind)
	require.Equal(t, trajectory.StopError, evs[1].Stop)
}
