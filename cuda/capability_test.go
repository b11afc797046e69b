package cuda

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// generateAsync runs Generate on its own goroutine; the channel gets its
// output.
func generateAsync(t *testing.T, e *Engine, req server.GenerateRequest) <-chan server.TokenOutput {
	done := make(chan server.TokenOutput, 1)
	go func() {
		out, err := e.Generate(context.Background(), req)
		assert.NoError(t, err)
		done <- out
	}()
	return done
}

// pauseInPlaceAfter makes the scheduler pause itself in place (as
// Pause(ctx, server.PauseKeep) does) right after the step in which more than n tokens
// have been decoded since the engine started; the channel is closed then
// (Stats may lag until the next control op or step publishes them).
// Polling Stats and calling Pause from the test races a fast build, which
// can finish a whole request between two polls.
func pauseInPlaceAfter(t *testing.T, e *Engine, n int64) <-chan struct{} {
	paused := make(chan struct{})
	require.NoError(t, e.do(context.Background(), "test hook", func(s *sched) error {
		s.afterStep = func(s *sched) {
			if s.stats.DecodeTokens > n {
				s.paused = true
				s.afterStep = nil
				close(paused)
			}
		}
		return nil
	}))
	return paused
}

// requireFrozen checks that no token is sampled for a while.
func requireFrozen(t *testing.T, e *Engine) {
	before := e.Stats().DecodeTokens
	time.Sleep(30 * time.Millisecond)
	require.Equal(t, before, e.Stats().DecodeTokens, "tokens sampled while paused")
}

// TestPauseInPlace: a pause without abort keeps the running request where
// it is (SGLang's "in_place"): nothing is sampled until Resume, requests
// arriving meanwhile queue, and the paused request's tokens are the ones
// it gets without a pause.
func TestPauseInPlace(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	long := server.GenerateRequest{RequestID: "long", PromptIDs: ref.prompt} // runs to the context's end
	frozen := pauseInPlaceAfter(t, e, 10)
	done := generateAsync(t, e, long)
	<-frozen
	require.NoError(t, e.Pause(ctx, server.PauseKeep), "pausing a paused engine is fine")
	st := e.Stats()
	require.True(t, st.Paused)
	require.Equal(t, 1, st.Running, "the running request is kept")
	requireFrozen(t, e)

	short := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt[:3], Params: server.SamplingParams{MaxNewTokens: 4}})
	require.Eventually(t, func() bool { return e.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
	requireFrozen(t, e)
	require.NoError(t, e.Pause(ctx, server.PauseKeep), "pausing twice is fine")
	require.NoError(t, e.Resume(ctx))
	require.False(t, e.Stats().Paused)
	paused := <-done
	require.Equal(t, server.StopLength, paused.StopReason)
	require.Len(t, (<-short).TokenIDs, 4)

	unpaused, err := e.Generate(ctx, long)
	require.NoError(t, err)
	require.Equal(t, unpaused.TokenIDs, paused.TokenIDs)
	require.Equal(t, ref.tokens, paused.TokenIDs[:len(ref.tokens)])
	require.NoError(t, e.Resume(ctx), "resuming a running engine is a no-op")
	require.NoError(t, e.CheckAccounting(ctx))
}

// TestPauseAbort: a pause with abort (SGLang's "abort" mode) ends every
// request in flight with its tokens so far; the engine stays paused, and
// a request made meanwhile runs after Resume.
func TestPauseAbort(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64, MaxSeqs: 1})
	frozen := pauseInPlaceAfter(t, e, 10)
	running := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt})
	<-frozen
	require.NoError(t, e.Pause(ctx, server.PauseKeep), "publishes the frozen state")
	require.Equal(t, 1, e.Stats().Running)
	queued := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt[:2]}) // MaxSeqs 1 and paused: waits
	require.Eventually(t, func() bool { return e.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
	require.NoError(t, e.Pause(ctx, server.PauseAbort), "a paused engine aborts what is in flight")
	out := <-running
	require.Equal(t, server.StopAbort, out.StopReason)
	n := min(len(out.TokenIDs), len(ref.tokens))
	require.Greater(t, n, 10)
	require.Equal(t, ref.tokens[:n], out.TokenIDs[:n], "the tokens so far")
	out = <-queued
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Empty(t, out.TokenIDs)
	require.True(t, e.Stats().Paused)

	later := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 5}})
	require.Eventually(t, func() bool { return e.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
	requireFrozen(t, e)
	require.NoError(t, e.Resume(ctx))
	out = <-later
	require.Equal(t, server.StopLength, out.StopReason)
	require.Equal(t, ref.tokens[:5], out.TokenIDs)
	require.NoError(t, e.CheckAccounting(ctx))
	require.Equal(t, 64, e.Stats().FreeBlocks)
}

// TestPauseRetract: a retracting pause (SGLang's "retract") frees the
// running request's KV cache while paused; after Resume it is recomputed
// from its tokens so far and ends with the tokens it gets without a pause,
// counting one retraction.
func TestPauseRetract(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	long := server.GenerateRequest{RequestID: "long", PromptIDs: ref.prompt}
	frozen := pauseInPlaceAfter(t, e, 10)
	done := generateAsync(t, e, long)
	<-frozen
	require.NoError(t, e.Pause(ctx, server.PauseRetract))
	st := e.Stats()
	require.True(t, st.Paused)
	require.Equal(t, 0, st.Running, "retracted")
	require.Equal(t, 1, st.Waiting)
	require.NoError(t, e.CheckAccounting(ctx))
	requireFrozen(t, e)
	require.NoError(t, e.Resume(ctx))
	paused := <-done
	require.Equal(t, 1, paused.Retractions)
	unpaused, err := e.Generate(ctx, long)
	require.NoError(t, err)
	require.Zero(t, unpaused.Retractions)
	require.Equal(t, unpaused.TokenIDs, paused.TokenIDs)
	require.Equal(t, ref.tokens, paused.TokenIDs[:len(ref.tokens)])
}

// TestPauseWait: a waiting pause (vLLM's "wait") lets the running request
// run to its end, starts nothing new, and ends paused. The drain is
// started from the scheduler's goroutine at a given decode count, as
// Pause's op does (a poll from outside races a fast build, which can finish
// the request first).
func TestPauseWait(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	started := make(chan chan struct{}, 1)
	require.NoError(t, e.do(ctx, "test hook", func(s *sched) error {
		s.afterStep = func(s *sched) {
			if s.stats.DecodeTokens > 5 {
				s.afterStep = nil
				started <- s.startDrain()
			}
		}
		return nil
	}))
	running := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 20}})
	drained := <-started
	queued := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt[:3], Params: server.SamplingParams{MaxNewTokens: 4}})
	out := <-running
	require.Equal(t, server.StopLength, out.StopReason)
	require.Equal(t, ref.tokens[:20], out.TokenIDs, "the drained request ran to its end")
	<-drained
	require.Eventually(t, func() bool { return e.Stats().Waiting == 1 }, 10*time.Second, time.Millisecond)
	st := e.Stats()
	require.True(t, st.Paused)
	require.Equal(t, 0, st.Running, "the request made while draining has not started")
	requireFrozen(t, e)
	require.NoError(t, e.Pause(ctx, server.PauseWait), "a paused engine has nothing to wait for")
	require.NoError(t, e.Resume(ctx))
	require.Len(t, (<-queued).TokenIDs, 4)
	require.NoError(t, e.CheckAccounting(ctx))

	// Through Pause: an idle engine drains at once and ends paused.
	require.NoError(t, e.Pause(ctx, server.PauseWait))
	require.True(t, e.Stats().Paused)
	require.NoError(t, e.Resume(ctx))
	// A Resume ends a drain still under way (here one frozen mid-request).
	require.NoError(t, e.do(ctx, "test hook", func(s *sched) error {
		s.afterStep = func(s *sched) {
			if s.stats.DecodeTokens > 30 {
				s.afterStep = nil
				s.paused = true
				started <- s.startDrain()
			}
		}
		return nil
	}))
	frozen := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 20}})
	drained = <-started
	require.NoError(t, e.Resume(ctx))
	<-drained
	require.Equal(t, server.StopLength, (<-frozen).StopReason, "resumed, it runs to its end")
	require.False(t, e.Stats().Paused)

	// An unknown mode changes nothing.
	require.ErrorIs(t, e.Pause(ctx, "freeze"), server.ErrBadRequest)
	require.False(t, e.Stats().Paused)
}

