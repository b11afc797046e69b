package router

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/agentrl/agentrl/server"
)

// flight is one Generate call in progress, so Abort can find the server
// holding it. Calls sharing a request id form a list.
type flight struct {
	rid     string
	b       *backend // server of the current attempt; nil between attempts
	aborted bool     // guarded by Router.flightMu, like b and next
	next    *flight
}

func (r *Router) track(rid string) *flight {
	if rid == "" {
		return nil
	}
	f := &flight{rid: rid}
	r.flightMu.Lock()
	f.next = r.flights[rid]
	r.flights[rid] = f
	r.flightMu.Unlock()
	return f
}

func (r *Router) untrack(f *flight) {
	if f == nil {
		return
	}
	r.flightMu.Lock()
	defer r.flightMu.Unlock()
	p := r.flights[f.rid]
	if p == f {
		if f.next == nil {
			delete(r.flights, f.rid)
		} else {
			r.flights[f.rid] = f.next
		}
		return
	}
	for ; p != nil; p = p.next {
		if p.next == f {
			p.next = f.next
			return
		}
	}
}

// attach records b as the server of f's current attempt; false when the
// call was aborted between attempts and must not start again.
func (f *flight) attach(r *Router, b *backend) bool {
	if f == nil {
		return true
	}
	r.flightMu.Lock()
	defer r.flightMu.Unlock()
	if f.aborted {
		return false
	}
	f.b = b
	return true
}

func (f *flight) detach(r *Router) {
	if f == nil {
		return
	}
	r.flightMu.Lock()
	f.b = nil
	r.flightMu.Unlock()
}

// Abort stops the calls in flight with this request id: it is forwarded to
// the server holding each one (which returns the tokens produced so far with
// server.StopAbort), and a call between retry attempts is not sent again. An
// id with no call in flight is a no-op. As with any engine API, an abort that
// races the request's arrival at the engine may find nothing to abort there;
// the call then runs to completion.
func (r *Router) Abort(ctx context.Context, requestID string) error {
	var targets []*backend
	r.flightMu.Lock()
	for f := r.flights[requestID]; f != nil; f = f.next {
		f.aborted = true
		if f.b != nil && !slices.Contains(targets, f.b) {
			targets = append(targets, f.b)
		}
	}
	r.flightMu.Unlock()
	var errs []error
	for _, b := range targets {
		a, ok := b.srv.(server.Aborter)
		if !ok {
			errs = append(errs, fmt.Errorf("router: server %q cannot abort: %w", b.name, errors.ErrUnsupported))
			continue
		}
		if err := a.Abort(ctx, requestID); err != nil {
			errs = append(errs, wrapOp(b.name, "abort", err))
		}
	}
	return errors.Join(errs...)
}

// AbortAll aborts every call in flight on every server, including calls
// between retry attempts.
func (r *Router) AbortAll(ctx context.Context) error {
	r.flightMu.Lock()
	for _, f := range r.flights {
		for ; f != nil; f = f.next {
			f.aborted = true
		}
	}
	r.flightMu.Unlock()
	return fanOut(ctx, r, "abort_all", func(ctx context.Context, a server.Aborter) error { return a.AbortAll(ctx) })
}

// Sleep puts every server to sleep. It fails without touching any server if
// one of them is not a server.Sleeper.
func (r *Router) Sleep(ctx context.Context, level server.SleepLevel) error {
	return fanOut(ctx, r, "sleep", func(ctx context.Context, s server.Sleeper) error { return s.Sleep(ctx, level) })
}

// WakeUp wakes every server. It fails without touching any server if one of
// them is not a server.Sleeper.
func (r *Router) WakeUp(ctx context.Context) error {
	return fanOut(ctx, r, "wake_up", func(ctx context.Context, s server.Sleeper) error { return s.WakeUp(ctx) })
}

// UpdateWeights sends the update to every server, ejected ones included (so
// none is readmitted with stale weights). It fails without touching any
// server if one of them is not a server.WeightUpdater: a fleet where only
// some servers took the new policy would mix versions silently. When some
// updates fail, the joined error names those servers; they keep serving
// (their outputs carry the old WeightVersion) until the caller retries the
// update or removes them.
func (r *Router) UpdateWeights(ctx context.Context, w server.Weights) error {
	return fanOut(ctx, r, "update_weights", func(ctx context.Context, u server.WeightUpdater) error { return u.UpdateWeights(ctx, w) })
}

// FlushCache empties every server's prefix cache. It fails without
// touching any server if one of them is not a server.CacheFlusher.
func (r *Router) FlushCache(ctx context.Context) error {
	return fanOut(ctx, r, "flush_cache", func(ctx context.Context, f server.CacheFlusher) error { return f.FlushCache(ctx) })
}

// Pause pauses every server (see server.Pauser); calls routed meanwhile
// queue on their server. It fails without touching any server if one of
// them is not a server.Pauser.
func (r *Router) Pause(ctx context.Context, mode server.PauseMode) error {
	return fanOut(ctx, r, "pause", func(ctx context.Context, p server.Pauser) error { return p.Pause(ctx, mode) })
}

// Resume resumes every server. It fails without touching any server if
// one of them is not a server.Pauser.
func (r *Router) Resume(ctx context.Context) error {
	return fanOut(ctx, r, "resume", func(ctx context.Context, p server.Pauser) error { return p.Resume(ctx) })
}

// Health is nil while at least one server takes calls.
func (r *Router) Health(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrClosed
	}
	if len(r.heap) == 0 {
		return &server.Error{Server: "router", Op: "health", Retryable: true, Err: ErrNoServers}
	}
	return nil
}

// fanOut calls op concurrently on every registered server that is not
// draining, after checking they all implement C, and joins the errors.
func fanOut[C any](ctx context.Context, r *Router, name string, op func(context.Context, C) error) error {
	type target struct {
		name string
		c    C
	}
	r.mu.Lock()
	var targets []target
	var missing []string
	for _, b := range r.order {
		if b.state == StateDraining {
			continue
		}
		c, ok := b.srv.(C)
		if !ok {
			missing = append(missing, b.name)
			continue
		}
		targets = append(targets, target{b.name, c})
	}
	r.mu.Unlock()
	if len(missing) > 0 {
		return fmt.Errorf("router: %s: servers %q do not support it: %w", name, missing, errors.ErrUnsupported)
	}
	errs := make([]error, len(targets))
	var g errgroup.Group
	for i, t := range targets {
		g.Go(func() error {
			if err := op(ctx, t.c); err != nil {
				errs[i] = wrapOp(t.name, name, err)
			}
			return nil
		})
	}
	_ = g.Wait() // the goroutines report through errs
	return errors.Join(errs...)
}

func wrapOp(name, op string, err error) error {
	var se *server.Error
	if errors.As(err, &se) {
		return err
	}
	return &server.Error{Server: name, Op: op, Err: err}
}
