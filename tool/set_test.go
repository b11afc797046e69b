package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/chat"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakeTool records its lifecycle and behaves as the test says.
type fakeTool struct {
	name    string
	params  string
	execute func(ctx context.Context, id string, args json.RawMessage) (Result, error)
	create  func(ctx context.Context, kwargs map[string]any) (string, error)
	release func(ctx context.Context, id string) error

	mu       sync.Mutex
	created  []string
	released []string
	kwargs   []map[string]any
	n        atomic.Int64
}

func (f *fakeTool) Schema() chat.ToolSchema {
	p := f.params
	if p == "" {
		p = `{"type":"object","properties":{"x":{"type":"integer"}}}`
	}
	return chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{Name: f.name, Parameters: json.RawMessage(p)}}
}

func (f *fakeTool) Create(ctx context.Context, kwargs map[string]any) (string, error) {
	id := fmt.Sprintf("%s-%d", f.name, f.n.Add(1))
	if f.create != nil {
		var err error
		if id, err = f.create(ctx, kwargs); err != nil {
			return "", err
		}
	}
	f.mu.Lock()
	f.created = append(f.created, id)
	f.kwargs = append(f.kwargs, kwargs)
	f.mu.Unlock()
	return id, nil
}

func (f *fakeTool) Execute(ctx context.Context, id string, args json.RawMessage) (Result, error) {
	if f.execute != nil {
		return f.execute(ctx, id, args)
	}
	return Result{Text: "ok " + id + " " + string(args)}, nil
}

func (f *fakeTool) Release(ctx context.Context, id string) error {
	f.mu.Lock()
	f.released = append(f.released, id)
	f.mu.Unlock()
	if f.release != nil {
		return f.release(ctx, id)
	}
	return nil
}

func (f *fakeTool) lifecycle() (created, released []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.created...), append([]string(nil), f.released...)
}

func call(name, args string) chat.ToolCall {
	return chat.ToolCall{Type: "function", Function: chat.FunctionCall{Name: name, Arguments: args}}
}

func TestNewSetErrors(t *testing.T) {
	_, err := NewSet(&fakeTool{name: "a"}, &fakeTool{name: "a"})
	require.ErrorContains(t, err, `duplicate tool name "a"`)
	_, err = NewSet(&fakeTool{name: ""})
	require.ErrorContains(t, err, "empty name")
	_, err = NewSet(nil)
	require.ErrorContains(t, err, "tool 0 is nil")
	_, err = NewSet(&fakeTool{name: "bad", params: `{"type": 12}`})
	require.ErrorContains(t, err, `tool "bad"`)
	_, err = NewSet(&fakeTool{name: "ref", params: `{"$ref": "file:///etc/passwd"}`})
	require.Error(t, err, "remote references must not be loaded")
}

func TestSetSchemasSubset(t *testing.T) {
	a, b, c := &fakeTool{name: "a"}, &fakeTool{name: "b"}, &fakeTool{name: "c"}
	s, err := NewSet(a, b, c)
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b", "c"}, s.Names())
	require.Len(t, s.Schemas(), 3)
	require.Equal(t, "b", s.Schemas()[1].Function.Name)

	sub, err := s.Subset([]string{"c", "a"})
	require.NoError(t, err)
	require.Equal(t, []string{"c", "a"}, sub.Names())
	_, err = s.Subset([]string{"a", "zzz"})
	require.ErrorIs(t, err, ErrUnknownTool)
	require.ErrorContains(t, err, `"zzz" (have a, b, c)`)
	_, err = s.Subset([]string{"a", "a"})
	require.ErrorContains(t, err, "listed twice")

	// Limits are per tool, shared by subsets.
	require.NoError(t, s.SetLimits("a", Limits{MaxConcurrency: 2}))
	require.Equal(t, 2, sub.Limits("a").MaxConcurrency)
	require.ErrorIs(t, s.SetLimits("nope", Limits{}), ErrUnknownTool)
	require.ErrorContains(t, s.SetLimits("a", Limits{Timeout: -1}), "negative")

	// Unknown tools in a subset session are unknown.
	ss := sub.Session(nil)
	r := ss.Call(context.Background(), call("b", `{}`))
	require.ErrorIs(t, r.Err, ErrUnknownTool)
	require.Equal(t, `Error: unknown tool "b"; available tools: c, a`, r.Text)
	require.NoError(t, ss.Close(context.Background()))
}

