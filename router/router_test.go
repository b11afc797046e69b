package router

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

func newRouter(t *testing.T, cfg Config, bs ...Backend) *Router {
	t.Helper()
	r, err := New(cfg, bs...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return r
}

func req(rid, gid string) server.GenerateRequest {
	return server.GenerateRequest{RequestID: rid, GroupID: gid, PromptIDs: []int32{1, 2}}
}

// startHeld starts a call against a router whose target holds calls open and
// waits until the engine has it.
func startHeld(t *testing.T, g *errgroup.Group, ctx context.Context, r *Router, started chan string, rq server.GenerateRequest) {
	t.Helper()
	g.Go(func() error {
		_, err := r.Generate(ctx, rq)
		return err
	})
	require.Equal(t, rq.RequestID, <-started)
}

func inflight(s Snapshot) map[string]int {
	m := map[string]int{}
	for _, st := range s.Servers {
		m[st.Name] = st.InFlight
	}
	return m
}

func TestLeastInFlightIsReleasedOnEveryOutcome(t *testing.T) {
	fs, bs := fakes(3)
	started := make(chan string)
	hold := make(chan struct{})
	for _, f := range fs {
		f.started = started
		f.hold = hold
	}
	r := newRouter(t, Config{}, bs...)

	var g errgroup.Group
	for i := range 6 {
		startHeld(t, &g, context.Background(), r, started, req(fmt.Sprintf("a%d", i), ""))
	}
	require.Equal(t, map[string]int{"s0": 2, "s1": 2, "s2": 2}, inflight(r.Snapshot()))
	close(hold)
	require.NoError(t, g.Wait())
	require.Equal(t, map[string]int{"s0": 0, "s1": 0, "s2": 0}, inflight(r.Snapshot()))

	// Errors release too.
	for _, f := range fs {
		f.mu.Lock()
		f.hold, f.started = nil, nil
		f.mu.Unlock()
		f.setErr(fatalErr(f.name))
	}
	for i := range 3 {
		_, err := r.Generate(context.Background(), req(fmt.Sprintf("e%d", i), ""))
		require.Error(t, err)
	}
	require.Equal(t, map[string]int{"s0": 0, "s1": 0, "s2": 0}, inflight(r.Snapshot()))

	// Cancellation releases too, and says nothing about the server's health.
	hold2 := make(chan struct{})
	defer close(hold2)
	for _, f := range fs {
		f.mu.Lock()
		f.hold, f.started, f.err = hold2, started, nil
		f.mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	var g2 errgroup.Group
	startHeld(t, &g2, ctx, r, started, req("c0", ""))
	require.Equal(t, 1, inflight(r.Snapshot())["s0"]+inflight(r.Snapshot())["s1"]+inflight(r.Snapshot())["s2"])
	cancel()
	err := g2.Wait()
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, isTyped(err), "error %v is not a *server.Error", err)
	snap := r.Snapshot()
	require.Equal(t, map[string]int{"s0": 0, "s1": 0, "s2": 0}, inflight(snap))
	for _, st := range snap.Servers {
		require.Equal(t, StateActive, st.State, st.Name)
	}
}

func TestStickySessionsStayOnOneServer(t *testing.T) {
	fs, bs := fakes(4)
	r := newRouter(t, Config{}, bs...)
	const sessions, turns = 20, 5
	for turn := range turns {
		for s := range sessions {
			_, err := r.Generate(context.Background(), req(fmt.Sprintf("traj-%d", s), ""))
			require.NoError(t, err)
			_ = turn
		}
	}
	where := map[string]string{}
	for _, f := range fs {
		for _, rid := range f.callList() {
			if prev, ok := where[rid]; ok {
				require.Equal(t, prev, f.name, "session %s split over servers", rid)
			}
			where[rid] = f.name
		}
		// Idle fleet: ties go to the server with fewer calls, so the first
		// turns spread evenly.
		require.Len(t, f.callList(), sessions*turns/4, f.name)
	}
	require.Len(t, where, sessions)
	snap := r.Snapshot()
	var hits uint64
	for _, st := range snap.Servers {
		hits += st.StickyHits
	}
	require.Equal(t, uint64(sessions*(turns-1)), hits)
	require.Zero(t, snap.Moves+snap.Repicks+snap.Retries)
}

func TestGateRule(t *testing.T) {
	tests := []struct {
		name          string
		abs           int
		rel           float64
		sticky, least int
		move          bool
	}{
		{"both exceeded", 2, 1.5, 10, 3, true},
		{"abs not exceeded", 7, 1.5, 10, 3, false},
		{"abs equal is not exceeded", 7, 1.5, 10, 3, false},
		{"rel not exceeded", 2, 4, 10, 3, false},
		{"rel equal is not exceeded", 2, 2, 10, 5, false},
		{"idle least", 64, 1.5, 65, 0, true},
		{"sglang defaults, small skew", 64, 1.5, 100, 70, false},
		{"sglang defaults, large skew", 64, 1.5, 200, 100, true},
		{"same load", 1, 1.1, 5, 5, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Router{cfg: Config{BalanceAbs: tt.abs, BalanceRel: tt.rel}}
			s := &backend{inflight: tt.sticky}
			l := &backend{inflight: tt.least}
			require.Equal(t, tt.move, r.gateLocked(s, l))
		})
	}
}