// TestFlushCache: after a flush a repeated prompt is computed again (no
// cached tokens) with the same result, a request in flight is not
// disturbed, and an asleep engine flushes as a no-op.
func TestFlushCache(t *testing.T) {
	ctx := context.Background()
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 64})
	req := server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 8}}
	first, err := e.Generate(ctx, req)
	require.NoError(t, err)
	hit, err := e.Generate(ctx, req)
	require.NoError(t, err)
	require.Positive(t, hit.CachedTokens)
	require.Positive(t, e.Stats().CachedBlocks)

	require.NoError(t, e.FlushCache(ctx))
	require.Zero(t, e.Stats().CachedBlocks)
	miss, err := e.Generate(ctx, req)
	require.NoError(t, err)
	require.Zero(t, miss.CachedTokens)
	require.Equal(t, first.TokenIDs, miss.TokenIDs)
	require.Equal(t, first.TokenIDs, hit.TokenIDs)

	// A flush while a request runs leaves it its blocks and its tokens.
	frozen := pauseInPlaceAfter(t, e, e.Stats().DecodeTokens+3)
	long := generateAsync(t, e, server.GenerateRequest{PromptIDs: ref.prompt})
	<-frozen
	require.NoError(t, e.FlushCache(ctx))
	require.Equal(t, 1, e.Stats().Running)
	require.NoError(t, e.CheckAccounting(ctx))
	require.NoError(t, e.Resume(ctx))
	out := <-long
	require.Equal(t, ref.tokens, out.TokenIDs[:len(ref.tokens)])
	require.NoError(t, e.CheckAccounting(ctx))

	require.NoError(t, e.Sleep(ctx, server.SleepKVCache))
	require.NoError(t, e.FlushCache(ctx))
	require.NoError(t, e.WakeUp(ctx))
}
