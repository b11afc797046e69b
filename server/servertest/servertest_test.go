package servertest_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func req(rid string, prompt []int32, p server.SamplingParams) server.GenerateRequest {
	return server.GenerateRequest{RequestID: rid, PromptIDs: prompt, Params: p}
}

func TestRulesAndTruncation(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		rule   servertest.Rule
		prompt []int32
		params server.SamplingParams
		want   []int32
		reason server.StopReason
	}{
		{"echo", servertest.Echo(), []int32{1, 2, 3}, server.SamplingParams{}, []int32{1, 2, 3}, server.StopEOS},
		{"echo max tokens", servertest.Echo(), []int32{1, 2, 3}, server.SamplingParams{MaxNewTokens: 2}, []int32{1, 2}, server.StopLength},
		{"stop token kept", servertest.Constant(5, 6, 9, 7), []int32{1}, server.SamplingParams{StopTokenIDs: []int32{8, 9}}, []int32{5, 6, 9}, server.StopEOS},
		{"stop at limit wins", servertest.Constant(5, 9), []int32{1}, server.SamplingParams{MaxNewTokens: 2, StopTokenIDs: []int32{9}}, []int32{5, 9}, server.StopEOS},
		{"length before stop", servertest.Constant(5, 6, 9), []int32{1}, server.SamplingParams{MaxNewTokens: 2, StopTokenIDs: []int32{9}}, []int32{5, 6}, server.StopLength},
		{"empty", servertest.Constant(), []int32{1}, server.SamplingParams{}, []int32{}, server.StopEOS},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := servertest.New(servertest.Config{Rule: tc.rule})
			out, err := s.Generate(ctx, req("r", tc.prompt, tc.params))
			require.NoError(t, err)
			require.Equal(t, tc.want, append([]int32{}, out.TokenIDs...))
			require.Equal(t, tc.reason, out.StopReason)
			require.Nil(t, out.Logprobs)
			require.Equal(t, len(tc.prompt), out.PromptTokens)
		})
	}
}

func TestScriptsTurnsAndCachedTokens(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
		"a": {{10, 11}, {12}},
	}, nil)})
	out, err := s.Generate(ctx, req("a", []int32{1, 2}, server.SamplingParams{Logprobs: true}))
	require.NoError(t, err)
	require.Equal(t, []int32{10, 11}, out.TokenIDs)
	require.Equal(t, []float32{servertest.DefaultLogprob(10, 0), servertest.DefaultLogprob(11, 1)}, out.Logprobs)
	require.Zero(t, out.CachedTokens)

	// Second turn extends the first sequence: its whole prefix is cached.
	out, err = s.Generate(ctx, req("a", []int32{1, 2, 10, 11, 3}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{12}, out.TokenIDs)
	require.Equal(t, 4, out.CachedTokens)
	require.Equal(t, 2, s.CallsFor("a"))

	// Third turn is not scripted and there is no fallback.
	_, err = s.Generate(ctx, req("a", []int32{1, 2, 10, 11, 3, 12, 4}, server.SamplingParams{}))
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, `request "a" turn 2`)

	require.NoError(t, s.FlushCache(ctx))
	s2 := servertest.New(servertest.Config{Rule: servertest.Scripts(nil, servertest.Constant(4))})
	out, err = s2.Generate(ctx, req("zz", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{4}, out.TokenIDs)
	st := s.Stats()
	require.Equal(t, servertest.Stats{Calls: 3, Completed: 2, Failed: 1, MaxInFlight: 1}, st)
}

func TestRandomIsDeterministic(t *testing.T) {
	rule := servertest.Random(7, 100, 3, 9)
	a := rule(servertest.Call{Req: req("x", []int32{1}, server.SamplingParams{}), Turn: 1})
	b := rule(servertest.Call{Req: req("x", []int32{1}, server.SamplingParams{}), Turn: 1})
	c := rule(servertest.Call{Req: req("x", []int32{1}, server.SamplingParams{}), Turn: 2})
	require.Equal(t, a.Tokens, b.Tokens)
	require.NotEqual(t, a.Tokens, c.Tokens)
	require.GreaterOrEqual(t, len(a.Tokens), 3)
	require.LessOrEqual(t, len(a.Tokens), 9)
	for _, tok := range a.Tokens {
		require.True(t, tok >= 0 && tok < 100)
	}
}

