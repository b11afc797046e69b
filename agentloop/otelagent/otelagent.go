package otelagent

import (
	"context"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/tool"
)

// Attribute keys. The gen_ai.* keys follow OpenTelemetry's semantic
// conventions for generative AI; the agentrl.* keys are ours.
const (
	KeyTrajectoryID      = attribute.Key("agentrl.trajectory.id")
	KeyTurn              = attribute.Key("agentrl.turn")
	KeyStopReason        = attribute.Key("agentrl.stop_reason")
	KeyEngineStop        = attribute.Key("agentrl.engine.stop_reason")
	KeyPreempted         = attribute.Key("agentrl.preempted")
	KeyCalls             = attribute.Key("agentrl.tool_calls")
	KeyParseErrors       = attribute.Key("agentrl.parse_errors")
	KeyToolErrors        = attribute.Key("agentrl.tool_errors")
	KeyTurns             = attribute.Key("agentrl.turns")
	KeyObservationTokens = attribute.Key("agentrl.observation_tokens")
	KeyReward            = attribute.Key("agentrl.reward")
	KeyTokens            = attribute.Key("agentrl.tokens")
	KeyOutputTokens      = attribute.Key("gen_ai.usage.output_tokens")
	KeyInputTokens       = attribute.Key("gen_ai.usage.input_tokens")
	KeyAgent             = attribute.Key("agentrl.agent")
	KeyCachedTokens      = attribute.Key("agentrl.cached_tokens")
	KeyQueueSeconds      = attribute.Key("agentrl.queue_seconds")
	KeyToolOutcome       = attribute.Key("agentrl.tool.outcome")
	KeyToolTruncated     = attribute.Key("agentrl.tool.truncated")
	KeyLifetimeSeconds   = attribute.Key("agentrl.lifetime_seconds")
	KeyError             = attribute.Key("error.type")
	// KeyToolMetricPrefix prefixes the tool result's own metrics
	// (agentrl.tool.metric.wall_timeout, say) on tool spans.
	KeyToolMetricPrefix = "agentrl.tool.metric."
	KeyOperation        = attribute.Key("gen_ai.operation.name")
	KeyToolName         = attribute.Key("gen_ai.tool.name")
)

// Span names.
const (
	SpanTrajectory  = "agentrl.trajectory"
	SpanGenerate    = "agentrl.generate"
	SpanTool        = "agentrl.tool"
	SpanInteraction = "agentrl.interaction"
	// SpanPrompt is the prompt's rendering with the chat template and its
	// tokenization.
	SpanPrompt = "agentrl.prompt"
	// SpanReward is Options.Reward scoring the trajectory (Manager).
	SpanReward = "agentrl.reward"
	// SpanToolCreate is a tool instance's Create; SpanToolInstance spans a
	// tool instance's life, from Create to Release.
	SpanToolCreate   = "agentrl.tool.create"
	SpanToolInstance = "agentrl.tool.instance"
)

// Options configure a Tracer.
type Options struct {
	// Parent, when it carries a span (a training step's, say), becomes the
	// parent of every trajectory span; nil or a context without one makes
	// trajectory spans roots.
	Parent context.Context
	// Now is the clock; nil uses time.Now. Tests set it.
	Now func() time.Time
}

// Tracer receives agentloop events (its Trace method is an
// agentloop.TraceFunc) and records them as spans. It is safe for
// concurrent use: agentloop calls Trace from every trajectory's goroutine.
type Tracer struct {
	tracer trace.Tracer
	parent context.Context
	now    func() time.Time

	mu   sync.Mutex
	open map[string]*trajSpan
}

// trajSpan is one trajectory's open span and what it has counted so far.
type trajSpan struct {
	ctx                      context.Context
	span                     trace.Span
	turns                    int
	inTokens                 int
	outTokens, obsTokens     int
	toolCalls, toolErrors    int
	parseErrors, preemptions int
	// managed: a Manager started the rollout (EventStarted), so the span
	// ends at its EventFinished, after the reward, not at EventDone.
	managed bool
}

