package agentloop

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// TestNewManagerChecksUpFront is issue 35's "checked up front": settings
// that would fail every sample of a batch are NewManager's (or the
// registry's) error, naming the setting, before anything runs.
func TestNewManagerChecksUpFront(t *testing.T) {
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(1)}), Tokenizer: tok}

	t.Run("nil env", func(t *testing.T) {
		_, err := NewManager(nil, nil, Options{RewardFromLoop: true})
		require.ErrorContains(t, err, "Env is nil")
		_, err = NewManager(nil, &Env{Tokenizer: tok}, Options{RewardFromLoop: true})
		require.ErrorContains(t, err, "Env.Server")
	})
	t.Run("unknown format", func(t *testing.T) {
		reg := NewRegistry()
		err := reg.SetConfig(ToolAgentName, Config{Format: "nope"})
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorIs(t, err, parser.ErrUnknownFormat)
		require.ErrorContains(t, err, `"nope"`)
		require.ErrorIs(t, reg.Register("mine", NewToolAgent, Config{Format: "nope"}), parser.ErrUnknownFormat)
		// An alias is a known format.
		require.NoError(t, reg.Register("qwen_agent", NewToolAgent, Config{Format: "qwen25"}))
	})
	t.Run("default loop built", func(t *testing.T) {
		reg := NewRegistry()
		boom := errors.New("the factory failed")
		require.NoError(t, reg.Register("broken", func(*Env, Config) (AgentLoop, error) { return nil, boom }, Config{}))
		_, err := NewManager(reg, env, Options{RewardFromLoop: true, DefaultAgent: "broken"})
		require.ErrorIs(t, err, boom)
		require.ErrorContains(t, err, "default agent")
		_, err = NewManager(reg, env, Options{RewardFromLoop: true, DefaultAgent: "absent"})
		require.ErrorIs(t, err, ErrUnknownAgent)
	})
	t.Run("sampling", func(t *testing.T) {
		for _, c := range []struct {
			opts Options
			want string
		}{
			{Options{RewardFromLoop: true, Sampling: server.SamplingParams{TopP: 2}}, "Options.Sampling: bad request: top_p 2"},
			{Options{RewardFromLoop: true, Sampling: server.SamplingParams{Temperature: -1}}, "Options.Sampling: bad request: temperature -1"},
			{Options{RewardFromLoop: true, Sampling: server.SamplingParams{MaxNewTokens: -5}}, "Options.Sampling: bad request: max_new_tokens -5"},
			{Options{RewardFromLoop: true, Validation: ValidationOptions{Sampling: server.SamplingParams{MinP: 3}}}, "Options.Validation.Sampling: bad request: min_p 3"},
		} {
			_, err := NewManager(nil, env, c.opts)
			require.ErrorIs(t, err, ErrConfig)
			require.ErrorIs(t, err, server.ErrBadRequest)
			require.True(t, strings.Contains(err.Error(), c.want), "%v: want %q", err, c.want)
		}
	})
}

// TestManagerBoundsN is issue 35's Options{N: 1<<40}: a count no batch
// could hold is an error from NewManager, and a batch over
// MaxBatchRollouts an error from Generate, before anything runs.
func TestManagerBoundsN(t *testing.T) {
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}), Tokenizer: tok}
	for _, opts := range []Options{{RewardFromLoop: true, N: 1 << 40}, {RewardFromLoop: true, N: MaxN + 1}, {RewardFromLoop: true, Validation: ValidationOptions{N: 1 << 40}}} {
		_, err := NewManager(nil, env, opts)
		require.ErrorIs(t, err, ErrConfig)
		require.ErrorContains(t, err, "MaxN")
	}
	var started atomic.Int64
	env.Trace = func(e Event) {
		if e.Kind == EventStarted {
			started.Add(1)
		}
	}
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, N: MaxN})
	require.NoError(t, err)
	_, err = m.Generate(context.Background(), prompts(make([]string, MaxBatchRollouts/MaxN+1)...))
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "MaxBatchRollouts")
	require.Zero(t, started.Load(), "a rollout of a batch too large ran")
}

// TestGenerateCancelledRunsNothing: a batch on a context that is already
// done returns the context's error and runs nothing, however large (here
// MaxBatchRollouts rollouts: were they named or run one by one, the test
// would not end). goleak (TestMain) checks that no goroutine is left.
func TestGenerateCancelledRunsNothing(t *testing.T) {
	tok := qwen3(t)
	var started atomic.Int64
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}), Tokenizer: tok,
		Trace: func(e Event) {
			if e.Kind == EventStarted {
				started.Add(1)
			}
		}}
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, N: MaxN})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out, err := m.Generate(ctx, prompts(make([]string, MaxBatchRollouts/MaxN)...))
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, out)
	require.Zero(t, started.Load())

	// Stream on a done context reads nothing, even with samples ready.
	in := make(chan Sample, 4)
	for _, s := range prompts("a", "b", "c", "d") {
		in <- s
	}
	for range m.Stream(ctx, in) {
		t.Fatal("a sample was read after the context ended")
	}
	require.Len(t, in, 4)
	require.Zero(t, started.Load())
}