func TestGateMovesStickyTurn(t *testing.T) {
	for _, tt := range []struct {
		abs  int
		move bool
	}{{2, true}, {3, false}} {
		t.Run(fmt.Sprintf("abs=%d", tt.abs), func(t *testing.T) {
			fs, bs := fakes(2)
			r := newRouter(t, Config{BalanceAbs: tt.abs, BalanceRel: 1.5}, bs[0])
			// Four sessions start on s0, the only server.
			for _, rid := range []string{"x", "a1", "a2", "a3"} {
				_, err := r.Generate(context.Background(), req(rid, ""))
				require.NoError(t, err)
			}
			require.NoError(t, r.AddServer(bs[1].Name, bs[1].Server))
			started := make(chan string)
			hold := make(chan struct{})
			fs[0].started, fs[0].hold = started, hold
			var g errgroup.Group
			for _, rid := range []string{"a1", "a2", "a3"} {
				startHeld(t, &g, context.Background(), r, started, req(rid, ""))
			}
			// s0 has 3 in flight, s1 none: the gate fires when 3-0 > abs.
			if tt.move {
				_, err := r.Generate(context.Background(), req("x", ""))
				require.NoError(t, err)
			} else {
				startHeld(t, &g, context.Background(), r, started, req("x", ""))
			}
			close(hold)
			require.NoError(t, g.Wait())
			snap := r.Snapshot()
			if !tt.move {
				require.Zero(t, snap.Moves)
				require.Empty(t, fs[1].callList())
				require.Equal(t, uint64(4), statsByName(snap)["s0"].StickyHits)
				return
			}
			require.Equal(t, []string{"x"}, fs[1].callList())
			require.Equal(t, uint64(1), statsByName(snap)["s0"].Moves)
			require.Equal(t, uint64(1), snap.Moves)
			// The session now sticks to s1.
			_, err := r.Generate(context.Background(), req("x", ""))
			require.NoError(t, err)
			require.Equal(t, []string{"x", "x"}, fs[1].callList())
			require.Equal(t, uint64(1), statsByName(r.Snapshot())["s1"].StickyHits)
		})
	}
}