// opens reports whether an event of a trajectory with no open span opens
// one: the loop's steps and the Manager's start do. The others either
// come before the start (queued) or may come after the end (a tool
// instance released late by an abandoned call) and are dropped then.
func opens(k agentloop.EventKind) bool {
	switch k {
	case agentloop.EventStarted, agentloop.EventPrompt, agentloop.EventGenerate, agentloop.EventParse,
		agentloop.EventTool, agentloop.EventInteraction, agentloop.EventObservation, agentloop.EventDone:
		return true
	}
	return false
}

// New returns a Tracer that makes spans with t.
func New(t trace.Tracer, opts Options) *Tracer {
	tr := &Tracer{tracer: t, parent: opts.Parent, now: opts.Now, open: map[string]*trajSpan{}}
	if tr.parent == nil {
		tr.parent = context.Background()
	}
	if tr.now == nil {
		tr.now = time.Now
	}
	return tr
}

// Trace records one event; pass it as agentloop.Env.Trace.
func (t *Tracer) Trace(ev agentloop.Event) {
	now := t.now()
	start := now.Add(-ev.Latency)
	t.mu.Lock()
	defer t.mu.Unlock()
	ts := t.open[ev.TrajectoryID]
	if ts == nil {
		if !opens(ev.Kind) {
			return
		}
		// The Manager's start is the span's start (its Latency is the time
		// queued, before it); a loop's first step (the prompt's encoding)
		// started Latency before it was reported.
		spanStart, at := start, []attribute.KeyValue{KeyTrajectoryID.String(ev.TrajectoryID)}
		if ev.Kind == agentloop.EventStarted {
			spanStart = now
			at = append(at, KeyAgent.String(ev.Agent), KeyQueueSeconds.Float64(ev.Latency.Seconds()))
		}
		ctx, span := t.tracer.Start(t.parent, SpanTrajectory, trace.WithTimestamp(spanStart), trace.WithAttributes(at...))
		ts = &trajSpan{ctx: ctx, span: span}
		t.open[ev.TrajectoryID] = ts
	}
	if ev.Turn > ts.turns {
		ts.turns = ev.Turn
	}
	switch ev.Kind {
	case agentloop.EventStarted:
		ts.managed = true
	case agentloop.EventPrompt:
		ts.inTokens += ev.Tokens
		t.child(ts, SpanPrompt, start, now, ev.Err, KeyInputTokens.Int(ev.Tokens))
	case agentloop.EventGenerate:
		ts.outTokens += ev.Tokens
		ts.preemptions += ev.Preempted
		t.child(ts, SpanGenerate, start, now, ev.Err,
			KeyTurn.Int(ev.Turn), KeyOperation.String("text_completion"), KeyOutputTokens.Int(ev.Tokens),
			KeyInputTokens.Int(ev.PromptTokens), KeyCachedTokens.Int(ev.CachedTokens),
			KeyEngineStop.String(string(ev.EngineStop)), KeyPreempted.Int(ev.Preempted))
	case agentloop.EventTool:
		ts.toolCalls++
		if ev.Err != nil {
			ts.toolErrors++
		}
		at := []attribute.KeyValue{KeyTurn.Int(ev.Turn), KeyOperation.String("execute_tool"), KeyToolName.String(ev.Tool),
			KeyToolOutcome.String(tool.ErrorKind(ev.Err)), KeyToolTruncated.Bool(ev.Truncated)}
		if len(ev.Metrics) > 0 {
			keys := make([]string, 0, len(ev.Metrics))
			for k := range ev.Metrics {
				keys = append(keys, k)
			}
			sort.Strings(keys) // a stable attribute order
			for _, k := range keys {
				at = append(at, attribute.Float64(KeyToolMetricPrefix+k, ev.Metrics[k]))
			}
		}
		t.child(ts, SpanTool, start, now, ev.Err, at...)
	case agentloop.EventInteraction:
		t.child(ts, SpanInteraction, start, now, ev.Err, KeyTurn.Int(ev.Turn), KeyReward.Float64(ev.Reward))
	case agentloop.EventParse:
		ts.parseErrors += ev.ParseErrors
		ts.span.AddEvent("parse", trace.WithTimestamp(now), trace.WithAttributes(
			KeyTurn.Int(ev.Turn), KeyCalls.Int(ev.Calls), KeyParseErrors.Int(ev.ParseErrors)))
	case agentloop.EventObservation:
		ts.obsTokens += ev.Tokens
		ts.span.AddEvent("observation", trace.WithTimestamp(now), trace.WithAttributes(
			KeyTurn.Int(ev.Turn), KeyTokens.Int(ev.Tokens)))
	case agentloop.EventDone:
		if ts.managed {
			// The Manager still scores it; EventFinished ends the span.
			ts.span.AddEvent("done", trace.WithTimestamp(now), trace.WithAttributes(KeyStopReason.String(string(ev.Stop))))
			return
		}
		t.end(ts, now, string(ev.Stop), ev.Err)
		delete(t.open, ev.TrajectoryID)
	case agentloop.EventReward:
		t.child(ts, SpanReward, start, now, ev.Err, KeyReward.Float64(ev.Reward))
	case agentloop.EventFinished:
		t.end(ts, now, string(ev.Stop), ev.Err)
		delete(t.open, ev.TrajectoryID)
	case agentloop.EventSessionOpen:
		ts.span.AddEvent("tool_session_open", trace.WithTimestamp(now))
	case agentloop.EventSessionClose:
		at := []attribute.KeyValue{KeyLifetimeSeconds.Float64(ev.Latency.Seconds())}
		if ev.Err != nil {
			at = append(at, KeyError.String(ev.Err.Error()))
		}
		ts.span.AddEvent("tool_session_close", trace.WithTimestamp(now), trace.WithAttributes(at...))
	case agentloop.EventToolCreate:
		t.child(ts, SpanToolCreate, start, now, ev.Err, KeyToolName.String(ev.Tool), KeyToolOutcome.String(tool.ErrorKind(ev.Err)))
	case agentloop.EventToolRelease:
		t.child(ts, SpanToolInstance, start, now, ev.Err, KeyToolName.String(ev.Tool))
	}
}

