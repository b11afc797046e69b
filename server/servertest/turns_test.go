package servertest_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestRefusesWhatEnginesRefuse: servertest runs the engines' own check
// (server.CheckRequest), so a request the in-process engine refuses fails
// here too, before the rule runs, and is no turn.
func TestRefusesWhatEnginesRefuse(t *testing.T) {
	ctx := context.Background()
	var ruleCalls atomic.Int64
	s := servertest.New(servertest.Config{Name: "s1", Vocab: 100, Rule: func(c servertest.Call) servertest.Reply {
		ruleCalls.Add(1)
		return servertest.Reply{Tokens: []int32{7}}
	}})
	p := []int32{1, 2}
	for _, c := range []struct {
		name string
		req  server.GenerateRequest
		want string
	}{
		{"empty prompt", req("r", nil, server.SamplingParams{}), "PromptIDs: empty prompt"},
		{"negative max_new_tokens", req("r", p, server.SamplingParams{MaxNewTokens: -5}), "max_new_tokens"},
		{"negative temperature", req("r", p, server.SamplingParams{Temperature: -1}), "temperature"},
		{"NaN temperature", req("r", p, server.SamplingParams{Temperature: math.NaN()}), "temperature"},
		{"top_p 2", req("r", p, server.SamplingParams{TopP: 2}), "top_p"},
		{"min_p 2", req("r", p, server.SamplingParams{MinP: 2}), "min_p"},
		{"id past the vocabulary", req("r", []int32{1, 100}, server.SamplingParams{}), "PromptIDs[1]: id 100 outside the vocabulary of 100"},
		{"negative id", req("r", []int32{-1}, server.SamplingParams{}), "PromptIDs[0]: id -1 is negative"},
		{"stop id past the vocabulary", req("r", p, server.SamplingParams{StopTokenIDs: []int32{100}}), "stop_token_ids[0]"},
		{"prompt logprobs past the prompt", req("r", p, server.SamplingParams{PromptLogprobs: true, PromptLogprobsFrom: 2}), "prompt logprobs from position 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := s.Generate(ctx, c.req)
			require.ErrorIs(t, err, server.ErrBadRequest)
			require.ErrorContains(t, err, c.want)
			require.ErrorContains(t, err, `request "r"`)
			var se *server.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, "s1", se.Server)
			require.False(t, se.Retryable)
			_, err = s.GenerateStream(ctx, c.req, (&servertest.Chunks{}).Emit)
			require.ErrorIs(t, err, server.ErrBadRequest)
		})
	}
	require.Zero(t, ruleCalls.Load())
	st := s.Stats()
	require.Equal(t, st.Calls, st.Failed)
	require.Equal(t, 20, s.CallsFor("r"))

	// A refused call is no turn: the first valid call is turn 0.
	s2 := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"r": {{5}, {6}}}, nil)})
	_, err := s2.Generate(ctx, req("r", p, server.SamplingParams{TopP: 2}))
	require.ErrorIs(t, err, server.ErrBadRequest)
	out, err := s2.Generate(ctx, req("r", p, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{5}, out.TokenIDs)

	// Without Vocab any id ≥ 0 passes; the zero params are valid.
	out, err = servertest.New(servertest.Config{}).Generate(ctx, req("r", []int32{1 << 20}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{1 << 20}, out.TokenIDs)
}

// TestTurnFollowsTheConversation: the next turn extends the last call's
// prompt and output; a resume after an abort continues its turn where it
// stopped; a reused id with a new conversation starts at turn 0; a failed
// call is no turn.
func TestTurnFollowsTheConversation(t *testing.T) {
	ctx := context.Background()
	var turns []int
	scripts := servertest.Scripts(map[string][][]int32{"a": {{10, 11, 12, 13}, {20, 21}}}, nil)
	s := servertest.New(servertest.Config{Rule: func(c servertest.Call) servertest.Reply {
		turns = append(turns, c.Turn) // calls are sequential here
		return scripts(c)
	}})
	lp := server.SamplingParams{Logprobs: true}

	s.FaultNext(1, servertest.AbortFault(2)) // preempted after two tokens
	out, err := s.Generate(ctx, req("a", []int32{1, 2}, lp))
	require.NoError(t, err)
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Equal(t, []int32{10, 11}, out.TokenIDs)

	// The resume sends the prompt plus the partial turn: it gets the rest
	// of turn 0, with the logprobs of positions 2 and 3, without running
	// the rule again.
	out, err = s.Generate(ctx, req("a", []int32{1, 2, 10, 11}, lp))
	require.NoError(t, err)
	require.Equal(t, server.StopEOS, out.StopReason)
	require.Equal(t, []int32{12, 13}, out.TokenIDs)
	require.Equal(t, []float32{servertest.DefaultLogprob(12, 2), servertest.DefaultLogprob(13, 3)}, out.Logprobs)
	require.Equal(t, 4, out.CachedTokens)

	// The next turn fails once (before any token): its retry is still turn 1.
	next := []int32{1, 2, 10, 11, 12, 13, 3}
	s.FaultNext(1, servertest.Unavailable())
	_, err = s.Generate(ctx, req("a", next, lp))
	require.ErrorIs(t, err, server.ErrUnavailable)
	out, err = s.Generate(ctx, req("a", next, lp))
	require.NoError(t, err)
	require.Equal(t, []int32{20, 21}, out.TokenIDs)

	// Continuing after a stop that was no abort (here, the reply's end) is the
	// next turn, even with nothing appended.
	out, err = s.Generate(ctx, req("a", []int32{1, 2, 10, 11, 12, 13, 3, 20, 21}, server.SamplingParams{}))
	require.ErrorContains(t, err, `no script for request "a" turn 2`)

	// The id reused for a new trajectory: its script starts over.
	out, err = s.Generate(ctx, req("a", []int32{1, 2}, lp))
	require.NoError(t, err)
	require.Equal(t, []int32{10, 11, 12, 13}, out.TokenIDs)
	require.Equal(t, []int{0, 1, 1, 2, 0}, turns)
	require.Equal(t, 6, s.CallsFor("a"))
	require.Equal(t, 1, s.RequestIDs())
}

// TestResumeAfterPausedAbort: a call aborted while the server was paused
// never ran the rule; its resume runs it, for the same turn.
func TestResumeAfterPausedAbort(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"a": {{10, 11}, {20}}}, nil)})
	require.NoError(t, s.Pause(ctx, server.PauseKeep))
	done := make(chan server.TokenOutput, 1)
	go func() {
		out, _ := s.Generate(ctx, req("a", []int32{1}, server.SamplingParams{}))
		done <- out
	}()
	require.Eventually(t, func() bool { return s.Stats().InFlight == 1 }, time.Second, time.Millisecond)
	require.NoError(t, s.Abort(ctx, "a"))
	out := <-done
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Empty(t, out.TokenIDs)
	require.NoError(t, s.Resume(ctx))
	out, err := s.Generate(ctx, req("a", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{10, 11}, out.TokenIDs)
}