func TestGroupAffinity(t *testing.T) {
	t.Run("idle fleet keeps the group together", func(t *testing.T) {
		fs, bs := fakes(3)
		r := newRouter(t, Config{}, bs...)
		for i := range 6 {
			_, err := r.Generate(context.Background(), req(fmt.Sprintf("g/%d", i), "g"))
			require.NoError(t, err)
		}
		var with []string
		for _, f := range fs {
			if len(f.callList()) > 0 {
				with = append(with, f.name)
			}
		}
		require.Len(t, with, 1, "group spread over %v", with)
		require.Equal(t, uint64(5), statsByName(r.Snapshot())[with[0]].GroupHits)
	})
	t.Run("the gate breaks the group off an overloaded server", func(t *testing.T) {
		fs, bs := fakes(3)
		started := make(chan string)
		hold := make(chan struct{})
		for _, f := range fs {
			f.started, f.hold = started, hold
		}
		r := newRouter(t, Config{BalanceAbs: 1, BalanceRel: 1.5}, bs...)
		var g errgroup.Group
		for i := range 4 {
			startHeld(t, &g, context.Background(), r, started, req(fmt.Sprintf("g/%d", i), "g"))
		}
		// g/0, g/1 on s0 (1-0 > 1 is false); g/2 leaves (2-0 > 1 and 2 > 0);
		// g/3 follows the group to its new server.
		in := inflight(r.Snapshot())
		require.Equal(t, 2, in["s0"])
		require.ElementsMatch(t, []int{0, 2}, []int{in["s1"], in["s2"]})
		close(hold)
		require.NoError(t, g.Wait())
		require.Equal(t, []string{"g/0", "g/1"}, fs[0].callList())
		moved := fs[1].callList()
		if len(moved) == 0 {
			moved = fs[2].callList()
		}
		require.Equal(t, []string{"g/2", "g/3"}, moved)
	})
}

func TestRetryOnlyBeforeTokens(t *testing.T) {
	fs, bs := fakes(2)
	r := newRouter(t, Config{}, bs...)
	fs[0].setErr(retryableErr("s0"))

	out, err := r.Generate(context.Background(), req("t", ""))
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 3}, out.TokenIDs)
	require.Equal(t, []string{"t"}, fs[0].callList())
	require.Equal(t, []string{"t"}, fs[1].callList())
	snap := r.Snapshot()
	require.Equal(t, uint64(1), snap.Retries)
	require.Equal(t, uint64(1), statsByName(snap)["s0"].Retries)
	require.Equal(t, uint64(1), statsByName(snap)["s0"].Failures)

	// The session follows the server that served it.
	_, err = r.Generate(context.Background(), req("t", ""))
	require.NoError(t, err)
	require.Equal(t, []string{"t", "t"}, fs[1].callList())

	// A failure after tokens may have been produced is never resent.
	fs[1].setErr(fatalErr("s1"))
	_, err = r.Generate(context.Background(), req("t", ""))
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.False(t, server.IsRetryable(err))
	var se *server.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "s1", se.Server)
	require.Equal(t, []string{"t"}, fs[0].callList(), "a call that may have produced tokens was resent")
	require.Equal(t, uint64(1), r.Snapshot().Retries)
}

func TestRetriesExhausted(t *testing.T) {
	for _, tt := range []struct {
		name     string
		servers  int
		attempts int
		calls    int
	}{
		{"fewer servers than attempts", 2, 3, 2},
		{"attempts bound the fan-out", 5, 3, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fs, bs := fakes(tt.servers)
			for _, f := range fs {
				f.setErr(retryableErr(f.name))
			}
			r := newRouter(t, Config{MaxAttempts: tt.attempts, FailureThreshold: 100}, bs...)
			_, err := r.Generate(context.Background(), req("t", ""))
			require.Error(t, err)
			require.True(t, server.IsRetryable(err), "no token was produced, so the error is retryable: %v", err)
			require.ErrorIs(t, err, server.ErrUnavailable)
			require.Contains(t, err.Error(), `"t"`)
			var total int
			for _, f := range fs {
				total += len(f.callList())
				require.LessOrEqual(t, len(f.callList()), 1, "server %s tried twice", f.name)
			}
			require.Equal(t, tt.calls, total)
			require.Equal(t, uint64(tt.calls-1), r.Snapshot().Retries)
		})
	}
}

func TestNoServers(t *testing.T) {
	r := newRouter(t, Config{})
	_, err := r.Generate(context.Background(), req("t", ""))
	require.ErrorIs(t, err, ErrNoServers)
	require.True(t, server.IsRetryable(err))
	require.ErrorIs(t, r.Health(context.Background()), ErrNoServers)
}

// generateOnly hides every capability of an engine but Generate.
type generateOnly struct{ s server.LLMServer }

