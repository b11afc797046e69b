package tool

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// eventLog collects a session's InstanceEvents.
type eventLog struct {
	mu  sync.Mutex
	evs []InstanceEvent
}

func (l *eventLog) observe(ev InstanceEvent) {
	l.mu.Lock()
	l.evs = append(l.evs, ev)
	l.mu.Unlock()
}

func (l *eventLog) events() []InstanceEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]InstanceEvent(nil), l.evs...)
}

// Every Create is reported (failed and panicking ones with their error
// kind) and every instance that was made is reported released once, also
// when its Release fails or panics.
func TestSessionObserverReportsEveryInstance(t *testing.T) {
	tools := []*fakeTool{
		{name: "a"},
		{name: "createfails", create: func(context.Context, map[string]any) (string, error) { return "", errors.New("quota") }},
		{name: "createboom", create: func(context.Context, map[string]any) (string, error) { panic("no instance") }},
		{name: "relfails", release: func(context.Context, string) error { return errors.New("stuck") }},
		{name: "relboom", release: func(context.Context, string) error { panic("release bug") }},
	}
	var ts []Tool
	for _, tl := range tools {
		ts = append(ts, tl)
	}
	s, err := NewSet(ts...)
	require.NoError(t, err)
	var log eventLog
	ss := s.SessionWith(nil, SessionOptions{Observe: log.observe})
	ctx := context.Background()
	require.NoError(t, ss.Call(ctx, call("a", `{}`)).Err)
	require.NoError(t, ss.Call(ctx, call("a", `{}`)).Err, "the second call reuses the instance")
	require.ErrorIs(t, ss.Call(ctx, call("createfails", `{}`)).Err, ErrExecution)
	require.ErrorIs(t, ss.Call(ctx, call("createboom", `{}`)).Err, ErrPanic)
	require.NoError(t, ss.Call(ctx, call("relfails", `{}`)).Err)
	require.NoError(t, ss.Call(ctx, call("relboom", `{}`)).Err)
	require.Error(t, ss.Close(ctx))
	require.NoError(t, ss.Close(ctx), "idempotent: nothing is released twice")

	type row struct {
		Tool     string
		Released bool
		Kind     string
	}
	var got []row
	for _, ev := range log.events() {
		got = append(got, row{ev.Tool, ev.Released, ErrorKind(ev.Err)})
		require.GreaterOrEqual(t, ev.Latency, time.Duration(0))
		if ev.Released {
			require.Greater(t, ev.Lifetime, time.Duration(0), ev.Tool)
		} else {
			require.Zero(t, ev.Lifetime)
		}
	}
	require.Equal(t, []row{
		{"a", false, OutcomeOK},
		{"createfails", false, OutcomeExecution},
		{"createboom", false, OutcomePanic},
		{"relfails", false, OutcomeOK},
		{"relboom", false, OutcomeOK},
		// Close releases in set order.
		{"a", true, OutcomeOK},
		{"relfails", true, OutcomeOther}, // Release's own error is the tool's, unwrapped by a sentinel
		{"relboom", true, OutcomePanic},
	}, got)
}

// An instance created by a call Close had to abandon is released when its
// Create returns, and both are reported.
func TestSessionObserverLateCreate(t *testing.T) {
	unblock := make(chan struct{})
	late := &fakeTool{name: "late", create: func(context.Context, map[string]any) (string, error) {
		<-unblock // ignores its context
		return "late-1", nil
	}}
	s, err := NewSet(late)
	require.NoError(t, err)
	require.NoError(t, s.SetLimits("late", Limits{Timeout: 10 * time.Millisecond}))
	var log eventLog
	ss := s.SessionWith(nil, SessionOptions{Observe: log.observe})
	require.ErrorIs(t, ss.Call(context.Background(), call("late", `{}`)).Err, ErrTimeout)
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, ss.Close(cctx), "calls still running")
	require.Empty(t, log.events(), "nothing was created yet")
	close(unblock)
	require.Eventually(t, func() bool { return len(log.events()) == 2 }, 10*time.Second, time.Millisecond)
	evs := log.events()
	require.False(t, evs[0].Released)
	require.NoError(t, evs[0].Err)
	require.True(t, evs[1].Released)
	require.NoError(t, evs[1].Err)
	created, released := late.lifecycle()
	require.Equal(t, []string{"late-1"}, created)
	require.Equal(t, created, released)
}

// Calls racing Close: the observer's creates and releases pair up.
func TestSessionObserverRacingClose(t *testing.T) {
	for round := 0; round < 20; round++ {
		tl := &fakeTool{name: "t", execute: func(context.Context, string, json.RawMessage) (Result, error) {
			time.Sleep(50 * time.Microsecond)
			return Result{Text: "ok"}, nil
		}}
		s, err := NewSet(tl)
		require.NoError(t, err)
		var log eventLog
		ss := s.SessionWith(nil, SessionOptions{Observe: log.observe})
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_ = ss.Call(context.Background(), call("t", `{}`))
			}()
		}
		time.Sleep(time.Duration(round*20) * time.Microsecond)
		require.NoError(t, ss.Close(context.Background()))
		wg.Wait()
		created, released := 0, 0
		for _, ev := range log.events() {
			require.NoError(t, ev.Err)
			if ev.Released {
				released++
			} else {
				created++
			}
		}
		c, r := tl.lifecycle()
		require.Equal(t, len(c), created, "round %d", round)
		require.Equal(t, len(r), released, "round %d", round)
		require.Equal(t, created, released, "round %d", round)
	}
}

func TestErrorKindOfOtherErrors(t *testing.T) {
	require.Equal(t, OutcomeOK, ErrorKind(nil))
	require.Equal(t, OutcomeSessionClosed, ErrorKind(ErrSessionClosed))
	require.Equal(t, OutcomeOther, ErrorKind(errors.New("x")))
	// A tool error that says it timed out is a timeout, not an execution
	// error: the kind the model would be told.
	require.Equal(t, OutcomeTimeout, ErrorKind(errors.Join(ErrExecution, ErrTimeout)))
}
