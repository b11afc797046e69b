package capture

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// sharedStore is a Store that several Captures (replicas) share, such as
// RedisStore: each Capture's rollouts are then a cache of the store, read
// again where a decision needs what another replica wrote.
type sharedStore interface {
	Store
	// since returns id's records from index from on, and when any
	// replica last used the rollout (zero once finished); fs.ErrNotExist
	// (wrapped) when it has no log.
	since(ctx context.Context, id string, from int) ([]Record, time.Time, error)
	// keyRollout returns the id of the rollout whose key has digest d,
	// "" when there is none.
	keyRollout(ctx context.Context, d [32]byte) (string, error)
	// appendAt is Append, also saying where the log ends after it and
	// how many records it added there (-1: unknown).
	appendAt(ctx context.Context, id string, recs ...Record) (end, added int, err error)
	// begin appends the begin record of a new call of id at t, its id
	// numbered in the store so that no two replicas give the same one,
	// and says where the log ends after it (0: unknown).
	begin(ctx context.Context, id string, t time.Time) (call string, end int, err error)
	// touch marks id used at t, saying whether it had been idle for
	// longer than idle before.
	touch(ctx context.Context, id string, t time.Time, idle time.Duration) (bool, error)
	// idle returns up to max open rollouts last used before t.
	idle(ctx context.Context, before time.Time, max int) ([]string, error)
}

// sweepBatch bounds the idle rollouts one sweep expires.
const sweepBatch = 256

// lookup returns id's rollout, touching it: from the cache, or with a
// shared store from the store (a rollout another replica created). The
// error wraps ErrNotFound when there is none.
func (c *Capture) lookup(ctx context.Context, id string) (*rollout, error) {
	c.mu.Lock()
	ro := c.rollouts[id]
	c.mu.Unlock()
	if ro == nil && c.shared != nil && validID(id) {
		var err error
		if ro, err = c.loadShared(ctx, id); err != nil {
			return nil, err
		}
	}
	if ro == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if c.shared == nil {
		c.touch(ro)
		return ro, nil
	}
	now := c.cfg.Now()
	ro.lastUsed.Store(now.UnixNano())
	idle, err := c.shared.touch(ctx, id, now, c.cfg.IdleTimeout)
	if errors.Is(err, ErrNotFound) {
		c.forget(ro) // deleted through another replica
	}
	if err != nil {
		return nil, err
	}
	if idle {
		if err := c.finish(ctx, ro, "expired"); err != nil && !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return ro, nil
}

// loadShared reads rollout id from the shared store into the cache; nil
// when it has no log.
func (c *Capture) loadShared(ctx context.Context, id string) (*rollout, error) {
	recs, _, err := c.shared.since(ctx, id, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ro, err := replayLive(id, recs)
	if err != nil {
		return nil, err
	}
	ro.seen = len(recs)
	ro.lastUsed.Store(c.cfg.Now().UnixNano())
	c.mu.Lock()
	defer c.mu.Unlock()
	if have := c.rollouts[id]; have != nil {
		return have, nil // loaded at the same time by another call
	}
	c.rollouts[id] = ro
	if !ro.finished {
		c.byKey[ro.keyHash] = ro
	}
	return ro, nil
}

// sharedByKey finds the open rollout with key digest d in the shared
// store; nil when none.
func (c *Capture) sharedByKey(ctx context.Context, d [32]byte) (*rollout, error) {
	id, err := c.shared.keyRollout(ctx, d)
	if err != nil || id == "" {
		return nil, err
	}
	c.mu.Lock()
	ro := c.rollouts[id]
	c.mu.Unlock()
	if ro == nil {
		if ro, err = c.loadShared(ctx, id); err != nil || ro == nil {
			return nil, err
		}
	}
	ro.mu.Lock()
	open := !ro.finished && !ro.deleted
	ro.mu.Unlock()
	if !open {
		return nil, nil
	}
	return ro, nil
}

// catchUp applies what other replicas appended to ro's log since this one
// last read it, so that a call is linked against every call recorded
// before it arrived, whichever replica recorded it; then it expires ro
// when no replica has used it for IdleTimeout. ro.mu is held.
func (c *Capture) catchUp(ctx context.Context, ro *rollout) error {
	recs, used, err := c.shared.since(ctx, ro.info.ID, ro.seen)
	if errors.Is(err, fs.ErrNotExist) {
		ro.deleted = true
		c.forget(ro)
		return nil
	}
	if err != nil {
		return err
	}
	wasFinished := ro.finished
	for i, r := range recs {
		if err := ro.apply(r); err != nil {
			return fmt.Errorf("capture: rollout %s's log, record %d: %w", ro.info.ID, ro.seen+i+1, err)
		}
	}
	ro.seen += len(recs)
	if ro.finished {
		if !wasFinished {
			c.mu.Lock()
			delete(c.byKey, ro.keyHash)
			c.mu.Unlock()
		}
		return nil
	}
	if !used.IsZero() && c.cfg.Now().Sub(used) > c.cfg.IdleTimeout {
		return c.finishLocked(ctx, ro, "expired")
	}
	return nil
}

// forget drops ro from the cache: it was deleted through another replica.
func (c *Capture) forget(ro *rollout) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rollouts[ro.info.ID] == ro {
		delete(c.rollouts, ro.info.ID)
	}
	if c.byKey[ro.keyHash] == ro {
		delete(c.byKey, ro.keyHash)
	}
}

// appendTo appends recs to ro's log, ro.mu held. With a shared store,
// when no other replica's record came between ro.seen and them, ro.seen
// moves past them (they are applied here as written), so the next
// catch-up need not read them back: a rollout served by one replica at a
// time reads nothing back.
func (c *Capture) appendTo(ctx context.Context, ro *rollout, sync bool, recs ...Record) error {
	if c.shared == nil {
		return c.cfg.Store.Append(ctx, ro.info.ID, sync, recs...)
	}
	end, added, err := c.shared.appendAt(ctx, ro.info.ID, recs...)
	if err != nil {
		return err
	}
	ro.advance(end, added)
	return nil
}

// advance moves ro.seen to end when the added records just before end
// follow what ro has seen.
func (ro *rollout) advance(end, added int) {
	if added >= 0 && end > 0 && end-added == ro.seen {
		ro.seen = end
	}
}

// sweepShared expires the rollouts of the shared store that no replica
// has used for IdleTimeout, whichever replica created them (so a replica
// that died does not leave its rollouts open).
func (c *Capture) sweepShared(ctx context.Context, now time.Time) {
	ids, err := c.shared.idle(ctx, now.Add(-c.cfg.IdleTimeout), sweepBatch)
	if err != nil {
		return // the next sweep tries again; calls fail closed meanwhile
	}
	for _, id := range ids {
		c.mu.Lock()
		ro := c.rollouts[id]
		c.mu.Unlock()
		if ro == nil {
			if ro, err = c.loadShared(ctx, id); err != nil || ro == nil {
				continue
			}
		}
		_ = c.finish(ctx, ro, "expired") // a no-op on one finished already
	}
}

// replayLive rebuilds a rollout from its log as a replica sees it while
// others serve it: a call begun and not yet recorded may be in flight
// elsewhere, so it is not counted lost (Rebuild decides that from the log).
func replayLive(id string, recs []Record) (*rollout, error) {
	ro, err := replayRecords(id, recs)
	if err != nil {
		return nil, err
	}
	return ro, nil
}