func (g generateOnly) Generate(ctx context.Context, r server.GenerateRequest) (server.TokenOutput, error) {
	return g.s.Generate(ctx, r)
}

func TestEjectProbeReadmit(t *testing.T) {
	retryable := servertest.ErrorFault(retryableErr("bad"))
	for _, viaHealth := range []bool{true, false} {
		t.Run(fmt.Sprintf("health=%v", viaHealth), func(t *testing.T) {
			bad := servertest.New(servertest.Config{Name: "bad", Rule: servertest.Constant(9)})
			good := servertest.New(servertest.Config{Name: "good", Rule: servertest.Constant(8)})
			bad.SetFault(retryable)
			bad.SetHealthy(false)
			var badSrv server.LLMServer = bad
			if !viaHealth {
				badSrv = generateOnly{bad}
			}
			r := newRouter(t, Config{FailureThreshold: 2, ProbeInterval: time.Millisecond, ProbeMaxInterval: 4 * time.Millisecond},
				Backend{"bad", badSrv}, Backend{"good", good})

			// Each call tries bad first while it is least loaded; two
			// consecutive failures eject it. Every call still succeeds.
			for i := 0; statsByName(r.Snapshot())["bad"].State == StateActive; i++ {
				require.Less(t, i, 10, "bad was never ejected")
				out, err := r.Generate(context.Background(), req(fmt.Sprintf("r%d", i), ""))
				require.NoError(t, err)
				require.Equal(t, []int32{8}, out.TokenIDs)
			}
			st := statsByName(r.Snapshot())
			require.Equal(t, StateEjected, st["bad"].State)
			require.Equal(t, uint64(1), st["bad"].Ejections)
			require.Equal(t, uint64(2), st["bad"].Failures)

			// Still failing probes keep it out.
			callsBefore := bad.Stats().Calls
			require.Eventually(t, func() bool {
				if viaHealth {
					return true
				}
				return bad.CallsFor("agentrl-router-probe") >= 2
			}, 10*time.Second, time.Millisecond)
			require.Equal(t, StateEjected, statsByName(r.Snapshot())["bad"].State)
			if viaHealth {
				require.Equal(t, callsBefore, bad.Stats().Calls, "health-checkable servers are probed with Health, not Generate")
			}

			bad.SetFault(servertest.Fault{})
			bad.SetHealthy(true)
			require.Eventually(t, func() bool {
				return statsByName(r.Snapshot())["bad"].State == StateActive
			}, 10*time.Second, time.Millisecond)
			// The readmitted server takes new sessions again.
			served := map[int32]int{}
			for i := range 10 {
				out, err := r.Generate(context.Background(), req(fmt.Sprintf("after%d", i), ""))
				require.NoError(t, err)
				served[out.TokenIDs[0]]++
			}
			require.Positive(t, served[9], "served: %v", served)
			require.Positive(t, served[8], "served: %v", served)
		})
	}
}

