package otelagent_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/otelagent"
	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/trajectory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func setup(t *testing.T) (*otelagent.Tracer, *tracetest.InMemoryExporter, *time.Time) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { require.NoError(t, tp.Shutdown(context.Background())) })
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tr := otelagent.New(tp.Tracer("test"), otelagent.Options{Now: func() time.Time { return now }})
	return tr, exp, &now
}

func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// A scripted trajectory: the spans' times, nesting, attributes and
// statuses follow the events.
func TestSpansFromEvents(t *testing.T) {
	tr, exp, now := setup(t)
	t0 := *now
	step := func(d time.Duration, ev agentloop.Event) {
		*now = now.Add(d)
		ev.TrajectoryID = "traj-1"
		tr.Trace(ev)
	}
	// The trajectory's span starts with the prompt's encoding.
	step(2*time.Millisecond, agentloop.Event{Kind: agentloop.EventPrompt, Tokens: 30, Latency: 2 * time.Millisecond})
	t1 := *now
	step(100*time.Millisecond, agentloop.Event{Kind: agentloop.EventGenerate, Turn: 1, Tokens: 20, Latency: 100 * time.Millisecond, EngineStop: "stop",
		PromptTokens: 30, CachedTokens: 16})
	step(time.Millisecond, agentloop.Event{Kind: agentloop.EventParse, Turn: 1, Calls: 2, ParseErrors: 1})
	step(30*time.Millisecond, agentloop.Event{Kind: agentloop.EventTool, Turn: 1, Tool: "calculator", Latency: 30 * time.Millisecond,
		Truncated: true, Metrics: map[string]float64{"wall_timeout": 1, "exit_code": -1}})
	step(5*time.Millisecond, agentloop.Event{Kind: agentloop.EventTool, Turn: 1, Tool: "search", Latency: 5 * time.Millisecond, Err: errors.New("no index")})
	step(time.Millisecond, agentloop.Event{Kind: agentloop.EventObservation, Turn: 1, Tokens: 12})
	step(50*time.Millisecond, agentloop.Event{Kind: agentloop.EventGenerate, Turn: 2, Tokens: 7, Latency: 50 * time.Millisecond, EngineStop: "length", Preempted: 1})
	require.Equal(t, 1, tr.Open())
	step(time.Millisecond, agentloop.Event{Kind: agentloop.EventDone, Turn: 2, Stop: trajectory.StopResponseLength})
	require.Equal(t, 0, tr.Open())

	spans := exp.GetSpans() // the prompt, 2 generate, 2 tool, and the trajectory
	var root tracetest.SpanStub
	byName := map[string][]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if s.Name == otelagent.SpanTrajectory {
			root = s
		}
	}
	require.Len(t, spans, 6)
	require.Equal(t, t0, root.StartTime)
	p := byName[otelagent.SpanPrompt]
	require.Len(t, p, 1)
	require.Equal(t, t0, p[0].StartTime)
	require.Equal(t, t1, p[0].EndTime)
	require.Equal(t, int64(30), attrs(p[0].Attributes)[otelagent.KeyInputTokens].AsInt64())
	require.Equal(t, *now, root.EndTime)
	a := attrs(root.Attributes)
	require.Equal(t, "traj-1", a[otelagent.KeyTrajectoryID].AsString())
	require.Equal(t, "response_length", a[otelagent.KeyStopReason].AsString())
	require.Equal(t, int64(27), a[otelagent.KeyOutputTokens].AsInt64())
	require.Equal(t, int64(30), a[otelagent.KeyInputTokens].AsInt64())
	require.Equal(t, int64(12), a[otelagent.KeyObservationTokens].AsInt64())
	require.Equal(t, int64(2), a[otelagent.KeyCalls].AsInt64())
	require.Equal(t, int64(1), a[otelagent.KeyToolErrors].AsInt64())
	require.Equal(t, int64(1), a[otelagent.KeyParseErrors].AsInt64())
	require.Equal(t, int64(1), a[otelagent.KeyPreempted].AsInt64())
	require.Equal(t, int64(2), a[otelagent.KeyTurns].AsInt64())
	require.Equal(t, codes.Unset, root.Status.Code)
	require.Len(t, root.Events, 2)
	require.Equal(t, "parse", root.Events[0].Name)
	require.Equal(t, "observation", root.Events[1].Name)

	for _, s := range spans {
		if s.Name == otelagent.SpanTrajectory {
			require.False(t, s.Parent.IsValid())
			continue
		}
		require.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), s.Name)
		require.Equal(t, root.SpanContext.TraceID(), s.SpanContext.TraceID())
	}
	g := byName[otelagent.SpanGenerate]
	require.Len(t, g, 2)
	require.Equal(t, t1, g[0].StartTime)
	require.Equal(t, t1.Add(100*time.Millisecond), g[0].EndTime)
	require.Equal(t, int64(20), attrs(g[0].Attributes)[otelagent.KeyOutputTokens].AsInt64())
	require.Equal(t, int64(30), attrs(g[0].Attributes)[otelagent.KeyInputTokens].AsInt64())
	require.Equal(t, int64(16), attrs(g[0].Attributes)[otelagent.KeyCachedTokens].AsInt64())
	require.Equal(t, "length", attrs(g[1].Attributes)[otelagent.KeyEngineStop].AsString())
	tools := byName[otelagent.SpanTool]
	require.Len(t, tools, 2)
	require.Equal(t, "calculator", attrs(tools[0].Attributes)[otelagent.KeyToolName].AsString())
	require.Equal(t, 30*time.Millisecond, tools[0].EndTime.Sub(tools[0].StartTime))
	require.Equal(t, codes.Unset, tools[0].Status.Code)
	ta := attrs(tools[0].Attributes)
	require.Equal(t, "ok", ta[otelagent.KeyToolOutcome].AsString())
	require.True(t, ta[otelagent.KeyToolTruncated].AsBool())
	require.Equal(t, 1.0, ta[otelagent.KeyToolMetricPrefix+"wall_timeout"].AsFloat64())
	require.Equal(t, -1.0, ta[otelagent.KeyToolMetricPrefix+"exit_code"].AsFloat64())
	require.Equal(t, "other", attrs(tools[1].Attributes)[otelagent.KeyToolOutcome].AsString())
	require.Equal(t, codes.Error, tools[1].Status.Code)
	require.Equal(t, "no index", tools[1].Status.Description)
}

