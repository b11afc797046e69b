package agentprom_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/agentloop/agentprom"
	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/tool/python"
	"github.com/agentrl/agentrl/trajectory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// scrape fetches url and parses the text exposition format.
func scrape(url string) (map[string]*dto.MetricFamily, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// value sums the family's samples whose labels include want.
func value(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// A real rollout (the tiny arithmetic model through ToolAgent on the
// in-process engine) while /metrics is scraped: the scraped counts match
// the trajectories the Manager returned.
func TestScrapeDuringRollout(t *testing.T) {
	c := agentprom.New(agentprom.Options{ConstLabels: prometheus.Labels{"run": "test"}})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	ts := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}))
	defer ts.Close()

	tok, eng, err := arith.LoadCheckpoint(filepath.Join("..", "..", "internal", "arith", "checkpoint"), 1)
	require.NoError(t, err)
	defer eng.Close()
	tools, err := arith.Tools()
	require.NoError(t, err)
	reg2 := agentloop.NewRegistry()
	require.NoError(t, reg2.SetConfig(agentloop.ToolAgentName, arith.AgentConfig()))
	m, err := agentloop.NewManager(reg2, &agentloop.Env{Server: eng, Tokenizer: tok, Tools: tools, Trace: c.Trace}, agentloop.Options{
		DefaultAgent: agentloop.ToolAgentName, N: 2, Concurrency: 4,
		Sampling: arith.Sampling(tok, 1), Reward: agentloop.GSM8KReward(true),
	})
	require.NoError(t, err)
	tasks, err := arith.Generate(arith.DemoSeed, 8, arith.HeldOut)
	require.NoError(t, err)
	samples := make([]agentloop.Sample, len(tasks))
	for i, task := range tasks {
		samples[i] = task.Sample(i)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var g errgroup.Group
	scrapes := 0
	g.Go(func() error {
		for {
			fams, err := scrape(ts.URL)
			if err != nil {
				return err
			}
			scrapes++
			// Mid-rollout, counts only grow towards the totals, and no more
			// rollouts run than Options.Concurrency allows.
			if n := value(fams, "agentrl_agentloop_trajectories_total", nil); n > float64(2*len(tasks)) {
				return fmt.Errorf("scraped %v trajectories mid-rollout, more than %d", n, 2*len(tasks))
			}
			if n := value(fams, "agentrl_agentloop_trajectories_in_flight", map[string]string{"agent": agentloop.ToolAgentName}); n < 0 || n > 4 {
				return fmt.Errorf("scraped %v trajectories in flight, concurrency is 4", n)
			}
			if n := value(fams, "agentrl_agentloop_trajectories_queued", nil); n < 0 || n > float64(2*len(tasks)) {
				return fmt.Errorf("scraped %v trajectories queued of %d", n, 2*len(tasks))
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * time.Millisecond):
			}
		}
	})
	out, err := m.Generate(context.Background(), samples)
	cancel()
	require.NoError(t, g.Wait())
	require.NoError(t, err)
	require.Positive(t, scrapes)

	fams, err := scrape(ts.URL)
	require.NoError(t, err)
	byStop := map[trajectory.StopReason]int{}
	calls, toolErrs, policy, turns, prompt, sent := 0, 0, 0, 0, 0, 0
	for _, tr := range out.Trajectories {
		// Each model turn's prompt is the conversation before it: the
		// prompt and the response up to where its mask-1 run starts.
		require.Zero(t, tr.NumPreempted, "no resumed generation resends tokens")
		for i, m := range tr.ResponseMask {
			if m == 1 && (i == 0 || tr.ResponseMask[i-1] == 0) {
				sent += len(tr.PromptIDs) + i
			}
		}
		byStop[tr.StopReason]++
		calls += tr.ToolCalls
		toolErrs += tr.ToolErrors
		policy += tr.MaskOnes()
		prompt += len(tr.PromptIDs)
		turns++
	}
	require.Len(t, out.Trajectories, 2*len(tasks))
	require.Equal(t, float64(len(out.Trajectories)), value(fams, "agentrl_agentloop_trajectories_total", nil))
	for stop, n := range byStop {
		require.Equal(t, float64(n), value(fams, "agentrl_agentloop_trajectories_total", map[string]string{"stop_reason": string(stop)}), stop)
	}
	require.Equal(t, float64(turns), value(fams, "agentrl_agentloop_turns", nil), "one turns observation per trajectory")
	require.Positive(t, calls)
	// Trajectory.ToolCalls counts every call the model made; the calls run
	// are those minus unparsable ones and ones over the per-turn limit,
	// all of which count as errors.
	run := value(fams, "agentrl_agentloop_tool_calls_total", nil)
	runErrs := run - value(fams, "agentrl_agentloop_tool_calls_total", map[string]string{"outcome": "ok"})
	require.Equal(t, float64(calls), value(fams, "agentrl_agentloop_tool_calls_attempted_total", nil))
	require.Positive(t, run)
	require.Equal(t, float64(calls)-run, float64(toolErrs)-runErrs, "calls not run are errors")
	require.LessOrEqual(t, value(fams, "agentrl_agentloop_parse_errors_total", nil), float64(calls)-run)
	require.Equal(t, run, value(fams, "agentrl_agentloop_tool_call_seconds", map[string]string{"tool": "calculator"}))
	require.Equal(t, float64(policy), value(fams, "agentrl_agentloop_generated_tokens_total", nil))
	require.Equal(t, value(fams, "agentrl_agentloop_generate_calls_total", nil), value(fams, "agentrl_agentloop_generate_seconds", nil))
	require.Equal(t, float64(len(out.Trajectories)), value(fams, "agentrl_agentloop_trajectories_total", map[string]string{"run": "test"}))

	// The prompt tokens sent to the engine, and the share it served from
	// its prefix cache (the in-process engine caches every turn's prefix
	// for the next).
	require.Equal(t, float64(sent), value(fams, "agentrl_agentloop_generate_prompt_tokens_total", nil))
	cached := value(fams, "agentrl_agentloop_generate_cached_tokens_total", nil)
	require.Positive(t, cached)
	require.InDelta(t, cached/float64(sent), value(fams, "agentrl_agentloop_prefix_cache_hit_ratio", nil), 1e-12)

	// Prompt encoding: one per trajectory, its tokens the prompts'.
	n := float64(len(out.Trajectories))
	require.Equal(t, n, value(fams, "agentrl_agentloop_prompt_encode_seconds", nil))
	require.Equal(t, float64(prompt), value(fams, "agentrl_agentloop_prompt_tokens_total", nil))
	// The Manager's rollouts: all started and finished, each scored.
	require.Zero(t, value(fams, "agentrl_agentloop_trajectories_queued", nil))
	require.Zero(t, value(fams, "agentrl_agentloop_trajectories_in_flight", nil))
	require.Equal(t, n, value(fams, "agentrl_agentloop_trajectory_queue_seconds", nil))
	require.Equal(t, n, value(fams, "agentrl_agentloop_trajectory_seconds", map[string]string{"agent": agentloop.ToolAgentName}))
	require.Equal(t, n, value(fams, "agentrl_agentloop_reward_calls_total", map[string]string{"outcome": "ok"}))
	require.Equal(t, n, value(fams, "agentrl_agentloop_reward_seconds", nil))
	// Tool sessions: one per trajectory, all closed; every instance made
	// was released.
	require.Equal(t, n, value(fams, "agentrl_agentloop_tool_sessions_opened_total", nil))
	require.Equal(t, n, value(fams, "agentrl_agentloop_tool_sessions_closed_total", map[string]string{"outcome": "ok"}))
	require.Equal(t, n, value(fams, "agentrl_agentloop_tool_session_seconds", nil))
	require.Zero(t, value(fams, "agentrl_agentloop_tool_sessions_active", nil))
	created := value(fams, "agentrl_agentloop_tool_instances_created_total", map[string]string{"tool": "calculator", "outcome": "ok"})
	require.Positive(t, created)
	require.LessOrEqual(t, created, n, "at most one calculator instance per trajectory")
	require.Equal(t, created, value(fams, "agentrl_agentloop_tool_instances_released_total", map[string]string{"tool": "calculator", "outcome": "ok"}))
	require.Equal(t, created, value(fams, "agentrl_agentloop_tool_instance_seconds", map[string]string{"tool": "calculator"}))
	require.Zero(t, value(fams, "agentrl_agentloop_tool_instances_active", nil))
}

