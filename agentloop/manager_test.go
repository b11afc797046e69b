package agentloop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

func userSamples(n int) []Sample {
	out := make([]Sample, n)
	for i := range out {
		out[i] = Sample{Index: i, Messages: []chat.Message{{Role: chat.RoleUser, Content: fmt.Sprintf("Question %d", i)}}}
	}
	return out
}

func TestManagerGroupsRewardFilterCollate(t *testing.T) {
	tok := qwen3(t)
	answer := turn(t, tok, "The answer is 4.")
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Constant(answer...)})}
	env := &Env{Server: rec, Tokenizer: tok}
	var scored atomic.Int64
	m, err := NewManager(nil, env, Options{
		N:           3,
		Concurrency: 4,
		Sampling:    server.SamplingParams{Temperature: 1, Logprobs: true},
		Reward: func(ctx context.Context, in RewardInput) (float64, error) {
			scored.Add(1)
			if in.Response != "The answer is 4." || in.ModelText != in.Response {
				return 0, fmt.Errorf("unexpected response %q / model text %q", in.Response, in.ModelText)
			}
			if in.Sample.Index%2 == 0 {
				return 1, nil // all equal: the group is dropped
			}
			return float64(in.Sample.Rollout), nil
		},
		KeepGroup: func(g []*trajectory.Trajectory) bool {
			for _, t := range g[1:] {
				if *t.Reward != *g[0].Reward {
					return true
				}
			}
			return false
		},
		Collate: trajectory.CollateOptions{PromptLen: 64, ResponseLen: 16},
	})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), userSamples(5))
	require.NoError(t, err)
	require.EqualValues(t, 15, scored.Load())
	require.Len(t, out.Results, 5)
	for i, r := range out.Results {
		require.Equal(t, i, r.Sample.Index)
		require.Equal(t, i%2 == 0, r.Filtered, "group %d", i)
		require.NoError(t, r.Err())
		for j, tr := range r.Trajectories {
			require.Equal(t, fmt.Sprintf("%d/%d", i, j), tr.ID)
			require.Equal(t, fmt.Sprint(i), tr.GroupID)
			require.Equal(t, trajectory.StopCompleted, tr.StopReason)
			require.Equal(t, answer, tr.ResponseIDs)
		}
	}
	require.Len(t, out.Trajectories, 6)
	require.Equal(t, "1/0", out.Trajectories[0].ID)
	require.Equal(t, "3/2", out.Trajectories[5].ID)
	require.NotNil(t, out.Batch)
	require.Equal(t, 6, out.Batch.Size)
	require.Equal(t, []float32{0, 1, 2, 0, 1, 2}, out.Batch.Rewards)

	mt := out.Metrics
	require.Equal(t, 5, mt.Groups)
	require.Equal(t, 3, mt.FilteredGroups)
	require.Equal(t, 15, mt.Trajectories)
	require.Equal(t, 15, mt.StopReasons[trajectory.StopCompleted])
	require.InDelta(t, 1.0, mt.MaskOnesRatio, 0)
	require.Equal(t, float64(len(answer)), mt.ResponseLength.Mean)
	require.Equal(t, 2.0, mt.Turns.Max)
	require.Equal(t, 0.0, mt.Reward.Min)
	require.Equal(t, 2.0, mt.Reward.Max)
	require.NotEmpty(t, mt.Slowest.ID)
	require.Positive(t, mt.TrajectoriesPerSecond)

	// Every engine call carried the sampling settings and a sticky id.
	for _, q := range rec.reqs {
		require.Equal(t, 1.0, q.Params.Temperature)
		require.NotEmpty(t, q.RequestID)
		require.NotEmpty(t, q.GroupID)
	}

	// Validation sampling: its own settings and n, no filter.
	m2, err := NewManager(nil, env, Options{RewardFromLoop: true, N: 3, Validation: ValidationOptions{Sampling: server.SamplingParams{Temperature: 0.25}, N: 2}})
	require.NoError(t, err)
	rec.reqs, rec.outs = nil, nil
	vout, err := m2.ForValidation().Generate(context.Background(), userSamples(2))
	require.NoError(t, err)
	require.Len(t, vout.Trajectories, 4)
	require.Len(t, rec.reqs, 4)
	for _, q := range rec.reqs {
		require.Equal(t, 0.25, q.Params.Temperature)
	}
}