func TestDeterministic(t *testing.T) {
	t.Run("hash is FNV-1a 64", func(t *testing.T) {
		for _, s := range []string{"", "a", "traj-42", "日本語", "\x00\xff"} {
			h := fnv.New64a()
			_, _ = h.Write([]byte(s))
			require.Equal(t, h.Sum64(), hashString(s), "%q", s)
		}
	})

	names := []string{"a", "b", "c", "d", "e"}
	place := func(t *testing.T, order []int, remove string) map[string]string {
		fs := map[string]*fake{}
		var bs []Backend
		for _, i := range order {
			f := newFake(names[i])
			fs[f.name] = f
			bs = append(bs, Backend{f.name, f})
		}
		r := newRouter(t, Config{Deterministic: true}, bs...)
		if remove != "" {
			require.NoError(t, r.RemoveServer(context.Background(), remove))
		}
		// Uneven load must not matter.
		for i := range 50 {
			_, err := r.Generate(context.Background(), req(fmt.Sprintf("warm-%d", i%3), ""))
			require.NoError(t, err)
		}
		got := map[string]string{}
		for i := range 400 {
			rid := fmt.Sprintf("traj-%d", i)
			_, err := r.Generate(context.Background(), req(rid, ""))
			require.NoError(t, err)
		}
		for name, f := range fs {
			for _, rid := range f.callList() {
				got[rid] = name
			}
		}
		return got
	}
	base := place(t, []int{0, 1, 2, 3, 4}, "")
	require.Equal(t, base, place(t, []int{4, 2, 0, 3, 1}, ""), "placement depends on registration order")

	count := map[string]int{}
	for i := range 400 {
		count[base[fmt.Sprintf("traj-%d", i)]]++
	}
	for _, n := range names {
		require.InDelta(t, 80, count[n], 30, "server %s got %d of 400 keys", n, count[n])
	}

	// Rendezvous: removing a server moves only its own keys.
	without := place(t, []int{0, 1, 2, 3, 4}, "c")
	for i := range 400 {
		rid := fmt.Sprintf("traj-%d", i)
		if base[rid] != "c" {
			require.Equal(t, base[rid], without[rid], rid)
		} else {
			require.NotEqual(t, "c", without[rid])
		}
	}

	t.Run("groups hash by group id", func(t *testing.T) {
		fs, bs := fakes(5)
		r := newRouter(t, Config{Deterministic: true}, bs...)
		for i := range 10 {
			_, err := r.Generate(context.Background(), req(fmt.Sprintf("g/%d", i), "g"))
			require.NoError(t, err)
		}
		var with []string
		for _, f := range fs {
			if n := len(f.callList()); n > 0 {
				with = append(with, f.name)
				require.Equal(t, 10, n)
			}
		}
		require.Len(t, with, 1)
	})
}

func TestRemoveServerDrains(t *testing.T) {
	fs, bs := fakes(2)
	r := newRouter(t, Config{}, bs[0])
	// s0 holds sessions a and b, s1 holds x.
	for _, rid := range []string{"a", "b"} {
		_, err := r.Generate(context.Background(), req(rid, ""))
		require.NoError(t, err)
	}
	require.NoError(t, r.AddServer("s1", fs[1]))
	_, err := r.Generate(context.Background(), req("x", ""))
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, fs[0].callList())

	started := make(chan string)
	hold := make(chan struct{})
	fs[0].started, fs[0].hold = started, hold
	var g errgroup.Group
	startHeld(t, &g, context.Background(), r, started, req("a", ""))
	startHeld(t, &g, context.Background(), r, started, req("b", ""))

	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	err = r.RemoveServer(ctx, "s0")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "2 calls still in flight")
	require.ErrorIs(t, r.RemoveServer(context.Background(), "s0"), ErrUnknownServer)

	// Draining: still listed, takes no new call; its sessions move.
	snap := r.Snapshot()
	require.Equal(t, StateDraining, statsByName(snap)["s0"].State)
	_, err = r.Generate(context.Background(), req("a", ""))
	require.NoError(t, err)
	require.Equal(t, []string{"x", "a"}, fs[1].callList())
	require.Equal(t, uint64(1), r.Snapshot().Repicks)

	close(hold)
	require.NoError(t, g.Wait())
	require.Len(t, r.Snapshot().Servers, 1, "a drained server is forgotten")

	// A server can be removed with nothing in flight, and re-added.
	require.NoError(t, r.RemoveServer(context.Background(), "s1"))
	require.Empty(t, r.Snapshot().Servers)
	require.NoError(t, r.AddServer("s1", fs[1]))
	require.ErrorIs(t, r.AddServer("s1", fs[1]), ErrDuplicateServer)
}

func TestRemoveWaitsForInFlight(t *testing.T) {
	fs, bs := fakes(1)
	started := make(chan string)
	hold := make(chan struct{})
	fs[0].started, fs[0].hold = started, hold
	r := newRouter(t, Config{}, bs...)
	var g errgroup.Group
	startHeld(t, &g, context.Background(), r, started, req("a", ""))
	removed := make(chan error, 1)
	go func() { removed <- r.RemoveServer(context.Background(), "s0") }()
	require.Eventually(t, func() bool { return statsByName(r.Snapshot())["s0"].State == StateDraining }, 10*time.Second, time.Millisecond)
	select {
	case err := <-removed:
		t.Fatalf("RemoveServer returned %v with a call in flight", err)
	default:
	}
	close(hold)
	require.NoError(t, g.Wait())
	require.NoError(t, <-removed)
}