func TestSessionLifecycle(t *testing.T) {
	ctx := context.Background()
	a, b := &fakeTool{name: "a"}, &fakeTool{name: "b"}
	s, err := NewSet(a, b)
	require.NoError(t, err)
	ss := s.Session(map[string]map[string]any{"a": {"ground_truth": "42"}})

	r := ss.Call(ctx, call("a", `{"x": 1}`))
	require.NoError(t, r.Err)
	require.Equal(t, `ok a-1 {"x": 1}`, r.Text)
	r = ss.Call(ctx, call("a", ``)) // empty arguments mean {}
	require.NoError(t, r.Err)
	require.Equal(t, `ok a-1 {}`, r.Text, "one instance per tool per session")
	require.Positive(t, r.Duration)

	created, released := a.lifecycle()
	require.Equal(t, []string{"a-1"}, created)
	require.Empty(t, released)
	require.Equal(t, []map[string]any{{"ground_truth": "42"}}, a.kwargs)
	bc, _ := b.lifecycle()
	require.Empty(t, bc, "instances are created lazily")

	require.NoError(t, ss.Close(ctx))
	_, released = a.lifecycle()
	require.Equal(t, []string{"a-1"}, released)
	require.NoError(t, ss.Close(ctx), "Close is idempotent")
	_, released = a.lifecycle()
	require.Len(t, released, 1)

	r = ss.Call(ctx, call("a", `{}`))
	require.ErrorIs(t, r.Err, ErrSessionClosed)

	// A second session gets its own instance.
	ss2 := s.Session(nil)
	require.Equal(t, `ok a-2 {}`, ss2.Call(ctx, call("a", `{}`)).Text)
	require.NoError(t, ss2.Close(ctx))
}

func TestSessionConcurrentFirstCallsCreateOnce(t *testing.T) {
	a := &fakeTool{name: "a", create: func(ctx context.Context, _ map[string]any) (string, error) {
		time.Sleep(5 * time.Millisecond)
		return "only", nil
	}}
	s, err := NewSet(a)
	require.NoError(t, err)
	ss := s.Session(nil)
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := ss.Call(context.Background(), call("a", `{"x": 2}`))
			require.NoError(t, r.Err)
		}()
	}
	wg.Wait()
	require.NoError(t, ss.Close(context.Background()))
	created, released := a.lifecycle()
	require.Equal(t, []string{"only"}, created)
	require.Equal(t, []string{"only"}, released)
}