func (t *Tracer) child(ts *trajSpan, name string, start, end time.Time, err error, attrs ...attribute.KeyValue) {
	_, span := t.tracer.Start(ts.ctx, name, trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	if err != nil {
		span.RecordError(err, trace.WithTimestamp(end))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

func (t *Tracer) end(ts *trajSpan, now time.Time, stop string, err error) {
	ts.span.SetAttributes(
		KeyStopReason.String(stop), KeyTurns.Int(ts.turns), KeyInputTokens.Int(ts.inTokens), KeyOutputTokens.Int(ts.outTokens),
		KeyObservationTokens.Int(ts.obsTokens), KeyCalls.Int(ts.toolCalls), KeyToolErrors.Int(ts.toolErrors),
		KeyParseErrors.Int(ts.parseErrors), KeyPreempted.Int(ts.preemptions))
	if err != nil {
		ts.span.RecordError(err, trace.WithTimestamp(now))
		ts.span.SetStatus(codes.Error, err.Error())
	}
	ts.span.End(trace.WithTimestamp(now))
}

// Open is the number of trajectories whose span is still open.
func (t *Tracer) Open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.open)
}

// Close ends the spans of trajectories that never reported done (a
// cancelled run), marking them unfinished with an error status.
func (t *Tracer) Close() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for id, ts := range t.open {
		ts.span.SetStatus(codes.Error, "trajectory did not finish")
		t.end(ts, now, "unfinished", nil)
		delete(t.open, id)
	}
}