func TestManagerUnknownAgent(t *testing.T) {
	tok := qwen3(t)
	env := &Env{Server: servertest.New(servertest.Config{}), Tokenizer: tok}
	_, err := NewManager(nil, env, Options{RewardFromLoop: true, DefaultAgent: "nope"})
	require.ErrorIs(t, err, ErrUnknownAgent)
	require.ErrorContains(t, err, "registered: "+strings.Join(NewRegistry().Names(), ", "))

	m, err := NewManager(nil, env, Options{RewardFromLoop: true})
	require.NoError(t, err)
	s := userSamples(1)
	s[0].AgentName = "missing_agent"
	out, err := m.Generate(context.Background(), s)
	require.NoError(t, err)
	require.Nil(t, out.Results[0].Trajectories[0])
	require.ErrorIs(t, out.Results[0].Err(), ErrUnknownAgent)
	require.ErrorContains(t, out.Results[0].Err(), `"missing_agent"`)
	require.Equal(t, 1, out.Metrics.Failed)
}

// TestManagerCancelMidBatch cancels a batch while trajectories wait on the
// engine and on tools: every sample must come back, unfinished ones marked
// aborted, and every tool instance released (goleak checks goroutines in
// TestMain).
func TestManagerCancelMidBatch(t *testing.T) {
	tok := qwen3(t)
	echo := &countingTool{name: "echo"}
	set, err := tool.NewSet(echo)
	require.NoError(t, err)
	call := func(mode string) []int32 {
		return turn(t, tok, `<tool_call>
{"name": "echo", "arguments": {"mode": "`+mode+`", "text": "x"}}
</tool_call>`)
	}
	done := turn(t, tok, "Done.")
	scripts := map[string][][]int32{}
	const n = 40
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("%d/0", i)
		switch i % 4 {
		case 0:
			scripts[id] = [][]int32{done}
		case 1:
			scripts[id] = [][]int32{call("ok"), done}
		case 2:
			scripts[id] = [][]int32{call("block"), done} // waits for cancellation in the tool
		default:
			scripts[id] = [][]int32{call("ok"), call("ok"), done}
		}
	}
	srv := servertest.New(servertest.Config{
		Rule:    servertest.Scripts(scripts, nil),
		Latency: servertest.Uniform(time.Millisecond, 8*time.Millisecond),
		Seed:    3,
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var finished atomic.Int64
	env := &Env{Server: srv, Tokenizer: tok, Tools: set, Trace: func(e Event) {
		if e.Kind == EventDone && finished.Add(1) == 6 {
			cancel()
		}
	}}
	m, err := NewManager(nil, env, Options{RewardFromLoop: true, DefaultAgent: ToolAgentName, Concurrency: 12})
	require.NoError(t, err)
	out, err := m.Generate(ctx, userSamples(n))
	require.NoError(t, err)
	require.Len(t, out.Results, n)
	aborted, completed := 0, 0
	for i, r := range out.Results {
		require.NoError(t, r.Err(), "sample %d", i)
		tr := r.Trajectories[0]
		require.NotNil(t, tr, "sample %d lost", i)
		require.NoError(t, tr.Validate())
		switch tr.StopReason {
		case trajectory.StopAborted:
			aborted++
		case trajectory.StopCompleted:
			completed++
		default:
			t.Fatalf("sample %d: stop reason %s", i, tr.StopReason)
		}
		if i%4 == 2 {
			require.Equal(t, trajectory.StopAborted, tr.StopReason, "sample %d blocks until cancelled", i)
		}
	}
	require.Positive(t, completed)
	require.Positive(t, aborted)
	require.Equal(t, echo.created.Load(), echo.released.Load(), "tool instances leaked")
	require.Equal(t, aborted, out.Metrics.StopReasons[trajectory.StopAborted])
}

func TestManagerTimeoutAndStream(t *testing.T) {
	tok := qwen3(t)
	done := turn(t, tok, "Done.")
	srv := servertest.New(servertest.Config{Rule: func(c servertest.Call) servertest.Reply {
		if c.Req.RequestID == "slow/0" {
			f := servertest.HangFault()
			return servertest.Reply{Fault: &f}
		}
		return servertest.Reply{Tokens: done}
	}})
	m, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true, Timeout: 250 * time.Millisecond})
	require.NoError(t, err)

	in := make(chan Sample)
	res := m.Stream(context.Background(), in)
	go func() {
		defer close(in)
		for i, s := range userSamples(6) {
			if i == 3 {
				s.GroupID = "slow"
			}
			in <- s
		}
	}()
	got := map[string]*trajectory.Trajectory{}
	for r := range res {
		require.NoError(t, r.Err())
		got[r.Trajectories[0].ID] = r.Trajectories[0]
	}
	require.Len(t, got, 6)
	slow := got["slow/0"]
	require.Equal(t, trajectory.StopAborted, slow.StopReason)
	require.JSONEq(t, "true", string(slow.Extra[ExtraTimeout]))
	require.Equal(t, trajectory.StopCompleted, got["0/0"].StopReason)
}