func TestLatencyDistributions(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	require.Equal(t, 3*time.Millisecond, servertest.Fixed(3*time.Millisecond).Sample(r))
	u := servertest.Uniform(time.Millisecond, 2*time.Millisecond)
	ln := servertest.LogNormal(10*time.Millisecond, 0.5)
	var lns []time.Duration
	for range 2001 {
		d := u.Sample(r)
		require.True(t, d >= time.Millisecond && d <= 2*time.Millisecond, d)
		lns = append(lns, ln.Sample(r))
	}
	sort.Slice(lns, func(i, j int) bool { return lns[i] < lns[j] })
	med := lns[len(lns)/2]
	require.InDelta(t, float64(10*time.Millisecond), float64(med), float64(time.Millisecond), "median %v", med)

	// Same seed, same draws.
	a, b := rand.New(rand.NewPCG(5, 5)), rand.New(rand.NewPCG(5, 5))
	for range 10 {
		require.Equal(t, ln.Sample(a), ln.Sample(b))
	}
}

func TestFaults(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{Name: "s1", Rule: servertest.Constant(1, 2, 3, 4)})

	s.FaultNext(1, servertest.Unavailable())
	s.FaultNext(1, servertest.Overloaded())
	_, err := s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, server.ErrUnavailable)
	var se *server.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "s1", se.Server)
	require.True(t, se.Retryable)
	_, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, server.ErrOverloaded)
	require.True(t, server.IsRetryable(err))
	out, err := s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 3, 4}, out.TokenIDs)

	// Abort mid-way returns the partial tokens.
	s.SetFault(servertest.AbortFault(2))
	for range 2 {
		out, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{Logprobs: true}))
		require.NoError(t, err)
		require.Equal(t, server.StopAbort, out.StopReason)
		require.Equal(t, []int32{1, 2}, out.TokenIDs)
		require.Len(t, out.Logprobs, 2)
	}
	s.SetFault(servertest.AbortFault(0))
	out, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Empty(t, out.TokenIDs)

	// Hang until the deadline.
	s.SetFault(servertest.HangFault())
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	require.NoError(t, s.Abort(ctx, "r")) // hangs ignore aborts; this one is not even running yet
	_, err = s.Generate(tctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, context.DeadlineExceeded)

	s.SetFault(servertest.Fault{})
	_, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)

	// A rule can inject per call.
	custom := errors.New("boom")
	s2 := servertest.New(servertest.Config{Rule: func(c servertest.Call) servertest.Reply {
		f := servertest.ErrorFault(custom)
		return servertest.Reply{Fault: &f}
	}})
	_, err = s2.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, custom)
	require.False(t, server.IsRetryable(err))
	// Mismatched logprobs from a rule are reported, not silently used.
	s3 := servertest.New(servertest.Config{Rule: func(servertest.Call) servertest.Reply {
		return servertest.Reply{Tokens: []int32{1}, Logprobs: []float32{-1, -2}}
	}})
	_, err = s3.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorContains(t, err, "2 logprobs for 1 tokens")
}

func TestAbortMidwayAndInFlight(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{
		Rule:         servertest.Constant(1, 2, 3, 4, 5, 6, 7, 8, 9, 10),
		TokenLatency: servertest.Fixed(20 * time.Millisecond),
	})
	var wg sync.WaitGroup
	outs := make([]server.TokenOutput, 4)
	errs := make([]error, 4)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i], errs[i] = s.Generate(ctx, req(fmt.Sprint("r", i%2), []int32{1}, server.SamplingParams{}))
		}()
	}
	require.Eventually(t, func() bool { return s.Stats().InFlight == 4 }, 2*time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, s.Abort(ctx, "r0"))
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, s.AbortAll(ctx))
	wg.Wait()
	for i := range outs {
		require.NoError(t, errs[i])
		require.Equal(t, server.StopAbort, outs[i].StopReason)
		n := len(outs[i].TokenIDs)
		require.True(t, n >= 1 && n < 10, "partial tokens: %d", n)
		require.Equal(t, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}[:n], outs[i].TokenIDs)
	}
	st := s.Stats()
	require.Equal(t, int64(0), st.InFlight)
	require.Equal(t, int64(4), st.MaxInFlight)
	require.Equal(t, int64(4), st.Aborted)

	// Cancellation returns the context's error.
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(30*time.Millisecond, cancel)
	_, err := s.Generate(cctx, req("c", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, context.Canceled)
}