// TestCallErrorsAreValues covers every failure kind the agent loop must be
// able to show the model: none may panic or escape as anything but a value.
func TestCallErrorsAreValues(t *testing.T) {
	ctx := context.Background()
	block := make(chan struct{})
	defer close(block)
	tools := []Tool{
		&fakeTool{name: "echo", params: `{"type":"object","properties":{"expression":{"type":"string"},"n":{"type":"integer","minimum":1}},"required":["expression"],"additionalProperties":false}`},
		&fakeTool{name: "boom", execute: func(context.Context, string, json.RawMessage) (Result, error) {
			var m map[string]int
			//lint:ignore SA5000 the nil map write is the point: a real runtime panic
			m["x"] = 1
			return Result{}, nil
		}},
		&fakeTool{name: "createboom", create: func(context.Context, map[string]any) (string, error) { panic("no instance for you") }},
		&fakeTool{name: "fails", execute: func(context.Context, string, json.RawMessage) (Result, error) {
			return Result{}, errors.New("disk full")
		}},
		&fakeTool{name: "createfails", create: func(context.Context, map[string]any) (string, error) {
			return "", errors.New("quota exceeded")
		}},
		&fakeTool{name: "slow", execute: func(ctx context.Context, _ string, _ json.RawMessage) (Result, error) {
			<-ctx.Done()
			return Result{}, ctx.Err()
		}},
		&fakeTool{name: "deaf", execute: func(context.Context, string, json.RawMessage) (Result, error) {
			<-block // ignores its context
			return Result{Text: "late"}, nil
		}},
		&fakeTool{name: "limited"},
	}
	s, err := NewSet(tools...)
	require.NoError(t, err)
	require.NoError(t, s.SetLimits("slow", Limits{Timeout: 20 * time.Millisecond}))
	require.NoError(t, s.SetLimits("deaf", Limits{Timeout: 20 * time.Millisecond}))
	require.NoError(t, s.SetLimits("limited", Limits{RatePerSecond: 0.001, Burst: 1}))

	ss := s.Session(nil)
	// Use up the one token of "limited".
	require.NoError(t, ss.Call(ctx, call("limited", `{}`)).Err)

	tests := []struct {
		name, tool, args string
		ctx              func() (context.Context, context.CancelFunc)
		is               error
		text, errHas     string
		kind             string // ErrorKind(r.Err)
	}{
		{name: "unknown tool", tool: "nope", args: `{}`, is: ErrUnknownTool, kind: OutcomeUnknownTool,
			text: `Error: unknown tool "nope"; available tools: echo, boom, createboom, fails, createfails, slow, deaf, limited`},
		{name: "wrong type", tool: "echo", args: `{"expression": 12}`, is: ErrInvalidArguments, kind: OutcomeInvalidArguments,
			text: `Error: invalid arguments for tool "echo": /expression: expected string, got number`},
		{name: "missing required", tool: "echo", args: `{}`, is: ErrInvalidArguments, kind: OutcomeInvalidArguments,
			text: `Error: invalid arguments for tool "echo": /: missing required property "expression"`},
		{name: "extra property and minimum", tool: "echo", args: `{"expression": "1", "n": 0, "zz": true}`, is: ErrInvalidArguments, kind: OutcomeInvalidArguments,
			text: `Error: invalid arguments for tool "echo": /: unexpected property "zz"; /n: minimum: got 0, want 1`},
		{name: "not JSON", tool: "echo", args: `{"expression": "1"`, is: ErrInvalidArguments, kind: OutcomeInvalidArguments,
			text: `Error: invalid arguments for tool "echo": arguments are not valid JSON: unexpected end of JSON input`},
		{name: "not an object", tool: "echo", args: `["1"]`, is: ErrInvalidArguments, kind: OutcomeInvalidArguments,
			text: `Error: invalid arguments for tool "echo": arguments must be a JSON object, got an array`},
		{name: "panic in Execute", tool: "boom", args: `{}`, is: ErrPanic, kind: OutcomePanic,
			text: `Error: tool "boom" crashed (internal error)`, errHas: "assignment to entry in nil map"},
		{name: "panic in Create", tool: "createboom", args: `{}`, is: ErrPanic, kind: OutcomePanic,
			text: `Error: tool "createboom" crashed (internal error)`, errHas: "in Create: no instance for you"},
		{name: "execute error", tool: "fails", args: `{}`, is: ErrExecution, kind: OutcomeExecution,
			text: `Error when executing tool "fails": disk full`},
		{name: "create error", tool: "createfails", args: `{}`, is: ErrExecution, kind: OutcomeExecution,
			text: `Error when executing tool "createfails": create instance: quota exceeded`},
		{name: "timeout, tool honours ctx", tool: "slow", args: `{}`, is: ErrTimeout, kind: OutcomeTimeout,
			text: `Error: tool "slow" timed out`, errHas: "per-call timeout of 20ms"},
		{name: "timeout, tool ignores ctx", tool: "deaf", args: `{}`, is: ErrTimeout, kind: OutcomeTimeout,
			text: `Error: tool "deaf" timed out`, errHas: "did not return"},
		{name: "rate limited", tool: "limited", args: `{}`, is: ErrRateLimited, kind: OutcomeRateLimited,
			ctx:  func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) },
			text: `Error: tool "limited" is rate limited; try again later`},
		{name: "cancelled", tool: "echo", args: `{"expression": "1"}`, is: ErrCanceled, kind: OutcomeCanceled,
			ctx: func() (context.Context, context.CancelFunc) {
				c, cancel := context.WithCancel(ctx)
				cancel()
				return c, cancel
			},
			text: `Error: tool "echo" call was cancelled`},
	}
	// A call whose context can end runs the tool on a goroutine it can
	// abandon; one that nothing can cancel runs it in place. Both give
	// the same results.
	for _, mode := range []string{"cancellable", "uncancellable"} {
		for _, tc := range tests {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				c, cancel := context.WithCancel(ctx)
				if mode == "uncancellable" {
					c = context.WithoutCancel(c)
				}
				if tc.ctx != nil {
					c, cancel = tc.ctx()
				}
				defer cancel()
				r := ss.Call(c, call(tc.tool, tc.args))
				require.ErrorIs(t, r.Err, tc.is)
				require.Equal(t, tc.kind, ErrorKind(r.Err))
				require.Equal(t, tc.text, r.Text)
				require.Equal(t, tc.tool, r.Name)
				if tc.errHas != "" {
					require.ErrorContains(t, r.Err, tc.errHas)
				}
			})
		}
	}
	// Close gives up waiting for the deaf call when its context ends, and
	// still releases every instance that was created.
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	err = ss.Close(cctx)
	require.ErrorContains(t, err, "calls still running")
	for _, tl := range tools {
		created, released := tl.(*fakeTool).lifecycle()
		require.ElementsMatch(t, created, released, tl.(*fakeTool).name)
	}
}

