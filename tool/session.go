package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/chat"
)

// CallResult is the outcome of one tool call. A failed call is a value, not
// a crash: Err says what kind of failure it was (errors.Is with ErrUnknownTool,
// ErrInvalidArguments, ErrTimeout, ErrPanic, ErrRateLimited, ErrExecution,
// ErrCanceled or ErrSessionClosed) and Text is a short message for the model.
type CallResult struct {
	Name     string
	Text     string // the result text, or a short error message meant for the model
	Reward   float64
	Metrics  map[string]float64
	Err      error
	Duration time.Duration
	// Images are the tool's images (Result.Images); none when it failed.
	Images []chat.Image
}

// InvalidArgumentsRewarder is implemented by a tool whose calls with
// arguments its schema refuses get a reward of its own, as the tool would
// give them: verl's ImageZoomInTool checks bbox_2d inside execute and gives
// a malformed one −0.05, where agentrl's schema check refuses it first.
// Such a call still never reaches Execute.
type InvalidArgumentsRewarder interface {
	InvalidArgumentsReward() float64
}

// Session is the per-trajectory view of a Set. Each tool's instance is
// created on its first call (with that tool's create kwargs) and released by
// Close. Calls may run concurrently.
type Session struct {
	set     *Set
	kwargs  map[string]map[string]any
	observe func(InstanceEvent) // nil: no observer

	mu      sync.Mutex
	closed  bool
	inst    map[string]*instance
	running int           // goroutines running tool code for this session
	idle    chan struct{} // made by Close when running > 0; closed when it drops to 0
}

// instance is one tool's per-trajectory instance. lock is a one-slot
// channel so that waiting for a concurrent Create can be cancelled.
type instance struct {
	lock      chan struct{}
	id        string
	created   bool
	createdAt time.Time // when Create returned, for InstanceEvent.Lifetime
}

// Call runs one tool call: look the tool up, validate the arguments against
// its schema, wait for a concurrency slot and a rate token, create the
// instance if this is the tool's first call in the session, and Execute
// under the tool's timeout. It never panics and never blocks past ctx: a
// tool that ignores its context is abandoned (it keeps its concurrency slot
// until it really returns) and the call fails with ErrTimeout or ErrCanceled.
// When nothing can end ctx and the tool has no timeout, there is nothing
// to abandon a tool for, and its code runs on the calling goroutine.
func (ss *Session) Call(ctx context.Context, call chat.ToolCall) (res CallResult) {
	start := time.Now()
	name := call.Function.Name
	res.Name = name
	defer func() {
		if p := recover(); p != nil { // a bug here must not take the rollout down
			err := panicError(name, "Call", p)
			res = CallResult{Name: name, Text: modelText(name, err), Err: err}
		}
		res.Duration = time.Since(start)
	}()

	fail := func(err error) CallResult {
		return CallResult{Name: name, Text: modelText(name, err), Err: err}
	}
	ss.mu.Lock()
	closed := ss.closed
	ss.mu.Unlock()
	if closed {
		return fail(fmt.Errorf("tool %q: %w", name, ErrSessionClosed))
	}
	e, ok := ss.set.byName[name]
	if !ok {
		return fail(fmt.Errorf("%w %q; available tools: %s", ErrUnknownTool, name, strings.Join(ss.set.names, ", ")))
	}
	args, err := e.checkArgs(call.Function.Arguments)
	if err != nil {
		res := fail(fmt.Errorf("tool %q: %w", name, err))
		if r, ok := e.tool.(InvalidArgumentsRewarder); ok {
			res.Reward = r.InvalidArgumentsReward()
		}
		return res
	}
	if err := ctx.Err(); err != nil {
		return fail(ctxError(ctx, name, "before it started"))
	}
	lim := e.lim.Load()
	release, err := lim.acquire(ctx, name)
	if err != nil {
		return fail(err)
	}
	callCtx, cancel := ctx, context.CancelFunc(func() {})
	if lim.l.Timeout > 0 {
		callCtx, cancel = context.WithTimeoutCause(ctx, lim.l.Timeout,
			fmt.Errorf("per-call timeout of %v", lim.l.Timeout))
	}
	defer cancel()

	ss.mu.Lock()
	ss.running++
	ss.mu.Unlock()
	if callCtx.Done() == nil {
		// Nothing can cancel this call (no deadline, no cancellation), so
		// the select below could only ever return the tool's outcome:
		// run the tool here instead of handing it to a goroutine and
		// waking up for its answer, which costs microseconds per call.
		var o outcome
		ss.execute(callCtx, e, args, release, func(x outcome) { o = x })
		return o.result(name, fail)
	}
	done := make(chan outcome, 1)
	go func() {
		growStack()
		ss.execute(callCtx, e, args, release, func(o outcome) { done <- o })
	}()

	select {
	case o := <-done:
		return o.result(name, fail)
	case <-callCtx.Done():
		return fail(ctxError(callCtx, name, "(the tool did not return)"))
	}
}

