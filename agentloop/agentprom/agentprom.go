package agentprom

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/tool"
)

// Options configure a Collector.
type Options struct {
	// Namespace prefixes every metric name; "" means "agentrl".
	Namespace string
	// ConstLabels are added to every metric (a run or worker name, say).
	ConstLabels prometheus.Labels
	// LatencyBuckets are the histogram buckets, in seconds, of generate,
	// tool, reward, queue, trajectory and tool-session times; nil means
	// exponential buckets from 1 ms to about 65 s.
	LatencyBuckets []float64
}

// Collector is a prometheus.Collector of agent-loop metrics fed by trace
// events. It is safe for concurrent use.
type Collector struct {
	// Loop steps.
	trajectories    *prometheus.CounterVec
	turns           prometheus.Histogram
	promptLatency   prometheus.Histogram
	promptTokens    prometheus.Counter
	promptErrors    prometheus.Counter
	toolCalls       *prometheus.CounterVec
	attempted       prometheus.Counter
	toolLatency     *prometheus.HistogramVec
	truncated       *prometheus.CounterVec
	limitKills      *prometheus.CounterVec
	generateLatency prometheus.Histogram
	generateCalls   *prometheus.CounterVec
	generated       prometheus.Counter
	// The prompt tokens sent to the engine and those it served from its
	// prefix cache: kept as plain totals so that the hit ratio is read
	// from the same numbers as the counters.
	sentTokens, cachedTokens atomic.Int64
	sent, cached, hitRatio   prometheus.Collector
	observed                 prometheus.Counter
	parseErrors              prometheus.Counter
	preempted                prometheus.Counter
	interactions             *prometheus.CounterVec

	// The Manager's rollouts.
	queued         prometheus.Gauge
	inFlight       *prometheus.GaugeVec
	queueLatency   prometheus.Histogram
	trajLatency    *prometheus.HistogramVec
	rewardLatency  prometheus.Histogram
	rewardOutcomes *prometheus.CounterVec

	// Tool sessions and instances.
	sessionsOpened   prometheus.Counter
	sessionsClosed   *prometheus.CounterVec
	sessionsActive   prometheus.Gauge
	sessionLifetime  prometheus.Histogram
	instCreated      *prometheus.CounterVec
	instReleased     *prometheus.CounterVec
	instActive       *prometheus.GaugeVec
	instLifetime     *prometheus.HistogramVec
	instCreateTiming *prometheus.HistogramVec
}

// Outcome label values of generate calls, interactions, rewards and tool
// sessions. Tool calls and tool instances are labelled with
// tool.ErrorKind's finer names (tool.OutcomeOK, tool.OutcomeTimeout,
// tool.OutcomeInvalidArguments, ...).
const (
	OutcomeOK    = "ok"
	OutcomeError = "error"
)

// Values of the "by" label of tool_results_truncated_total.
const (
	// TruncatedByLoop: the agent loop cut the result to
	// max_tool_response_length (agentloop.Event.Truncated).
	TruncatedByLoop = "agentloop"
	// TruncatedByTool: the tool cut its own output and said so with a
	// metric output_truncated of 1 (the python sandbox's output cap).
	TruncatedByTool = "tool"
)

// LimitMetrics are the tool result metrics that report a sandbox limit
// kill (1 when the run was killed for it), counted by
// tool_limit_kills_total{limit}: tool/python's Outcome.Metrics reports all
// three, tool/sandboxfusion's ObservationMetrics wall_timeout.
var LimitMetrics = []string{"wall_timeout", "cpu_limit", "memory_limit"}

