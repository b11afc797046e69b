package router

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestFanOutFlushAndPause checks the cache and pause capabilities reach
// every server, and that a router over a server without them refuses
// without touching the others.
func TestFanOutFlushAndPause(t *testing.T) {
	ctx := context.Background()
	a := servertest.New(servertest.Config{Name: "a", Rule: servertest.Constant(1)})
	b := servertest.New(servertest.Config{Name: "b", Rule: servertest.Constant(1)})
	r := newRouter(t, Config{}, Backend{"a", a}, Backend{"b", b})

	require.NoError(t, r.FlushCache(ctx))
	require.Equal(t, 1, a.Flushes())
	require.Equal(t, 1, b.Flushes())

	// Paused: calls routed to either server are held until Resume.
	require.NoError(t, r.Pause(ctx, server.PauseKeep))
	done := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := r.Generate(ctx, req("", ""))
			done <- err
		}()
	}
	require.Eventually(t, func() bool { return a.Stats().InFlight+b.Stats().InFlight == 2 }, time.Second, time.Millisecond)
	select {
	case <-done:
		t.Fatal("a call ran while paused")
	case <-time.After(20 * time.Millisecond):
	}
	require.NoError(t, r.Resume(ctx))
	require.NoError(t, <-done)
	require.NoError(t, <-done)

	require.NoError(t, r.AddServer("plain", newFake("plain")))
	require.ErrorIs(t, r.FlushCache(ctx), errors.ErrUnsupported)
	require.Equal(t, 1, a.Flushes(), "nothing is touched when one server lacks the capability")
	err := r.Pause(ctx, server.PauseAbort)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), `"plain"`)
	require.ErrorIs(t, r.Resume(ctx), errors.ErrUnsupported)
	var _ server.Pauser = r
}