// outcome is what running a tool call produced.
type outcome struct {
	r   Result
	err error
}

func (o outcome) result(name string, fail func(error) CallResult) CallResult {
	if o.err != nil {
		return fail(o.err)
	}
	return CallResult{Name: name, Text: o.r.Text, Reward: o.r.Reward, Metrics: o.r.Metrics, Images: o.r.Images}
}

// execute runs one call's tool code: the instance (created on first use),
// then Execute. It hands the outcome, a panic included, to deliver, then
// releases the call's concurrency slot and ends the session's count of
// running tool code.
func (ss *Session) execute(ctx context.Context, e *entry, args json.RawMessage, release func(), deliver func(outcome)) {
	defer ss.done()
	defer release()
	name := e.name
	stage := "Create"
	defer func() {
		if p := recover(); p != nil {
			deliver(outcome{err: panicError(name, stage, p)})
		}
	}()
	id, err := ss.instanceID(ctx, e)
	if err != nil {
		deliver(outcome{err: err})
		return
	}
	stage = "Execute"
	r, err := e.tool.Execute(ctx, id, args)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			err = ctxError(ctx, name, "during Execute")
		} else {
			err = fmt.Errorf("tool %q: %w: %w", name, ErrExecution, err)
		}
	}
	deliver(outcome{r: r, err: err})
}

// toolStack is the stack room reserved for tool code. A goroutine starts
// with a small stack that tool code (encoding/json decoding the arguments
// through reflection, to begin with) outgrows at once; growing it there
// copies every frame already on the stack, which cost several microseconds
// per call. Reserving the room first, while the stack is still empty,
// copies next to nothing; the runtime shrinks stacks that stay unused.
const toolStack = 8 << 10

// growStack grows the calling goroutine's stack to hold toolStack bytes.
func growStack() {
	var room [toolStack]byte
	touchStack(&room)
}

// touchStack keeps growStack's frame (and so the growth) from being
// optimized away.
//
//go:noinline
func touchStack(room *[toolStack]byte) { room[0] = 0 }

// instanceID returns the session's instance of e, creating it on first use.
func (ss *Session) instanceID(ctx context.Context, e *entry) (string, error) {
	ss.mu.Lock()
	in, ok := ss.inst[e.name]
	if !ok {
		in = &instance{lock: make(chan struct{}, 1)}
		ss.inst[e.name] = in
	}
	ss.mu.Unlock()

	select {
	case in.lock <- struct{}{}: // uncontended, the usual case: no need to watch ctx
	default:
		select {
		case in.lock <- struct{}{}:
		case <-ctx.Done():
			return "", ctxError(ctx, e.name, "while waiting for its instance to be created")
		}
	}
	defer func() { <-in.lock }()
	// created and id are written under ss.mu (Close clears created), so
	// they are read under it too.
	ss.mu.Lock()
	created, id := in.created, in.id
	ss.mu.Unlock()
	if created {
		return id, nil
	}
	id, err := ss.create(ctx, e)
	if err != nil {
		return "", err
	}
	createdAt := time.Now()
	ss.mu.Lock()
	closed := ss.closed
	if !closed {
		in.id, in.created, in.createdAt = id, true, createdAt
	}
	ss.mu.Unlock()
	if closed {
		// Close already released everything it knew about; this instance was
		// created by a call it had to abandon, so release it here.
		_ = ss.release(context.WithoutCancel(ctx), e, id, createdAt)
		return "", fmt.Errorf("tool %q: %w", e.name, ErrSessionClosed)
	}
	return id, nil
}

// create runs e's Create and reports it to the observer, a panic included
// (the panic itself goes on to execute's recover).
func (ss *Session) create(ctx context.Context, e *entry) (id string, err error) {
	t0 := time.Now()
	returned := false
	if ss.observe != nil {
		defer func() {
			if !returned { // panicking: report it, then let it go on
				err = fmt.Errorf("tool %q: %w in Create", e.name, ErrPanic)
			}
			ss.observe(InstanceEvent{Tool: e.name, Latency: time.Since(t0), Err: err})
		}()
	}
	id, err = e.tool.Create(ctx, ss.kwargs[e.name])
	returned = true
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return "", ctxError(ctx, e.name, "during Create")
		}
		return "", fmt.Errorf("tool %q: %w: create instance: %w", e.name, ErrExecution, err)
	}
	return id, nil
}