func TestAbort(t *testing.T) {
	t.Run("forwarded to the server holding the call", func(t *testing.T) {
		toks := make([]int32, 1000)
		for i := range toks {
			toks[i] = int32(i)
		}
		srvs := []*servertest.Server{
			servertest.New(servertest.Config{Name: "a", Rule: servertest.Constant(toks...), TokenLatency: servertest.Fixed(time.Millisecond)}),
			servertest.New(servertest.Config{Name: "b", Rule: servertest.Constant(toks...), TokenLatency: servertest.Fixed(time.Millisecond)}),
		}
		r := newRouter(t, Config{}, Backend{"a", srvs[0]}, Backend{"b", srvs[1]})
		done := make(chan server.TokenOutput, 1)
		var g errgroup.Group
		g.Go(func() error {
			out, err := r.Generate(context.Background(), req("long", ""))
			done <- out
			return err
		})
		require.Eventually(t, func() bool { return srvs[0].Stats().InFlight+srvs[1].Stats().InFlight == 1 }, 10*time.Second, time.Millisecond)
		require.NoError(t, r.Abort(context.Background(), "long"))
		require.NoError(t, g.Wait())
		out := <-done
		require.Equal(t, server.StopAbort, out.StopReason)
		require.Less(t, len(out.TokenIDs), 1000)
		require.Equal(t, toks[:len(out.TokenIDs)], out.TokenIDs)
		require.NoError(t, r.Abort(context.Background(), "not-running"))
	})
	t.Run("a call aborted between attempts is not resent", func(t *testing.T) {
		fs, bs := fakes(2)
		started := make(chan string)
		hold := make(chan struct{})
		fs[0].started, fs[0].hold = started, hold
		fs[0].setErr(retryableErr("s0"))
		r := newRouter(t, Config{}, bs...)
		var out server.TokenOutput
		var g errgroup.Group
		g.Go(func() error {
			var err error
			out, err = r.Generate(context.Background(), req("t", ""))
			return err
		})
		<-started
		err := r.Abort(context.Background(), "t")
		require.ErrorIs(t, err, errors.ErrUnsupported, "the fake cannot abort, and the error says so")
		require.Contains(t, err.Error(), `"s0"`)
		close(hold)
		require.NoError(t, g.Wait())
		require.Equal(t, server.StopAbort, out.StopReason)
		require.Empty(t, out.TokenIDs)
		require.Empty(t, fs[1].callList())
	})
}

func TestFanOut(t *testing.T) {
	a := servertest.New(servertest.Config{Name: "a"})
	b := servertest.New(servertest.Config{Name: "b"})
	b.SetFault(servertest.ErrorFault(retryableErr("b")))
	b.SetHealthy(false)
	r := newRouter(t, Config{FailureThreshold: 1, ProbeInterval: time.Hour}, Backend{"a", a}, Backend{"b", b})
	for r.Snapshot().Servers[1].State != StateEjected {
		_, err := r.Generate(context.Background(), req("", ""))
		require.NoError(t, err)
	}

	require.NoError(t, r.UpdateWeights(context.Background(), server.Weights{Version: 7, Path: "/ckpt/7"}))
	require.Equal(t, int64(7), a.WeightVersion())
	require.Equal(t, int64(7), b.WeightVersion(), "ejected servers get weight updates too")
	require.NoError(t, r.Sleep(context.Background(), server.SleepWeights))
	for _, s := range []*servertest.Server{a, b} {
		sleeping, level := s.Sleeping()
		require.True(t, sleeping)
		require.Equal(t, server.SleepWeights, level)
	}
	require.NoError(t, r.WakeUp(context.Background()))
	sleeping, _ := a.Sleeping()
	require.False(t, sleeping)
	require.NoError(t, r.AbortAll(context.Background()))

	// Errors name the server.
	err := r.Sleep(context.Background(), 9)
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.Contains(t, err.Error(), "a sleep")
	require.Contains(t, err.Error(), "b sleep")

	// A server without the capability: nothing is touched.
	require.NoError(t, r.AddServer("plain", newFake("plain")))
	err = r.UpdateWeights(context.Background(), server.Weights{Version: 8})
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), `"plain"`)
	require.Equal(t, int64(7), a.WeightVersion())
	require.ErrorIs(t, r.Sleep(context.Background(), server.SleepKVCache), errors.ErrUnsupported)
	require.ErrorIs(t, r.WakeUp(context.Background()), errors.ErrUnsupported)
	require.ErrorIs(t, r.AbortAll(context.Background()), errors.ErrUnsupported)
}

