package tool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/agentrl/agentrl/chat"
)

// Set is a named collection of tools with their validators and limits. It
// is safe for concurrent use; one Set serves every trajectory of a rollout.
type Set struct {
	names  []string
	byName map[string]*entry
}

// entry is one tool of a Set. Subsets share entries, so limits are per tool
// across every Set derived from the same NewSet call.
type entry struct {
	name   string
	tool   Tool
	schema chat.ToolSchema
	params *jsonschema.Schema // nil: any JSON object is accepted
	lim    atomic.Pointer[limiter]
}

type limiter struct {
	l   Limits
	sem *semaphore.Weighted // nil: unlimited
	rl  *rate.Limiter       // nil: unlimited
}

var noLimits = &limiter{}

// NewSet builds a set from tools. Names come from each tool's schema and must
// be unique and non-empty; each schema's parameters must be a valid JSON
// Schema (they are compiled once here and checked before every Execute).
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{byName: make(map[string]*entry, len(tools))}
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("tool: NewSet: tool %d is nil", i)
		}
		sc := t.Schema()
		name := sc.Function.Name
		if name == "" {
			return nil, fmt.Errorf("tool: NewSet: tool %d (%T) has an empty name", i, t)
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("tool: NewSet: duplicate tool name %q", name)
		}
		params, err := compileParams(sc.Function.Parameters)
		if err != nil {
			return nil, fmt.Errorf("tool: NewSet: tool %q: %w", name, err)
		}
		e := &entry{name: name, tool: t, schema: sc, params: params}
		e.lim.Store(noLimits)
		s.names = append(s.names, name)
		s.byName[name] = e
	}
	return s, nil
}

// SetLimits sets the limits of one tool. It applies to calls that start
// after it returns, in this set and in every set sharing the tool (Subset).
func (s *Set) SetLimits(name string, l Limits) error {
	e, ok := s.byName[name]
	if !ok {
		return fmt.Errorf("tool: SetLimits: %w %q (have %s)", ErrUnknownTool, name, strings.Join(s.names, ", "))
	}
	if l.MaxConcurrency < 0 || l.RatePerSecond < 0 || l.Burst < 0 || l.Timeout < 0 {
		return fmt.Errorf("tool: SetLimits %q: limits must not be negative: %+v", name, l)
	}
	lim := &limiter{l: l}
	if l.MaxConcurrency > 0 {
		lim.sem = semaphore.NewWeighted(int64(l.MaxConcurrency))
	}
	if l.RatePerSecond > 0 {
		b := l.Burst
		if b == 0 {
			b = 1
		}
		lim.rl = rate.NewLimiter(rate.Limit(l.RatePerSecond), b)
	}
	e.lim.Store(lim)
	return nil
}

// Limits returns the limits of one tool (zero if unknown).
func (s *Set) Limits(name string) Limits {
	if e, ok := s.byName[name]; ok {
		return e.lim.Load().l
	}
	return Limits{}
}

// Names returns the tool names in set order.
func (s *Set) Names() []string { return append([]string(nil), s.names...) }

// Tool returns the tool with the given name.
func (s *Set) Tool(name string) (Tool, bool) {
	e, ok := s.byName[name]
	if !ok {
		return nil, false
	}
	return e.tool, true
}

// Schemas returns the tool schemas in set order, as a chat template wants them.
func (s *Set) Schemas() []chat.ToolSchema {
	out := make([]chat.ToolSchema, len(s.names))
	for i, n := range s.names {
		out[i] = s.byName[n].schema
	}
	return out
}

// Subset returns the set of the named tools, in the order given, for
// per-sample tool selection. The subset shares validators and limits with s.
func (s *Set) Subset(names []string) (*Set, error) {
	sub := &Set{byName: make(map[string]*entry, len(names))}
	for _, n := range names {
		e, ok := s.byName[n]
		if !ok {
			return nil, fmt.Errorf("tool: Subset: %w %q (have %s)", ErrUnknownTool, n, strings.Join(s.names, ", "))
		}
		if _, dup := sub.byName[n]; dup {
			return nil, fmt.Errorf("tool: Subset: %q listed twice", n)
		}
		sub.names = append(sub.names, n)
		sub.byName[n] = e
	}
	return sub, nil
}