// Under a Manager the trajectory's span runs from the rollout's start to
// its finish, after the reward; the queue is an attribute; tool sessions
// are span events and tool instances child spans; events that come
// before the start or after the finish open nothing.
func TestManagedSpans(t *testing.T) {
	tr, exp, now := setup(t)
	step := func(d time.Duration, ev agentloop.Event) {
		*now = now.Add(d)
		ev.TrajectoryID = "0/0"
		tr.Trace(ev)
	}
	step(0, agentloop.Event{Kind: agentloop.EventQueued, Agent: "tool_agent"})
	require.Zero(t, tr.Open(), "a queued rollout has no span yet")
	step(5*time.Millisecond, agentloop.Event{Kind: agentloop.EventStarted, Agent: "tool_agent", Latency: 5 * time.Millisecond})
	start := *now
	step(time.Millisecond, agentloop.Event{Kind: agentloop.EventPrompt, Tokens: 9, Latency: time.Millisecond})
	step(0, agentloop.Event{Kind: agentloop.EventSessionOpen})
	step(10*time.Millisecond, agentloop.Event{Kind: agentloop.EventGenerate, Turn: 1, Tokens: 4, Latency: 10 * time.Millisecond})
	step(3*time.Millisecond, agentloop.Event{Kind: agentloop.EventToolCreate, Tool: "python", Latency: 3 * time.Millisecond})
	created := *now
	step(7*time.Millisecond, agentloop.Event{Kind: agentloop.EventTool, Turn: 1, Tool: "python", Latency: 10 * time.Millisecond})
	step(10*time.Millisecond, agentloop.Event{Kind: agentloop.EventGenerate, Turn: 2, Tokens: 3, Latency: 10 * time.Millisecond})
	step(time.Millisecond, agentloop.Event{Kind: agentloop.EventToolRelease, Tool: "python", Latency: now.Add(time.Millisecond).Sub(created)})
	step(0, agentloop.Event{Kind: agentloop.EventSessionClose, Latency: 22 * time.Millisecond})
	step(0, agentloop.Event{Kind: agentloop.EventDone, Turn: 2, Stop: trajectory.StopCompleted})
	require.Equal(t, 1, tr.Open(), "the Manager still scores it")
	step(4*time.Millisecond, agentloop.Event{Kind: agentloop.EventReward, Reward: 1, Latency: 4 * time.Millisecond, Err: errors.New("grader down")})
	step(0, agentloop.Event{Kind: agentloop.EventFinished, Agent: "tool_agent", Stop: trajectory.StopCompleted, Latency: now.Sub(start),
		Err: errors.New("grader down")})
	require.Zero(t, tr.Open())
	end := *now
	step(time.Second, agentloop.Event{Kind: agentloop.EventToolRelease, Tool: "late"})
	require.Zero(t, tr.Open(), "a late release opens nothing")

	byName := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		byName[s.Name] = append(byName[s.Name], s)
	}
	for name, n := range map[string]int{otelagent.SpanTrajectory: 1, otelagent.SpanPrompt: 1, otelagent.SpanGenerate: 2,
		otelagent.SpanToolCreate: 1, otelagent.SpanTool: 1, otelagent.SpanToolInstance: 1, otelagent.SpanReward: 1} {
		require.Len(t, byName[name], n, name)
	}
	root := byName[otelagent.SpanTrajectory][0]
	require.Equal(t, start, root.StartTime)
	require.Equal(t, end, root.EndTime)
	a := attrs(root.Attributes)
	require.Equal(t, "tool_agent", a[otelagent.KeyAgent].AsString())
	require.Equal(t, 0.005, a[otelagent.KeyQueueSeconds].AsFloat64())
	require.Equal(t, "completed", a[otelagent.KeyStopReason].AsString())
	require.Equal(t, int64(9), a[otelagent.KeyInputTokens].AsInt64())
	require.Equal(t, codes.Error, root.Status.Code, "the reward failed")
	var evNames []string
	for _, e := range root.Events {
		evNames = append(evNames, e.Name)
	}
	require.Equal(t, []string{"tool_session_open", "tool_session_close", "done", "exception"}, evNames, "exception: the error recorded")
	inst := byName[otelagent.SpanToolInstance][0]
	require.Equal(t, created, inst.StartTime, "the instance lives from its Create to its Release")
	require.Equal(t, "python", attrs(inst.Attributes)[otelagent.KeyToolName].AsString())
	cr := byName[otelagent.SpanToolCreate][0]
	require.Equal(t, created, cr.EndTime)
	require.Equal(t, 3*time.Millisecond, cr.EndTime.Sub(cr.StartTime))
	rw := byName[otelagent.SpanReward][0]
	require.Equal(t, codes.Error, rw.Status.Code)
	require.Equal(t, end, rw.EndTime)
	for _, s := range exp.GetSpans() {
		if s.Name != otelagent.SpanTrajectory {
			require.Equal(t, root.SpanContext.SpanID(), s.Parent.SpanID(), s.Name)
			require.False(t, s.StartTime.Before(root.StartTime), s.Name)
			require.False(t, s.EndTime.After(root.EndTime), s.Name)
		}
	}
}