func TestManagerCancelStream(t *testing.T) {
	tok := qwen3(t)
	srv := servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...), Latency: servertest.Fixed(time.Hour)})
	m, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true, N: 2})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	in := make(chan Sample, 3)
	for _, s := range userSamples(3) {
		in <- s
	}
	res := m.Stream(ctx, in) // in is never closed: cancellation must end the stream
	for srv.Stats().InFlight < 6 {
		time.Sleep(time.Millisecond) // every rollout is waiting on the engine
	}
	cancel()
	n := 0
	for r := range res {
		for _, tr := range r.Trajectories {
			require.Equal(t, trajectory.StopAborted, tr.StopReason)
			n++
		}
	}
	require.Equal(t, 6, n)
}

// flakyLoop panics or fails on purpose.
type flakyLoop struct{}

func (flakyLoop) Run(ctx context.Context, s Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	if s.Index == 0 {
		panic("bad loop")
	}
	return nil, errors.New("no trajectory")
}

func TestManagerLoopPanics(t *testing.T) {
	tok := qwen3(t)
	reg := NewRegistry()
	require.NoError(t, reg.Register("flaky", func(*Env, Config) (AgentLoop, error) { return flakyLoop{}, nil }, Config{}))
	m, err := NewManager(reg, &Env{Server: servertest.New(servertest.Config{}), Tokenizer: tok}, Options{RewardFromLoop: true, DefaultAgent: "flaky"})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), userSamples(2))
	require.NoError(t, err)
	require.ErrorContains(t, out.Results[0].Err(), "panicked")
	require.ErrorContains(t, out.Results[1].Err(), "no trajectory")
	require.Equal(t, 2, out.Metrics.Failed)
}

// simUser is an Interaction that asks for a retry until the model says
// "42", then ends the episode.
type simUser struct {
	mu        sync.Mutex
	started   int
	finalized int
	turns     map[string]int
}

func (u *simUser) Start(ctx context.Context, kw map[string]any) (string, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.started++
	id := fmt.Sprintf("u%d", u.started)
	u.turns[id] = 0
	return id, nil
}

func (u *simUser) Respond(ctx context.Context, id string, msgs []chat.Message) (Reply, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.turns[id]++
	last := msgs[len(msgs)-1]
	if last.Role != chat.RoleAssistant {
		return Reply{}, fmt.Errorf("last message is %s", last.Role)
	}
	if last.Content == "42" {
		return Reply{Reward: 1, Terminate: true}, nil
	}
	return Reply{Text: "Wrong, try again.", Reward: -0.5}, nil
}

func (u *simUser) FinalScore(ctx context.Context, id string) (float64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return 1 / float64(u.turns[id]), nil
}

func (u *simUser) Finalize(ctx context.Context, id string) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.finalized++
	delete(u.turns, id)
	return nil
}