// Close closes every tool of the set that holds connections or processes
// and returns the joined errors. A set loaded from a config owns its tools:
// close it once when the rollout is done; subsets share the tools and are
// not closed separately.
//
// It takes a context like Session.Close: a tool whose Close takes one
// (ContextCloser) gets ctx, which bounds it; a tool that implements
// io.Closer (as MCP tools do) is closed as it is. Every tool is closed even
// after ctx is done, so that a cancelled rollout still releases its
// servers.
func (s *Set) Close(ctx context.Context) error {
	var errs []error
	for _, n := range s.names {
		var err error
		switch c := s.byName[n].tool.(type) {
		case ContextCloser:
			err = c.Close(ctx)
		case io.Closer:
			err = c.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("tool %q: close: %w", n, err))
		}
	}
	return errors.Join(errs...)
}

// ContextCloser is implemented by tools whose shutdown can block (a remote
// session, a process to stop) and can be bounded by a context; Set.Close
// calls it.
type ContextCloser interface {
	Close(ctx context.Context) error
}

// Session starts the per-trajectory view of s. createKwargs maps a tool name
// to the kwargs its Create gets (verl's tools_kwargs[name].create_kwargs);
// tools without an entry get nil.
func (s *Set) Session(createKwargs map[string]map[string]any) *Session {
	return s.SessionWith(createKwargs, SessionOptions{})
}

// SessionOptions configure a Session beyond its create kwargs.
type SessionOptions struct {
	// Observe, when set, receives an InstanceEvent after every Create and
	// every Release of the session's tool instances. It is called without
	// the session's lock held, possibly from several goroutines at once
	// (concurrent calls, a call abandoned at its timeout that still
	// creates its instance after Close), so it must be safe for
	// concurrent use and fast.
	Observe func(InstanceEvent)
}

// SessionWith is Session with options, such as an observer of the
// session's tool instances (how agentloop reports them as trace events).
func (s *Set) SessionWith(createKwargs map[string]map[string]any, opts SessionOptions) *Session {
	return &Session{set: s, kwargs: createKwargs, inst: make(map[string]*instance), observe: opts.Observe}
}

// InstanceEvent reports one Create or Release of a tool instance in a
// Session. Every instance a successful Create made is reported released
// exactly once (by Close, or at once when its Create finished after
// Close), also when Release fails; so created minus released is the
// instances alive.
type InstanceEvent struct {
	Tool string
	// Released is false for a Create, true for a Release.
	Released bool
	// Latency is how long Create or Release took.
	Latency time.Duration
	// Lifetime, on a Release, is the time since its Create returned.
	Lifetime time.Duration
	// Err is Create's or Release's error, wrapped as Session.Call reports
	// it (ErrExecution, ErrTimeout, ErrCanceled, ErrPanic). A Create that
	// failed made no instance and has no Release.
	Err error
}

// acquire takes a concurrency slot and a rate token. The returned release
// gives the slot back; it must be called exactly once when the call's work
// has really ended (not merely been abandoned).
func (l *limiter) acquire(ctx context.Context, name string) (release func(), err error) {
	release = func() {}
	if l.sem != nil {
		if err := l.sem.Acquire(ctx, 1); err != nil {
			return nil, ctxError(ctx, name, "while waiting for a free slot")
		}
		release = func() { l.sem.Release(1) }
	}
	if l.rl != nil {
		if err := l.rl.Wait(ctx); err != nil {
			release()
			if ctx.Err() != nil {
				return nil, ctxError(ctx, name, "while waiting for its rate limit")
			}
			return nil, fmt.Errorf("tool %q: %w (%g calls/s, burst %d): %v", name, ErrRateLimited, l.l.RatePerSecond, l.rl.Burst(), err)
		}
	}
	return release, nil
}

// ctxError turns a finished context into ErrTimeout or ErrCanceled.
func ctxError(ctx context.Context, name, when string) error {
	cause := context.Cause(ctx)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("tool %q: %w %s: %w", name, ErrTimeout, when, cause)
	}
	return fmt.Errorf("tool %q: %w %s: %w", name, ErrCanceled, when, cause)
}

// compileParams compiles a parameters schema. Remote and file references are
// refused: schemas may come from untrusted MCP servers.
func compileParams(raw []byte) (*jsonschema.Schema, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parameters schema is not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{})
	const loc = "mem:///parameters.json"
	if err := c.AddResource(loc, doc); err != nil {
		return nil, fmt.Errorf("parameters schema: %w", err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return nil, fmt.Errorf("parameters schema is invalid: %w", err)
	}
	return sch, nil
}