func TestConfigAndRegistrationErrors(t *testing.T) {
	for _, tt := range []struct {
		cfg   Config
		field string
	}{
		{Config{StickyCapacity: -1}, "StickyCapacity"},
		{Config{GroupCapacity: -1}, "GroupCapacity"},
		{Config{BalanceAbs: -1}, "BalanceAbs"},
		{Config{BalanceRel: math.NaN()}, "BalanceRel"},
		{Config{BalanceRel: math.Inf(1)}, "BalanceRel"},
		{Config{FailureThreshold: -2}, "FailureThreshold"},
		{Config{MaxAttempts: -1}, "MaxAttempts"},
		{Config{ProbeInterval: -time.Second}, "ProbeInterval"},
		{Config{ProbeTimeout: -time.Second}, "ProbeTimeout"},
	} {
		_, err := New(tt.cfg)
		require.ErrorContains(t, err, "Config."+tt.field)
	}
	_, err := New(Config{}, Backend{"", newFake("x")})
	require.ErrorContains(t, err, "backend 0: router: server name is empty")
	_, err = New(Config{}, Backend{"x", nil})
	require.ErrorContains(t, err, `server "x" is nil`)
	_, err = New(Config{}, Backend{"x", newFake("x")}, Backend{"x", newFake("x")})
	require.ErrorIs(t, err, ErrDuplicateServer)
	require.ErrorContains(t, err, "backend 1")
}

func TestClosed(t *testing.T) {
	fs, bs := fakes(2)
	fs[0].setErr(retryableErr("s0"))
	r, err := New(Config{FailureThreshold: 1, ProbeInterval: time.Hour}, bs...)
	require.NoError(t, err)
	_, err = r.Generate(context.Background(), req("t", ""))
	require.NoError(t, err)
	require.Equal(t, StateEjected, r.Snapshot().Servers[0].State) // a prober runs now
	require.NoError(t, r.Close())                                 // and is joined (goleak checks)
	require.NoError(t, r.Close())
	_, err = r.Generate(context.Background(), req("t", ""))
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, r.Health(context.Background()), ErrClosed)
	require.ErrorIs(t, r.AddServer("z", newFake("z")), ErrClosed)
}