func TestPanicErrorHasStack(t *testing.T) {
	s, err := NewSet(&fakeTool{name: "boom", execute: func(context.Context, string, json.RawMessage) (Result, error) {
		panic(fmt.Sprintf("bad state %d", 7))
	}})
	require.NoError(t, err)
	ss := s.Session(nil)
	r := ss.Call(context.Background(), call("boom", `{}`))
	require.ErrorIs(t, r.Err, ErrPanic)
	require.Contains(t, r.Err.Error(), "bad state 7")
	require.Contains(t, r.Err.Error(), "set_test.go", "the stack names the panicking code")
	require.NotContains(t, r.Text, "set_test.go", "the model never sees a stack")
	require.NoError(t, ss.Close(context.Background()))
}

// TestCloseAfterPanicAndCancel: a trajectory whose tool panicked and whose
// context was cancelled still releases every instance, and Release errors
// (and panics) are joined.
func TestCloseAfterPanicAndCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var releaseCtxErr error
	p := &fakeTool{name: "p", execute: func(context.Context, string, json.RawMessage) (Result, error) { panic("oops") }}
	q := &fakeTool{name: "q", release: func(ctx context.Context, id string) error {
		releaseCtxErr = ctx.Err()
		return errors.New("q release failed")
	}}
	r := &fakeTool{name: "r", release: func(context.Context, string) error { panic("release panic") }}
	s, err := NewSet(p, q, r)
	require.NoError(t, err)
	ss := s.Session(nil)
	require.ErrorIs(t, ss.Call(ctx, call("p", `{}`)).Err, ErrPanic)
	require.NoError(t, ss.Call(ctx, call("q", `{}`)).Err)
	require.NoError(t, ss.Call(ctx, call("r", `{}`)).Err)
	cancel()
	require.ErrorIs(t, ss.Call(ctx, call("q", `{}`)).Err, ErrCanceled)

	err = ss.Close(ctx)
	require.ErrorContains(t, err, "q release failed")
	require.ErrorIs(t, err, ErrPanic)
	require.ErrorContains(t, err, "release panic")
	require.NoError(t, releaseCtxErr, "Release gets a context that is not cancelled")
	for _, tl := range []*fakeTool{p, q, r} {
		created, released := tl.lifecycle()
		require.Len(t, created, 1, tl.name)
		require.Equal(t, created, released, tl.name)
	}
}