func TestToolAgentInteraction(t *testing.T) {
	tok := qwen3(t)
	user := &simUser{turns: map[string]int{}}
	srv := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
		"0/0": {turn(t, tok, "41"), turn(t, tok, "40"), turn(t, tok, "42")},
	}, nil)})
	rec := &recorder{LLMServer: srv}
	m, err := NewManager(nil, &Env{Server: rec, Tokenizer: tok, Interactions: map[string]Interaction{"guess": user}},
		Options{RewardFromLoop: true, DefaultAgent: ToolAgentName, Sampling: server.SamplingParams{Logprobs: true}})
	require.NoError(t, err)
	s := userSamples(1)
	s[0].InteractionKwargs = map[string]any{"name": "guess"}
	out, err := m.Generate(context.Background(), s)
	require.NoError(t, err)
	tr := out.Results[0].Trajectories[0]
	require.NoError(t, out.Results[0].Err())
	require.Equal(t, trajectory.StopInteractionDone, tr.StopReason)
	require.Equal(t, []float64{-0.5, -0.5, 1}, tr.TurnRewards)
	require.NotNil(t, tr.Reward)
	require.InDelta(t, 1.0/3, *tr.Reward, 1e-12) // the interaction's final score
	require.Equal(t, 3+3+1, tr.NumTurns)         // the ending reply is a user turn too, as in verl
	require.Equal(t, 1, user.started)
	require.Equal(t, 1, user.finalized)
	reqs, outs := rec.byID("0/0")
	require.NoError(t, checkTrajectory(tok, tr, reqs, outs, 0))
	txt, err := tok.Decode(reqs[1].PromptIDs[len(reqs[0].PromptIDs)+len(outs[0].TokenIDs):], false)
	require.NoError(t, err)
	require.Equal(t, "\n<|im_start|>user\nWrong, try again.<|im_end|>\n<|im_start|>assistant\n", txt)

	// An interaction name nobody configured is an error naming it.
	s[0].InteractionKwargs = map[string]any{"name": "other"}
	user2 := &simUser{turns: map[string]int{}}
	m2, err := NewManager(nil, &Env{Server: rec, Tokenizer: tok, Interactions: map[string]Interaction{"guess": user2, "x": user2}},
		Options{RewardFromLoop: true, DefaultAgent: ToolAgentName})
	require.NoError(t, err)
	out, err = m2.Generate(context.Background(), s)
	require.NoError(t, err)
	require.ErrorContains(t, out.Results[0].Err(), `interaction "other" is not configured`)
	require.Equal(t, trajectory.StopError, out.Results[0].Trajectories[0].StopReason)
}

// updatingServer bumps the weight version when the engine aborts a call,
// as a trainer's weight sync would.
type updatingServer struct {
	*servertest.Server
	version int64
}

func (u *updatingServer) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	out, err := u.Server.Generate(ctx, req)
	if err == nil && out.StopReason == server.StopAbort {
		u.version++
		_ = u.Server.UpdateWeights(ctx, server.Weights{Version: u.version})
	}
	return out, err
}

func TestPartialRollout(t *testing.T) {
	tok := qwen3(t)
	full := turn(t, tok, "A long answer that is generated across two weight updates, token by token.")
	var base atomic.Int64
	srv := servertest.New(servertest.Config{Rule: func(c servertest.Call) servertest.Reply {
		// The model continues its turn from the tokens it already produced.
		k := len(c.Req.PromptIDs) - int(base.Load())
		return servertest.Reply{Tokens: full[k:]}
	}})
	srv.FaultNext(1, servertest.AbortFault(3))
	srv.FaultNext(1, servertest.AbortFault(0)) // aborted before any token
	srv.FaultNext(1, servertest.AbortFault(5))
	rec := &recorder{LLMServer: &updatingServer{Server: srv}}
	env := &Env{Server: rec, Tokenizer: tok}
	loop, err := NewSingleTurn(env, Config{ResponseLength: 100})
	require.NoError(t, err)
	s := userSamples(1)[0]
	s.ID = "p"
	prompt, err := tok.EncodeChat(tokenizerContext(s))
	require.NoError(t, err)
	base.Store(int64(len(prompt)))
	tr, err := loop.Run(context.Background(), s, server.SamplingParams{Logprobs: true})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	require.Equal(t, full, tr.ResponseIDs)
	require.Equal(t, int64(0), tr.MinWeightVersion)
	require.Equal(t, int64(3), tr.MaxWeightVersion)
	require.Equal(t, 3, tr.NumPreempted)

	reqs, outs := rec.byID("p")
	require.Len(t, reqs, 4)
	var lps []float32
	for i, o := range outs {
		lps = append(lps, o.Logprobs...)
		done := len(reqs[i].PromptIDs) - len(prompt)
		require.Equal(t, 100-done, reqs[i].Params.MaxNewTokens, "call %d: remaining budget", i)
	}
	require.Equal(t, lps, tr.Logprobs)
	require.Equal(t, []int{3, 0, 5, len(full) - 8}, []int{len(outs[0].TokenIDs), len(outs[1].TokenIDs), len(outs[2].TokenIDs), len(outs[3].TokenIDs)})
}

func TestGenerateResumableGivesUp(t *testing.T) {
	srv := servertest.New(servertest.Config{Rule: servertest.Constant(1, 2, 3)})
	srv.SetFault(servertest.AbortFault(0))
	_, err := GenerateResumable(context.Background(), srv, server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, ErrResume)
}