// release releases one instance and reports it to the observer.
func (ss *Session) release(ctx context.Context, e *entry, id string, createdAt time.Time) error {
	t0 := time.Now()
	err := safeRelease(ctx, e, id)
	if ss.observe != nil {
		ss.observe(InstanceEvent{Tool: e.name, Released: true, Latency: time.Since(t0), Lifetime: t0.Sub(createdAt), Err: err})
	}
	return err
}

// Close releases every instance the session created and returns the joined
// Release errors. It first waits, bounded by ctx, for calls still running
// tool code; Release itself gets a context that is not cancelled with ctx,
// because a cancelled trajectory must still give its resources back. Calls
// after Close fail with ErrSessionClosed; Close is idempotent.
func (ss *Session) Close(ctx context.Context) error {
	ss.mu.Lock()
	if ss.closed {
		ss.mu.Unlock()
		return nil
	}
	ss.closed = true
	ss.mu.Unlock()

	var errs []error
	ss.mu.Lock()
	if ss.running > 0 {
		ss.idle = make(chan struct{})
		idle, n := ss.idle, ss.running
		ss.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("tool: session close: %d calls still running: %w", n, context.Cause(ctx)))
		}
		ss.mu.Lock()
	}
	type pending struct {
		e         *entry
		id        string
		createdAt time.Time
	}
	var todo []pending
	for _, name := range ss.set.names { // set order: deterministic error order
		in, ok := ss.inst[name]
		if ok && in.created {
			todo = append(todo, pending{ss.set.byName[name], in.id, in.createdAt})
			in.created = false
		}
	}
	ss.mu.Unlock()

	rctx := context.WithoutCancel(ctx)
	for _, p := range todo {
		if err := ss.release(rctx, p.e, p.id, p.createdAt); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// done ends one goroutine of tool code.
func (ss *Session) done() {
	ss.mu.Lock()
	ss.running--
	if ss.running == 0 && ss.idle != nil {
		close(ss.idle)
		ss.idle = nil
	}
	ss.mu.Unlock()
}

func safeRelease(ctx context.Context, e *entry, id string) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = panicError(e.name, "Release", p)
		}
	}()
	if err := e.tool.Release(ctx, id); err != nil {
		return fmt.Errorf("tool %q: release instance %q: %w", e.name, id, err)
	}
	return nil
}

// panicError keeps the panic value and a short stack (the frames nearest the
// panic) so that the bug can be found without flooding logs.
func panicError(name, stage string, p any) error {
	return fmt.Errorf("tool %q: %w in %s: %v\n%s", name, ErrPanic, stage, p, shortStack(debug.Stack(), 12))
}

// shortStack keeps the first n lines after the panic frames of a stack.
func shortStack(st []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(st)), "\n")
	// Skip the goroutine header, debug.Stack, this file's recover frames and
	// runtime/panic.go, so the first frames shown are the panicking code.
	for i := 0; i < len(lines); i++ {
		if strings.Contains(lines[i], "panic(") && i+1 < len(lines) && strings.Contains(lines[i+1], "runtime/panic.go") {
			lines = lines[i+2:]
			break
		}
	}
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "\n")
}

// modelText words an error for the model: the kind and the useful detail,
// never a stack trace.
func modelText(name string, err error) string {
	switch {
	case errors.Is(err, ErrUnknownTool):
		return "Error: " + err.Error()
	case errors.Is(err, ErrInvalidArguments):
		msg := err.Error()
		if i := strings.Index(msg, ErrInvalidArguments.Error()+": "); i >= 0 {
			msg = msg[i+len(ErrInvalidArguments.Error())+2:]
		}
		return fmt.Sprintf("Error: invalid arguments for tool %q: %s", name, msg)
	case errors.Is(err, ErrTimeout):
		return fmt.Sprintf("Error: tool %q timed out", name)
	case errors.Is(err, ErrPanic):
		return fmt.Sprintf("Error: tool %q crashed (internal error)", name)
	case errors.Is(err, ErrRateLimited):
		return fmt.Sprintf("Error: tool %q is rate limited; try again later", name)
	case errors.Is(err, ErrCanceled):
		return fmt.Sprintf("Error: tool %q call was cancelled", name)
	case errors.Is(err, ErrSessionClosed):
		return fmt.Sprintf("Error: tool %q is no longer available in this conversation", name)
	}
	msg := err.Error()
	if i := strings.Index(msg, ErrExecution.Error()+": "); i >= 0 {
		msg = msg[i+len(ErrExecution.Error())+2:]
	}
	return fmt.Sprintf("Error when executing tool %q: %s", name, msg)
}