func TestConcurrencyCap(t *testing.T) {
	var cur, peak atomic.Int64
	tl := &fakeTool{name: "cap", execute: func(ctx context.Context, _ string, _ json.RawMessage) (Result, error) {
		n := cur.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond)
		cur.Add(-1)
		return Result{Text: "done"}, nil
	}}
	s, err := NewSet(tl)
	require.NoError(t, err)
	require.NoError(t, s.SetLimits("cap", Limits{MaxConcurrency: 3}))
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() { // one session per trajectory: the cap is across sessions
			defer wg.Done()
			ss := s.Session(nil)
			defer func() { require.NoError(t, ss.Close(context.Background())) }()
			for j := 0; j < 5; j++ {
				require.NoError(t, ss.Call(context.Background(), call("cap", `{}`)).Err)
			}
		}()
	}
	wg.Wait()
	// Never over the cap; and the cap is really reached (30 calls of 2ms
	// from 6 goroutines overlap unless the machine is starved).
	require.LessOrEqual(t, peak.Load(), int64(3))
	require.GreaterOrEqual(t, peak.Load(), int64(2))
}

func TestConcurrencySlotWaitIsBoundedByContext(t *testing.T) {
	release := make(chan struct{})
	tl := &fakeTool{name: "one", execute: func(ctx context.Context, _ string, _ json.RawMessage) (Result, error) {
		<-release
		return Result{Text: "ok"}, nil
	}}
	s, err := NewSet(tl)
	require.NoError(t, err)
	require.NoError(t, s.SetLimits("one", Limits{MaxConcurrency: 1}))
	ss := s.Session(nil)
	done := make(chan CallResult)
	go func() { done <- ss.Call(context.Background(), call("one", `{}`)) }()
	for tl.n.Load() == 0 { // wait until the first call holds the slot
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	r := ss.Call(ctx, call("one", `{}`))
	require.ErrorIs(t, r.Err, ErrTimeout)
	require.ErrorContains(t, r.Err, "waiting for a free slot")
	close(release)
	require.NoError(t, (<-done).Err)
	require.NoError(t, ss.Close(context.Background()))
}

func TestRateLimitWaitsForTokens(t *testing.T) {
	tl := &fakeTool{name: "rl"}
	s, err := NewSet(tl)
	require.NoError(t, err)
	require.NoError(t, s.SetLimits("rl", Limits{RatePerSecond: 200, Burst: 2}))
	ss := s.Session(nil)
	start := time.Now()
	for i := 0; i < 6; i++ {
		require.NoError(t, ss.Call(context.Background(), call("rl", `{}`)).Err)
	}
	// 2 from the burst, 4 more at 200/s: at least ~20ms. (A lower bound
	// only: the token bucket can never be faster than its rate.)
	require.GreaterOrEqual(t, time.Since(start), 15*time.Millisecond)
	require.NoError(t, ss.Close(context.Background()))
}

func TestCallResultCarriesRewardAndMetrics(t *testing.T) {
	tl := &fakeTool{name: "m", execute: func(context.Context, string, json.RawMessage) (Result, error) {
		return Result{Text: "t", Reward: 0.5, Metrics: map[string]float64{"k": 2}}, nil
	}}
	s, err := NewSet(tl)
	require.NoError(t, err)
	ss := s.Session(nil)
	r := ss.Call(context.Background(), call("m", `{}`))
	require.NoError(t, r.Err)
	require.Equal(t, 0.5, r.Reward)
	require.Equal(t, map[string]float64{"k": 2}, r.Metrics)
	require.NoError(t, ss.Close(context.Background()))
}

// FuzzCallArguments feeds arbitrary argument text (what a model writes) to
// a schema-checked tool: the call must come back as a value, either a
// result or ErrInvalidArguments, never a panic.
func FuzzCallArguments(f *testing.F) {
	for _, s := range []string{`{"expression": "1+1"}`, `{"expression": 1}`, `{`, `[]`, ``, `null`, `{"expression": "1", "x": [1, {"y": null}]}`, "{\"expression\": \"\xff\"}", `"str"`} {
		f.Add(s)
	}
	s, err := NewSet(NewCalculator())
	if err != nil {
		f.Fatal(err)
	}
	ss := s.Session(nil)
	defer ss.Close(context.Background())
	f.Fuzz(func(t *testing.T, args string) {
		r := ss.Call(context.Background(), call("calculator", args))
		if r.Err != nil && !errors.Is(r.Err, ErrInvalidArguments) && !errors.Is(r.Err, ErrExecution) {
			t.Fatalf("unexpected error kind for %q: %v", args, r.Err)
		}
		if r.Err != nil && r.Text == "" {
			t.Fatalf("failed call without a message for the model: %q", args)
		}
	})
}

// TestCloseRacingCalls: calls that race with Close either finish before it
// or fail with ErrSessionClosed, and every instance created is released.
func TestCloseRacingCalls(t *testing.T) {
	for round := 0; round < 20; round++ {
		tl := &fakeTool{name: "t", execute: func(ctx context.Context, _ string, _ json.RawMessage) (Result, error) {
			time.Sleep(time.Duration(rand.Intn(200)) * time.Microsecond)
			return Result{Text: "ok"}, nil
		}}
		s, err := NewSet(tl)
		require.NoError(t, err)
		ss := s.Session(nil)
		var wg sync.WaitGroup
		for i := 0; i < 8; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := ss.Call(context.Background(), call("t", `{}`))
				if r.Err != nil {
					require.ErrorIs(t, r.Err, ErrSessionClosed)
				}
			}()
		}
		time.Sleep(time.Duration(rand.Intn(300)) * time.Microsecond)
		require.NoError(t, ss.Close(context.Background()))
		wg.Wait()
		created, released := tl.lifecycle()
		require.ElementsMatch(t, created, released, "round %d", round)
	}
}