func TestCapabilities(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{Rule: servertest.Constant(1)})
	var _ server.Aborter = s
	var _ server.Sleeper = s
	var _ server.WeightUpdater = s
	var _ server.HealthChecker = s
	var _ server.CacheFlusher = s
	var _ server.Pauser = s

	require.NoError(t, s.Health(ctx))
	s.SetHealthy(false)
	require.ErrorIs(t, s.Health(ctx), server.ErrUnavailable)
	s.SetHealthy(true)

	require.NoError(t, s.UpdateWeights(ctx, server.Weights{Version: 7, Path: "/ckpt/7"}))
	out, err := s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)
	require.Equal(t, int64(7), out.WeightVersion)
	require.Equal(t, "/ckpt/7", s.WeightsPath())

	require.ErrorIs(t, s.Sleep(ctx, 3), server.ErrBadRequest)
	require.NoError(t, s.Sleep(ctx, server.SleepWeights))
	sl, lvl := s.Sleeping()
	require.True(t, sl)
	require.Equal(t, server.SleepWeights, lvl)
	_, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.ErrorIs(t, err, servertest.ErrSleeping)
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.NoError(t, s.WakeUp(ctx))
	_, err = s.Generate(ctx, req("r", []int32{1}, server.SamplingParams{}))
	require.NoError(t, err)

	// Pause holds new calls until Resume.
	require.NoError(t, s.Pause(ctx, false))
	done := make(chan server.TokenOutput)
	go func() {
		o, _ := s.Generate(ctx, req("p", []int32{1}, server.SamplingParams{}))
		done <- o
	}()
	require.Eventually(t, func() bool { return s.Stats().InFlight == 1 }, time.Second, time.Millisecond)
	select {
	case <-done:
		t.Fatal("call ran while paused")
	case <-time.After(20 * time.Millisecond):
	}
	require.NoError(t, s.Resume(ctx))
	require.Equal(t, []int32{1}, (<-done).TokenIDs)
}

func TestPauseAbortAndEdges(t *testing.T) {
	ctx := context.Background()
	s := servertest.New(servertest.Config{Rule: servertest.Constant(1, 2, 3, 4, 5), TokenLatency: servertest.Fixed(20 * time.Millisecond)})
	done := make(chan server.TokenOutput, 1)
	go func() {
		out, _ := s.Generate(ctx, req("p", []int32{1}, server.SamplingParams{}))
		done <- out
	}()
	require.Eventually(t, func() bool { return s.Stats().InFlight == 1 }, time.Second, time.Millisecond)
	require.NoError(t, s.Pause(ctx, true)) // aborts the running call
	out := <-done
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Less(t, len(out.TokenIDs), 5)
	// A call held by the pause can be aborted too.
	go func() {
		out, _ := s.Generate(ctx, req("q", []int32{1}, server.SamplingParams{}))
		done <- out
	}()
	require.Eventually(t, func() bool { return s.Stats().InFlight == 1 }, time.Second, time.Millisecond)
	require.NoError(t, s.Abort(ctx, "q"))
	out = <-done
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Empty(t, out.TokenIDs)
	require.NoError(t, s.Resume(ctx))
	require.NoError(t, s.Resume(ctx)) // resuming twice is harmless

	r := rand.New(rand.NewPCG(1, 1))
	require.Equal(t, time.Millisecond, servertest.Uniform(time.Millisecond, time.Millisecond).Sample(r))
	rep := servertest.Random(1, 10, 4, 4)(servertest.Call{Req: req("x", []int32{1}, server.SamplingParams{})})
	require.Len(t, rep.Tokens, 4)
}

// A streamed call emits every token in order, then returns the same output a
// plain call gives; an emit error stops it.
func TestGenerateStream(t *testing.T) {
	ctx := context.Background()
	p := server.SamplingParams{MaxNewTokens: 10, Logprobs: true, StopTokenIDs: []int32{7}}
	s := servertest.New(servertest.Config{Rule: servertest.Constant(3, 4, 5, 7, 9)})
	want, err := s.Generate(ctx, req("a", []int32{1}, p))
	require.NoError(t, err)
	var ids []int32
	var lps []float32
	got, err := s.GenerateStream(ctx, req("b", []int32{1}, p), func(c server.Chunk) error {
		require.Len(t, c.Logprobs, len(c.TokenIDs))
		ids = append(ids, c.TokenIDs...)
		lps = append(lps, c.Logprobs...)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []int32{3, 4, 5, 7}, got.TokenIDs)
	require.Equal(t, want.TokenIDs, got.TokenIDs)
	require.Equal(t, want.Logprobs, got.Logprobs)
	require.Equal(t, server.StopEOS, got.StopReason)
	require.Equal(t, got.TokenIDs, ids)
	require.Equal(t, got.Logprobs, lps)

	stop := errors.New("client went away")
	n := 0
	_, err = s.GenerateStream(ctx, req("c", []int32{1}, p), func(server.Chunk) error {
		n++
		if n == 2 {
			return stop
		}
		return nil
	})
	require.ErrorIs(t, err, stop)
	require.Equal(t, 2, n)

	_, err = s.GenerateStream(ctx, req("d", []int32{1}, p), nil)
	require.ErrorIs(t, err, server.ErrBadRequest)
}