// Scripted events: outcomes and labels land where they belong.
func TestEvents(t *testing.T) {
	c := agentprom.New(agentprom.Options{Namespace: "x"})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	c.Trace(agentloop.Event{Kind: agentloop.EventGenerate, TrajectoryID: "a", Tokens: 5, Latency: time.Second, EngineStop: "stop"})
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, TrajectoryID: "a", Tool: "search", Latency: time.Millisecond, Err: io.EOF})
	c.Trace(agentloop.Event{Kind: agentloop.EventParse, TrajectoryID: "b", ParseErrors: 2})
	c.Trace(agentloop.Event{Kind: agentloop.EventObservation, TrajectoryID: "a", Tokens: 7})
	c.Trace(agentloop.Event{Kind: agentloop.EventInteraction, TrajectoryID: "a"})
	c.Trace(agentloop.Event{Kind: agentloop.EventDone, TrajectoryID: "a", Turn: 3, Stop: trajectory.StopMaxTurns})
	// Tool call outcomes by kind; results cut by the loop and by the
	// tool; the python sandbox's limit kills, from its own metrics.
	timeout := python.Outcome{WallTimeout: true, StdoutDropped: 10}.Metrics()
	oom := python.Outcome{MemoryLimit: true}.Metrics()
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, Tool: "python", Metrics: timeout, Truncated: true})
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, Tool: "python", Metrics: oom})
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, Tool: "python", Metrics: python.Outcome{}.Metrics()})
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, Tool: "python", Err: fmt.Errorf("tool %q: %w", "python", tool.ErrTimeout)})
	c.Trace(agentloop.Event{Kind: agentloop.EventTool, Tool: "python", Err: fmt.Errorf("tool %q: %w", "python", tool.ErrInvalidArguments)})
	// The Manager: two rollouts queued, one started; a third finished.
	for _, kind := range []agentloop.EventKind{agentloop.EventQueued, agentloop.EventQueued, agentloop.EventStarted} {
		c.Trace(agentloop.Event{Kind: kind, Agent: "tool_agent"})
	}
	c.Trace(agentloop.Event{Kind: agentloop.EventQueued, Agent: "single_turn_agent"})
	c.Trace(agentloop.Event{Kind: agentloop.EventStarted, Agent: "single_turn_agent"})
	c.Trace(agentloop.Event{Kind: agentloop.EventReward, Err: io.EOF})
	c.Trace(agentloop.Event{Kind: agentloop.EventFinished, Agent: "single_turn_agent", Latency: time.Second})
	c.Trace(agentloop.Event{Kind: agentloop.EventPrompt, Tokens: 40, Latency: 50 * time.Microsecond})
	c.Trace(agentloop.Event{Kind: agentloop.EventPrompt, Err: io.EOF})
	// Sessions: two opened, one closed with a failed release; instances:
	// one made, one failed to be made, one made and released.
	c.Trace(agentloop.Event{Kind: agentloop.EventSessionOpen})
	c.Trace(agentloop.Event{Kind: agentloop.EventSessionOpen})
	c.Trace(agentloop.Event{Kind: agentloop.EventSessionClose, Latency: 3 * time.Second, Err: io.EOF})
	c.Trace(agentloop.Event{Kind: agentloop.EventToolCreate, Tool: "python"})
	c.Trace(agentloop.Event{Kind: agentloop.EventToolCreate, Tool: "python", Err: fmt.Errorf("%w: no sandbox", tool.ErrExecution)})
	c.Trace(agentloop.Event{Kind: agentloop.EventToolCreate, Tool: "search"})
	c.Trace(agentloop.Event{Kind: agentloop.EventToolRelease, Tool: "search", Latency: 2 * time.Second})
	fams, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_calls_total", map[string]string{"tool": "search", "outcome": tool.OutcomeOther}))
	for kind, n := range map[string]float64{tool.OutcomeOK: 3, tool.OutcomeTimeout: 1, tool.OutcomeInvalidArguments: 1} {
		require.Equal(t, n, value(byName, "x_agentloop_tool_calls_total", map[string]string{"tool": "python", "outcome": kind}), kind)
	}
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_results_truncated_total", map[string]string{"tool": "python", "by": agentprom.TruncatedByLoop}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_results_truncated_total", map[string]string{"tool": "python", "by": agentprom.TruncatedByTool}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_limit_kills_total", map[string]string{"tool": "python", "limit": "wall_timeout"}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_limit_kills_total", map[string]string{"tool": "python", "limit": "memory_limit"}))
	require.Equal(t, 2.0, value(byName, "x_agentloop_tool_limit_kills_total", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_trajectories_queued", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_trajectories_in_flight", map[string]string{"agent": "tool_agent"}))
	require.Equal(t, 0.0, value(byName, "x_agentloop_trajectories_in_flight", map[string]string{"agent": "single_turn_agent"}))
	require.Equal(t, 2.0, value(byName, "x_agentloop_trajectory_queue_seconds", nil))
	require.Equal(t, 1.0, byName["x_agentloop_trajectory_seconds"].Metric[0].Histogram.GetSampleSum())
	require.Equal(t, 1.0, value(byName, "x_agentloop_reward_calls_total", map[string]string{"outcome": "error"}))
	require.Equal(t, 2.0, value(byName, "x_agentloop_prompt_encode_seconds", nil))
	require.Equal(t, 40.0, value(byName, "x_agentloop_prompt_tokens_total", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_prompt_encode_errors_total", nil))
	require.Equal(t, 2.0, value(byName, "x_agentloop_tool_sessions_opened_total", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_sessions_active", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_sessions_closed_total", map[string]string{"outcome": "error"}))
	require.Equal(t, 3.0, byName["x_agentloop_tool_session_seconds"].Metric[0].Histogram.GetSampleSum())
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_instances_active", map[string]string{"tool": "python"}))
	require.Equal(t, 0.0, value(byName, "x_agentloop_tool_instances_active", map[string]string{"tool": "search"}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_instances_created_total", map[string]string{"tool": "python", "outcome": tool.OutcomeExecution}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_tool_instances_released_total", map[string]string{"tool": "search", "outcome": "ok"}))
	require.Equal(t, 2.0, byName["x_agentloop_tool_instance_seconds"].Metric[0].Histogram.GetSampleSum())
	require.Equal(t, 5.0, value(byName, "x_agentloop_generated_tokens_total", nil))
	require.Equal(t, 7.0, value(byName, "x_agentloop_observation_tokens_total", nil))
	require.Equal(t, 2.0, value(byName, "x_agentloop_parse_errors_total", nil))
	require.Equal(t, 1.0, value(byName, "x_agentloop_interaction_replies_total", map[string]string{"outcome": "ok"}))
	require.Equal(t, 1.0, value(byName, "x_agentloop_trajectories_total", map[string]string{"stop_reason": "max_turns"}))
	h := byName["x_agentloop_turns"].Metric[0].Histogram
	require.Equal(t, 3.0, h.GetSampleSum())
	require.True(t, strings.HasPrefix(byName["x_agentloop_generate_seconds"].GetHelp(), "Engine generate"))
}