// TestResumableGenerationGetsTheScriptedTurn: agentloop's partial-rollout
// resume against a server that preempts every call after three tokens
// stitches the scripted turns together exactly; before, every resume was
// a new turn and the script ran out.
func TestResumableGenerationGetsTheScriptedTurn(t *testing.T) {
	ctx := context.Background()
	first := []int32{10, 11, 12, 13, 14, 15, 16, 2}
	second := []int32{20, 21, 22, 23, 2}
	s := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{"traj": {first, second}}, nil)})
	s.SetFault(servertest.AbortFault(3))
	p := server.SamplingParams{Logprobs: true, StopTokenIDs: []int32{2}, MaxNewTokens: 100}
	prompt := []int32{1, 5, 6}

	g, err := agentloop.GenerateResumable(ctx, s, server.GenerateRequest{RequestID: "traj", PromptIDs: prompt, Params: p})
	require.NoError(t, err)
	require.Equal(t, first, g.TokenIDs)
	require.Equal(t, server.StopEOS, g.StopReason)
	require.Equal(t, 2, g.Preempted)
	for i, id := range first {
		require.Equal(t, servertest.DefaultLogprob(id, i), g.Logprobs[i], "position %d", i)
	}

	prompt = append(append(append([]int32{}, prompt...), first...), 3, 4) // the observation
	g, err = agentloop.GenerateResumable(ctx, s, server.GenerateRequest{RequestID: "traj", PromptIDs: prompt, Params: p})
	require.NoError(t, err)
	require.Equal(t, second, g.TokenIDs)
	require.Equal(t, 1, g.Preempted)
}

// TestResumeReplaysTheTurnNotTheRule: a resume plays the rest of the
// turn's reply; Echo's resumed turn is the original prompt, not an echo of
// the longer resumed one, and a fault the rule gave applies once.
func TestResumeReplaysTheTurnNotTheRule(t *testing.T) {
	ctx := context.Background()
	e := servertest.New(servertest.Config{})
	e.FaultNext(1, servertest.AbortFault(1))
	g, err := agentloop.GenerateResumable(ctx, e, req("e", []int32{4, 5, 6}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{4, 5, 6}, g.TokenIDs)

	var calls atomic.Int64
	s := servertest.New(servertest.Config{Rule: func(servertest.Call) servertest.Reply {
		calls.Add(1)
		f := servertest.AbortFault(1)
		return servertest.Reply{Tokens: []int32{7, 8, 9}, Fault: &f}
	}})
	g, err = agentloop.GenerateResumable(ctx, s, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{7, 8, 9}, g.TokenIDs)
	require.Equal(t, 1, g.Preempted)
	require.Equal(t, int64(1), calls.Load())
}