// TestManagerDefaultsForTraining is issue 35's forgotten settings: rollouts
// ask for logprobs unless NoLogprobs says not to (so trainer.PolicyLoss does
// not find 0 logprobs later), validation samples as Validation.Sampling
// says, and a Manager with no reward is an error unless RewardFromLoop
// says the loops score (instead of all-zero advantages).
func TestManagerDefaultsForTraining(t *testing.T) {
	tok := qwen3(t)
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)})}
	env := &Env{Server: rec, Tokenizer: tok}

	_, err := NewManager(nil, env, Options{})
	require.ErrorIs(t, err, ErrConfig)
	require.ErrorContains(t, err, "Options.Reward is nil")
	_, err = NewManager(nil, env, Options{RewardFromLoop: true, NoLogprobs: true, Sampling: server.SamplingParams{Logprobs: true}})
	require.ErrorIs(t, err, ErrConfig)

	one := func(context.Context, RewardInput) (float64, error) { return 1, nil }
	m, err := NewManager(nil, env, Options{Reward: one, Sampling: server.SamplingParams{Temperature: 1}})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), prompts("a"))
	require.NoError(t, err)
	require.True(t, rec.reqs[0].Params.Logprobs, "a training rollout was sent without logprobs")
	tr := out.Trajectories[0]
	require.Len(t, tr.Logprobs, len(tr.ResponseIDs))
	require.Equal(t, 1.0, *tr.Reward)

	rec.reqs = nil
	_, err = m.ForValidation().Generate(context.Background(), prompts("a"))
	require.NoError(t, err)
	require.False(t, rec.reqs[0].Params.Logprobs, "validation samples as Validation.Sampling says")

	rec.reqs = nil
	m, err = NewManager(nil, env, Options{RewardFromLoop: true, NoLogprobs: true})
	require.NoError(t, err)
	out, err = m.Generate(context.Background(), prompts("a"))
	require.NoError(t, err)
	require.False(t, rec.reqs[0].Params.Logprobs)
	require.Nil(t, out.Trajectories[0].Logprobs)
	require.Nil(t, out.Trajectories[0].Reward)
}

// TestGenerateRefusesBadPrompts is issue 35's "robot" message (dropped from
// the Qwen3 prompt without a word) and sample with no messages (a jinja
// error about element 0): both are ErrSample errors naming the sample,
// before anything runs; Stream delivers them as the sample's errors.
func TestGenerateRefusesBadPrompts(t *testing.T) {
	tok := qwen3(t)
	var started atomic.Int64
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}), Tokenizer: tok,
		Trace: func(e Event) {
			if e.Kind == EventStarted {
				started.Add(1)
			}
		}}
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, N: 2})
	require.NoError(t, err)

	robot := prompts("a", "b")
	robot[1].ID = "row-7"
	robot[1].Messages = append(robot[1].Messages, chat.Message{Role: "robot", Content: "beep"})
	_, err = m.Generate(context.Background(), robot)
	require.ErrorIs(t, err, ErrSample)
	require.ErrorContains(t, err, `sample 1 (id "row-7"): agentloop: invalid sample: message 1 has role "robot"`)

	empty := prompts("a", "b", "c")
	empty[2].Messages = nil
	_, err = m.Generate(context.Background(), empty)
	require.ErrorIs(t, err, ErrSample)
	require.ErrorContains(t, err, `sample 2 (group "2"): agentloop: invalid sample: no messages`)
	require.Zero(t, started.Load(), "a rollout of a batch with a bad prompt ran")

	in := make(chan Sample, 2)
	good := prompts("a")[0]
	good.ID = "good"
	in <- good
	in <- Sample{ID: "empty", Index: 1}
	close(in)
	got := map[string]Result{}
	for r := range m.Stream(context.Background(), in) {
		got[r.Sample.ID] = r
	}
	require.NoError(t, got["good"].Err())
	bad := got["empty"]
	require.Len(t, bad.Errs, 2)
	for _, err := range bad.Errs {
		require.ErrorIs(t, err, ErrSample)
		require.ErrorContains(t, err, `sample 1 (id "empty")`)
	}
	require.Equal(t, int64(2), started.Load(), "only the good sample's rollouts run")
}

// TestGenerateCollatesFitLongest: FitLongest widths (negative) collate,
// where only a zero PromptLen skips collation.
func TestGenerateCollatesFitLongest(t *testing.T) {
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}), Tokenizer: tok}
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, N: 2,
		Collate: trajectory.CollateOptions{PromptLen: trajectory.FitLongest, ResponseLen: trajectory.FitLongest}})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), prompts("a", "a longer question than the first"))
	require.NoError(t, err)
	require.NotNil(t, out.Batch)
	longest := 0
	for _, tr := range out.Trajectories {
		longest = max(longest, len(tr.PromptIDs))
	}
	require.Equal(t, longest, out.Batch.PromptLen)
	require.Equal(t, len(out.Trajectories[0].ResponseIDs), out.Batch.ResponseLen)
	require.Equal(t, 4, out.Batch.Size)
}