// New returns a Collector; register it on a registry.
func New(opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "agentrl"
	}
	buckets := opts.LatencyBuckets
	if buckets == nil {
		buckets = prometheus.ExponentialBuckets(0.001, 2, 17)
	}
	o := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: ns, Subsystem: "agentloop", Name: name, Help: help, ConstLabels: opts.ConstLabels}
	}
	h := func(name, help string, b []float64) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Namespace: ns, Subsystem: "agentloop", Name: name, Help: help, ConstLabels: opts.ConstLabels, Buckets: b}
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts(o(name, help)))
	}
	counters := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts(o(name, help)), labels)
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts(o(name, help)))
	}
	c := &Collector{
		trajectories: counters("trajectories_total", "Trajectories finished, by stop reason.", "stop_reason"),
		turns:        prometheus.NewHistogram(h("turns", "Assistant turns per finished trajectory.", prometheus.LinearBuckets(1, 1, 16))),
		// Rendering and tokenizing a prompt takes microseconds to
		// milliseconds, far below the latency buckets.
		promptLatency: prometheus.NewHistogram(h("prompt_encode_seconds", "Time to render the prompt with the chat template and tokenize it.",
			prometheus.ExponentialBuckets(1e-5, 4, 10))),
		promptTokens: counter("prompt_tokens_total", "Prompt tokens encoded (tool schemas included)."),
		promptErrors: counter("prompt_encode_errors_total", "Prompts that could not be rendered or tokenized."),
		toolCalls: counters("tool_calls_total", "Tool calls run, by tool and outcome (ok, unknown_tool, invalid_arguments, timeout, panic, rate_limited, execution_error, canceled, session_closed).",
			"tool", "outcome"),
		attempted:   counter("tool_calls_attempted_total", "Tool calls the model made: run, not run over the per-turn limit, or unparsable (Trajectory.ToolCalls)."),
		toolLatency: prometheus.NewHistogramVec(h("tool_call_seconds", "Tool call latency, by tool.", buckets), []string{"tool"}),
		truncated: counters("tool_results_truncated_total", "Tool results cut short, by tool and by whom: the loop (max_tool_response_length) or the tool itself.",
			"tool", "by"),
		limitKills: counters("tool_limit_kills_total", "Tool runs a sandbox killed, by tool and limit (wall_timeout, cpu_limit, memory_limit).",
			"tool", "limit"),
		generateLatency: prometheus.NewHistogram(h("generate_seconds", "Engine generate call latency (one assistant turn).", buckets)),
		generateCalls:   counters("generate_calls_total", "Engine generate calls, by outcome and engine stop reason.", "outcome", "engine_stop"),
		generated:       counter("generated_tokens_total", "Tokens the policy sampled (response_mask 1)."),
		observed:        counter("observation_tokens_total", "Observation and glue tokens appended (response_mask 0)."),
		parseErrors:     counter("parse_errors_total", "Tool calls the parser could not read (fed back to the model)."),
		preempted:       counter("preemptions_total", "Generations resumed after an engine abort (partial rollout)."),
		interactions:    counters("interaction_replies_total", "Interaction (user simulator) replies, by outcome.", "outcome"),

		queued:         gauge("trajectories_queued", "Rollouts the Manager took in that wait for a concurrency slot."),
		inFlight:       prometheus.NewGaugeVec(prometheus.GaugeOpts(o("trajectories_in_flight", "Rollouts running now, by agent name.")), []string{"agent"}),
		queueLatency:   prometheus.NewHistogram(h("trajectory_queue_seconds", "Time a rollout waited for a concurrency slot.", buckets)),
		trajLatency:    prometheus.NewHistogramVec(h("trajectory_seconds", "Rollout time from its start to its end, reward included, by agent name.", buckets), []string{"agent"}),
		rewardLatency:  prometheus.NewHistogram(h("reward_seconds", "Reward function latency.", buckets)),
		rewardOutcomes: counters("reward_calls_total", "Reward function calls, by outcome.", "outcome"),

		sessionsOpened:   counter("tool_sessions_opened_total", "Tool sessions opened (one per trajectory with tools)."),
		sessionsClosed:   counters("tool_sessions_closed_total", "Tool sessions closed, by outcome (error: an instance's release failed).", "outcome"),
		sessionsActive:   gauge("tool_sessions_active", "Tool sessions open now."),
		sessionLifetime:  prometheus.NewHistogram(h("tool_session_seconds", "Tool session lifetime, from open to its instances released.", buckets)),
		instCreated:      counters("tool_instances_created_total", "Tool instance creations (Create), by tool and outcome (ok, execution_error, timeout, canceled, panic).", "tool", "outcome"),
		instReleased:     counters("tool_instances_released_total", "Tool instance releases (Release), by tool and outcome (ok, error).", "tool", "outcome"),
		instActive:       prometheus.NewGaugeVec(prometheus.GaugeOpts(o("tool_instances_active", "Tool instances alive now, by tool.")), []string{"tool"}),
		instLifetime:     prometheus.NewHistogramVec(h("tool_instance_seconds", "Tool instance lifetime, from Create to Release, by tool.", buckets), []string{"tool"}),
		instCreateTiming: prometheus.NewHistogramVec(h("tool_instance_create_seconds", "Tool instance Create latency, by tool.", buckets), []string{"tool"}),
	}
	c.sent = prometheus.NewCounterFunc(prometheus.CounterOpts(o("generate_prompt_tokens_total",
		"Prompt tokens sent to the engine by generate calls (a turn's prompt is the whole conversation so far).")),
		func() float64 { return float64(c.sentTokens.Load()) })
	c.cached = prometheus.NewCounterFunc(prometheus.CounterOpts(o("generate_cached_tokens_total",
		"Prompt tokens the engine served from its prefix cache, as it reported them (SGLang cached_tokens, vLLM num_cached_tokens).")),
		func() float64 { return float64(c.cachedTokens.Load()) })
	c.hitRatio = prometheus.NewGaugeFunc(prometheus.GaugeOpts(o("prefix_cache_hit_ratio",
		"Share of the prompt tokens sent that the engines served from their prefix caches, since start (0..1).")),
		func() float64 {
			// Trace adds to sent before cached: loading cached first keeps
			// every cached token read counted in the sent read (ratio <= 1).
			cached := c.cachedTokens.Load()
			sent := c.sentTokens.Load()
			if sent == 0 {
				return 0
			}
			return float64(cached) / float64(sent)
		})
	return c
}