func TestCancelledBeforeStart(t *testing.T) {
	_, bs := fakes(1)
	r := newRouter(t, Config{}, bs...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := r.Generate(ctx, req("t", ""))
	require.ErrorIs(t, err, context.Canceled)
	require.True(t, isTyped(err))
}

func TestProbationAfterReadmission(t *testing.T) {
	fs, bs := fakes(2)
	bad := fs[0]
	bad.setErr(retryableErr("s0"))
	r := newRouter(t, Config{FailureThreshold: 2, ProbeInterval: time.Millisecond, ProbeMaxInterval: time.Millisecond}, bs...)
	for statsByName(r.Snapshot())["s0"].State != StateEjected {
		_, err := r.Generate(context.Background(), req("", ""))
		require.NoError(t, err)
	}
	bad.setErr(nil) // the trial generation now succeeds
	require.Eventually(t, func() bool { return statsByName(r.Snapshot())["s0"].State == StateActive }, 10*time.Second, time.Millisecond)
	require.Equal(t, 1, statsByName(r.Snapshot())["s0"].ConsecutiveFailures, "one more failure ejects it again")

	started := make(chan string)
	hold := make(chan struct{})
	for _, f := range fs {
		f.mu.Lock()
		f.started, f.hold = started, hold
		f.mu.Unlock()
	}
	var g errgroup.Group
	startHeld(t, &g, context.Background(), r, started, req("g1", ""))
	startHeld(t, &g, context.Background(), r, started, req("g2", ""))
	// Two new sessions on two idle servers: one of them is the trial call.
	in := inflight(r.Snapshot())
	require.Equal(t, 1, in["s0"], "the server on probation takes one trial call")
	require.Equal(t, 1, in["s1"])
	startHeld(t, &g, context.Background(), r, started, req("g3", ""))
	require.Equal(t, 2, inflight(r.Snapshot())["s1"], "no second call while the trial runs")
	close(hold)
	require.NoError(t, g.Wait())

	// The trial succeeded: probation is over.
	for _, f := range fs {
		f.mu.Lock()
		f.started, f.hold = nil, nil
		f.mu.Unlock()
	}
	require.Zero(t, statsByName(r.Snapshot())["s0"].ConsecutiveFailures)
	// Now it takes calls like any other server.
	hold2 := make(chan struct{})
	for _, f := range fs {
		f.mu.Lock()
		f.started, f.hold = started, hold2
		f.mu.Unlock()
	}
	for i := range 4 {
		startHeld(t, &g, context.Background(), r, started, req(fmt.Sprintf("h%d", i), ""))
	}
	require.Equal(t, map[string]int{"s0": 2, "s1": 2}, inflight(r.Snapshot()))
	close(hold2)
	require.NoError(t, g.Wait())
}

func TestLastActiveServerIsNeverEjected(t *testing.T) {
	fs, bs := fakes(2)
	for _, f := range fs {
		f.setErr(retryableErr(f.name))
	}
	r := newRouter(t, Config{FailureThreshold: 1, ProbeInterval: time.Hour}, bs...)
	for i := range 5 {
		_, err := r.Generate(context.Background(), req(fmt.Sprintf("t%d", i), ""))
		require.True(t, server.IsRetryable(err))
	}
	var active, ejected int
	for _, st := range r.Snapshot().Servers {
		switch st.State {
		case StateActive:
			active++
		case StateEjected:
			ejected++
		}
	}
	require.Equal(t, 1, active)
	require.Equal(t, 1, ejected)
	require.NoError(t, r.Health(context.Background()))
}

func TestProbeBackoffGrowsAcrossFlaps(t *testing.T) {
	// Health answers, generation fails: every readmission ends in a new
	// ejection, and each waits twice as long as the last (capped), until a
	// call succeeds.
	flaky := servertest.New(servertest.Config{Name: "flaky"})
	flaky.SetFault(servertest.ErrorFault(retryableErr("flaky")))
	good := newFake("good")
	r := newRouter(t, Config{FailureThreshold: 1, ProbeInterval: time.Millisecond, ProbeMaxInterval: 4 * time.Millisecond},
		Backend{"flaky", flaky}, Backend{"good", good})
	delay := func() time.Duration {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.byName["flaky"].probeDelay
	}
	var seen []time.Duration
	for i := 0; len(seen) < 4; i++ {
		require.Less(t, i, 100000, "flaky was not readmitted and re-ejected 4 times")
		before := statsByName(r.Snapshot())["flaky"].Ejections
		_, err := r.Generate(context.Background(), req(fmt.Sprintf("r%d", i), ""))
		require.NoError(t, err)
		if statsByName(r.Snapshot())["flaky"].Ejections > before && before > 0 {
			seen = append(seen, delay())
		}
		if statsByName(r.Snapshot())["flaky"].State == StateEjected {
			time.Sleep(time.Millisecond) // let the prober readmit it
		}
	}
	require.Equal(t, []time.Duration{2 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond, 4 * time.Millisecond}, seen)

	flaky.SetFault(servertest.Fault{})
	require.Eventually(t, func() bool {
		_, err := r.Generate(context.Background(), req("", ""))
		require.NoError(t, err)
		return statsByName(r.Snapshot())["flaky"].State == StateActive && delay() == 0
	}, 10*time.Second, time.Millisecond, "a success resets the backoff")
}
