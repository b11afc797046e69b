package router

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/server/vllm"
)

// streamBackend serves a streaming engine over httpapi and returns an
// HTTP client of it (SGLang's or vLLM's API), which is a server.Streamer.
func streamBackend(t *testing.T, name string, eng server.LLMServer, useVLLM bool, wrap func(http.Handler) http.Handler) server.LLMServer {
	t.Helper()
	api, err := httpapi.New(eng, httpapi.Config{})
	require.NoError(t, err)
	var h http.Handler = api
	if wrap != nil {
		h = wrap(h)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(func() {
		ts.Close()
		_ = api.Close()
	})
	if useVLLM {
		c, err := vllm.New(vllm.Config{BaseURL: ts.URL, Name: name, MaxAttempts: 1, HTTPClient: ts.Client()})
		require.NoError(t, err)
		return c
	}
	c, err := sglang.New(sglang.Config{BaseURL: ts.URL, Name: name, MaxAttempts: 1, HTTPClient: ts.Client()})
	require.NoError(t, err)
	return c
}

// TestGenerateStreamOverHTTPClients: the router passes the HTTP clients'
// streams through (the tokens reach the caller chunk by chunk, as the
// engine behind the server samples them), and the result equals Generate's.
func TestGenerateStreamOverHTTPClients(t *testing.T) {
	ctx := context.Background()
	for _, useVLLM := range []bool{false, true} {
		eng := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6, 7)})
		b := streamBackend(t, "a", eng, useVLLM, nil)
		_, ok := b.(server.Streamer)
		require.True(t, ok)
		r := newRouter(t, Config{}, Backend{"a", b})
		rq := req("s", "")
		rq.Params = server.SamplingParams{MaxNewTokens: 10, Logprobs: true}
		want, err := r.Generate(ctx, rq)
		require.NoError(t, err)
		rq.RequestID = "s2"
		var c servertest.Chunks
		out, err := r.GenerateStream(ctx, rq, c.Emit)
		require.NoError(t, err)
		want.CachedTokens = out.CachedTokens
		require.Equal(t, want, out)
		require.Equal(t, out.TokenIDs, c.TokenIDs)
		require.Equal(t, out.Logprobs, c.Logprobs)
		if !useVLLM {
			// agentrl's SGLang stream sends an event per sampled token;
			// its vLLM token endpoint still sends the whole turn.
			require.Equal(t, 4, c.Calls)
		}
	}
}

// TestGenerateStreamHTTPRetryBeforeFirstToken: a server that refuses the
// stream (503, before any token) is retried on another; one whose stream
// breaks after a token is not, and the caller gets a non-retryable error
// with the token it saw.
func TestGenerateStreamHTTPRetryBeforeFirstToken(t *testing.T) {
	ctx := context.Background()
	var refused atomic.Int32
	refuse := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/generate" {
				refused.Add(1)
				http.Error(w, `{"error":"warming up"}`, http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	a := streamBackend(t, "a", servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6)}), false, refuse)
	okEng := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6)})
	ok := streamBackend(t, "ok", okEng, false, nil)
	r := newRouter(t, Config{MaxAttempts: 3}, Backend{"a", a}, Backend{"ok", ok})
	const n = 16
	for i := range n {
		var c servertest.Chunks
		out, err := r.GenerateStream(ctx, req(fmt.Sprint("x", i), ""), c.Emit)
		require.NoError(t, err)
		require.Equal(t, []int32{4, 5, 6}, c.TokenIDs)
		require.Equal(t, out.TokenIDs, c.TokenIDs)
	}
	require.Equal(t, int64(n), okEng.Stats().Calls)
	require.Positive(t, refused.Load(), "some request was first sent to the refusing server")
	require.Equal(t, uint64(refused.Load()), r.Snapshot().Retries)

	// A stream cut after its first event.
	cut := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/generate" {
				h.ServeHTTP(w, r)
				return
			}
			h.ServeHTTP(&cutWriter{ResponseWriter: w}, r)
		})
	}
	e1 := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6), TokenLatency: servertest.Fixed(time.Millisecond)})
	e2 := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6), TokenLatency: servertest.Fixed(time.Millisecond)})
	r2 := newRouter(t, Config{MaxAttempts: 3}, Backend{"c1", streamBackend(t, "c1", e1, false, cut)}, Backend{"c2", streamBackend(t, "c2", e2, false, cut)})
	var c2 servertest.Chunks
	_, err := r2.GenerateStream(ctx, req("y", ""), c2.Emit)
	require.Error(t, err)
	require.False(t, server.IsRetryable(err), "%v", err)
	require.Equal(t, []int32{4}, c2.TokenIDs)
	require.Equal(t, int64(1), e1.Stats().Calls+e2.Stats().Calls, "a streamed request is not resent")
}

// cutWriter lets the first event through, then breaks the connection.
type cutWriter struct {
	http.ResponseWriter
	events int
}

func (w *cutWriter) Write(b []byte) (int, error) {
	if w.events >= 1 {
		panic(http.ErrAbortHandler)
	}
	w.events++
	return w.ResponseWriter.Write(b)
}

func (w *cutWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