// Trajectories that never report done are ended, as errors, by Close;
// a trajectory that ended with an error carries it.
func TestCloseAndErrors(t *testing.T) {
	tr, exp, _ := setup(t)
	tr.Trace(agentloop.Event{Kind: agentloop.EventGenerate, TrajectoryID: "a", Turn: 1, Tokens: 3})
	tr.Trace(agentloop.Event{Kind: agentloop.EventGenerate, TrajectoryID: "b", Turn: 1, Err: errors.New("engine down")})
	tr.Trace(agentloop.Event{Kind: agentloop.EventDone, TrajectoryID: "b", Stop: trajectory.StopError, Err: errors.New("engine down")})
	require.Equal(t, 1, tr.Open())
	tr.Close()
	require.Equal(t, 0, tr.Open())
	got := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		if s.Name == otelagent.SpanTrajectory {
			got[attrs(s.Attributes)[otelagent.KeyTrajectoryID].AsString()] = s
		}
	}
	require.Equal(t, codes.Error, got["a"].Status.Code)
	require.Equal(t, "unfinished", attrs(got["a"].Attributes)[otelagent.KeyStopReason].AsString())
	require.Equal(t, codes.Error, got["b"].Status.Code)
	require.Equal(t, "engine down", got["b"].Status.Description)
}