type closerTool struct {
	fakeTool
	closed int
	err    error
}

func (c *closerTool) Close() error { c.closed++; return c.err }

func TestSetClose(t *testing.T) {
	a := &closerTool{fakeTool: fakeTool{name: "a"}}
	b := &closerTool{fakeTool: fakeTool{name: "b"}, err: errors.New("conn reset")}
	s, err := NewSet(a, &fakeTool{name: "plain"}, b)
	require.NoError(t, err)
	err = s.Close(context.Background())
	require.EqualError(t, err, `tool "b": close: conn reset`)
	require.Equal(t, 1, a.closed)
	require.Equal(t, 1, b.closed)
}

type ctxCloserTool struct {
	fakeTool
	got context.Context
}

func (c *ctxCloserTool) Close(ctx context.Context) error { c.got = ctx; return ctx.Err() }

// TestSetCloseContext: Set.Close takes a context like Session.Close and
// hands it to tools that can use it; the others are still closed when it
// is done.
func TestSetCloseContext(t *testing.T) {
	type key struct{}
	c := &ctxCloserTool{fakeTool: fakeTool{name: "remote"}}
	plain := &closerTool{fakeTool: fakeTool{name: "plain"}}
	s, err := NewSet(c, plain)
	require.NoError(t, err)
	ctx := context.WithValue(context.Background(), key{}, 1)
	require.NoError(t, s.Close(ctx))
	require.Equal(t, 1, c.got.Value(key{}))

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	err = s.Close(cancelled)
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, 2, plain.closed, "closed although ctx was done")
}