func (c *Collector) collectors() []prometheus.Collector {
	return []prometheus.Collector{c.trajectories, c.turns, c.promptLatency, c.promptTokens, c.promptErrors,
		c.toolCalls, c.attempted, c.toolLatency, c.truncated, c.limitKills,
		c.generateLatency, c.generateCalls, c.generated, c.sent, c.cached, c.hitRatio, c.observed, c.parseErrors, c.preempted, c.interactions,
		c.queued, c.inFlight, c.queueLatency, c.trajLatency, c.rewardLatency, c.rewardOutcomes,
		c.sessionsOpened, c.sessionsClosed, c.sessionsActive, c.sessionLifetime,
		c.instCreated, c.instReleased, c.instActive, c.instLifetime, c.instCreateTiming}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.collectors() {
		m.Describe(ch)
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, m := range c.collectors() {
		m.Collect(ch)
	}
}

func outcome(err error) string {
	if err != nil {
		return OutcomeError
	}
	return OutcomeOK
}

// Trace records one event; pass it as agentloop.Env.Trace.
func (c *Collector) Trace(ev agentloop.Event) {
	switch ev.Kind {
	case agentloop.EventPrompt:
		c.promptLatency.Observe(ev.Latency.Seconds())
		c.promptTokens.Add(float64(ev.Tokens))
		if ev.Err != nil {
			c.promptErrors.Inc()
		}
	case agentloop.EventGenerate:
		c.generateLatency.Observe(ev.Latency.Seconds())
		c.generateCalls.WithLabelValues(outcome(ev.Err), string(ev.EngineStop)).Inc()
		c.generated.Add(float64(ev.Tokens))
		c.preempted.Add(float64(ev.Preempted))
		c.sentTokens.Add(int64(ev.PromptTokens))
		c.cachedTokens.Add(int64(ev.CachedTokens))
	case agentloop.EventTool:
		c.toolCalls.WithLabelValues(ev.Tool, tool.ErrorKind(ev.Err)).Inc()
		c.toolLatency.WithLabelValues(ev.Tool).Observe(ev.Latency.Seconds())
		if ev.Truncated {
			c.truncated.WithLabelValues(ev.Tool, TruncatedByLoop).Inc()
		}
		if ev.Metrics != nil {
			c.toolMetrics(ev.Tool, ev.Metrics)
		}
	case agentloop.EventParse:
		c.parseErrors.Add(float64(ev.ParseErrors))
		c.attempted.Add(float64(ev.Calls + ev.ParseErrors))
	case agentloop.EventObservation:
		c.observed.Add(float64(ev.Tokens))
	case agentloop.EventInteraction:
		c.interactions.WithLabelValues(outcome(ev.Err)).Inc()
	case agentloop.EventDone:
		c.trajectories.WithLabelValues(string(ev.Stop)).Inc()
		c.turns.Observe(float64(ev.Turn))

	case agentloop.EventQueued:
		c.queued.Inc()
	case agentloop.EventStarted:
		c.queued.Dec()
		c.inFlight.WithLabelValues(ev.Agent).Inc()
		c.queueLatency.Observe(ev.Latency.Seconds())
	case agentloop.EventReward:
		c.rewardLatency.Observe(ev.Latency.Seconds())
		c.rewardOutcomes.WithLabelValues(outcome(ev.Err)).Inc()
	case agentloop.EventFinished:
		c.inFlight.WithLabelValues(ev.Agent).Dec()
		c.trajLatency.WithLabelValues(ev.Agent).Observe(ev.Latency.Seconds())

	case agentloop.EventSessionOpen:
		c.sessionsOpened.Inc()
		c.sessionsActive.Inc()
	case agentloop.EventSessionClose:
		c.sessionsActive.Dec()
		c.sessionsClosed.WithLabelValues(outcome(ev.Err)).Inc()
		c.sessionLifetime.Observe(ev.Latency.Seconds())
	case agentloop.EventToolCreate:
		c.instCreated.WithLabelValues(ev.Tool, tool.ErrorKind(ev.Err)).Inc()
		c.instCreateTiming.WithLabelValues(ev.Tool).Observe(ev.Latency.Seconds())
		if ev.Err == nil {
			c.instActive.WithLabelValues(ev.Tool).Inc()
		}
	case agentloop.EventToolRelease:
		c.instReleased.WithLabelValues(ev.Tool, outcome(ev.Err)).Inc()
		c.instActive.WithLabelValues(ev.Tool).Dec()
		c.instLifetime.WithLabelValues(ev.Tool).Observe(ev.Latency.Seconds())
	}
}

// toolMetrics counts what a tool reported about its own run: limit kills
// and output it cut itself.
func (c *Collector) toolMetrics(name string, m map[string]float64) {
	for _, k := range LimitMetrics {
		if m[k] == 1 {
			c.limitKills.WithLabelValues(name, k).Inc()
		}
	}
	if m["output_truncated"] == 1 {
		c.truncated.WithLabelValues(name, TruncatedByTool).Inc()
	}
}