// A real rollout: the tiny arithmetic model on the in-process engine
// through ToolAgent. The spans count what the trajectories record.
func TestRolloutSpans(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	defer func() { require.NoError(t, tp.Shutdown(context.Background())) }()
	ctx, parent := tp.Tracer("test").Start(context.Background(), "step")
	tr := otelagent.New(tp.Tracer("agentrl"), otelagent.Options{Parent: ctx})

	out := rollout(t, tr.Trace, 6)
	parent.End()
	require.Zero(t, tr.Open())

	var trajSpans, genSpans, toolSpans, rewardSpans int
	byID := map[string]tracetest.SpanStub{}
	prompts := map[trace.SpanID]tracetest.SpanStub{} // by parent
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case otelagent.SpanPrompt:
			prompts[s.Parent.SpanID()] = s
		case otelagent.SpanReward:
			rewardSpans++
		case otelagent.SpanTrajectory:
			trajSpans++
			byID[attrs(s.Attributes)[otelagent.KeyTrajectoryID].AsString()] = s
			require.Equal(t, parent.SpanContext().SpanID(), s.Parent.SpanID())
		case otelagent.SpanGenerate:
			genSpans++
		case otelagent.SpanTool:
			toolSpans++
		}
	}
	require.Equal(t, len(out.Trajectories), trajSpans)
	calls := 0
	for _, tj := range out.Trajectories {
		s, ok := byID[tj.ID]
		require.True(t, ok, "no span for %s", tj.ID)
		a := attrs(s.Attributes)
		require.Equal(t, string(tj.StopReason), a[otelagent.KeyStopReason].AsString())
		require.Equal(t, int64(tj.ToolCalls), a[otelagent.KeyCalls].AsInt64(), tj.ID)
		require.Equal(t, int64(tj.ToolErrors), a[otelagent.KeyToolErrors].AsInt64(), tj.ID)
		require.Equal(t, int64(tj.MaskOnes()), a[otelagent.KeyOutputTokens].AsInt64(), "policy tokens of %s", tj.ID)
		require.Equal(t, int64(len(tj.PromptIDs)), a[otelagent.KeyInputTokens].AsInt64(), tj.ID)
		require.Equal(t, agentloop.ToolAgentName, a[otelagent.KeyAgent].AsString())
		// The span covers the prompt's encoding.
		p, ok := prompts[s.SpanContext.SpanID()]
		require.True(t, ok, "no prompt span for %s", tj.ID)
		require.False(t, p.StartTime.Before(s.StartTime), tj.ID)
		require.Equal(t, int64(len(tj.PromptIDs)), attrs(p.Attributes)[otelagent.KeyInputTokens].AsInt64(), tj.ID)
		calls += tj.ToolCalls
	}
	require.Equal(t, calls, toolSpans)
	require.Equal(t, len(out.Trajectories), rewardSpans, "the reward runs inside the trajectory's span")
	require.Positive(t, calls)
	require.GreaterOrEqual(t, genSpans, 2*len(out.Trajectories))
}

// rollout runs n arithmetic tasks through ToolAgent on the embedded tiny
// model with trace as Env.Trace.
func rollout(t *testing.T, trace agentloop.TraceFunc, n int) *agentloop.Output {
	t.Helper()
	tok, eng, err := arith.LoadCheckpoint(filepath.Join("..", "..", "internal", "arith", "checkpoint"), 1)
	require.NoError(t, err)
	defer eng.Close()
	tools, err := arith.Tools()
	require.NoError(t, err)
	reg := agentloop.NewRegistry()
	require.NoError(t, reg.SetConfig(agentloop.ToolAgentName, arith.AgentConfig()))
	var mu sync.Mutex
	events := 0
	env := &agentloop.Env{Server: eng, Tokenizer: tok, Tools: tools, Trace: func(ev agentloop.Event) {
		mu.Lock()
		events++
		mu.Unlock()
		trace(ev)
	}}
	m, err := agentloop.NewManager(reg, env, agentloop.Options{
		DefaultAgent: agentloop.ToolAgentName, N: 1, Concurrency: 4,
		Sampling: arith.Sampling(tok, 0), Reward: agentloop.GSM8KReward(true),
	})
	require.NoError(t, err)
	tasks, err := arith.Generate(arith.DemoSeed, n, arith.HeldOut)
	require.NoError(t, err)
	samples := make([]agentloop.Sample, len(tasks))
	for i, task := range tasks {
		samples[i] = task.Sample(i)
	}
	out, err := m.Generate(context.Background(), samples)
	require.NoError(t, err)
	require.Len(t, out.Trajectories, n)
	require.Positive(t, events)
	return out
}
