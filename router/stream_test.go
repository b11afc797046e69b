package router

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// hidden hides servertest's Streamer: a server that returns whole turns.
type hidden struct{ server.LLMServer }

func TestGenerateStreamForwardsOrFallsBack(t *testing.T) {
	ctx := context.Background()
	rq := req("s", "")
	rq.Params = server.SamplingParams{MaxNewTokens: 10, Logprobs: true}
	for _, tc := range []struct {
		name   string
		wrap   func(*servertest.Server) server.LLMServer
		chunks int
	}{
		{"streaming server", func(s *servertest.Server) server.LLMServer { return s }, 3},
		{"whole turns", func(s *servertest.Server) server.LLMServer { return hidden{s} }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eng := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6)})
			r := newRouter(t, Config{}, Backend{"a", tc.wrap(eng)})
			want, err := r.Generate(ctx, rq)
			require.NoError(t, err)
			var c servertest.Chunks
			out, err := r.GenerateStream(ctx, rq, c.Emit)
			require.NoError(t, err)
			require.Equal(t, want.TokenIDs, out.TokenIDs)
			require.Equal(t, out.TokenIDs, c.TokenIDs)
			require.Equal(t, out.Logprobs, c.Logprobs)
			require.Equal(t, tc.chunks, c.Calls)
			s := r.Snapshot().Servers[0]
			require.Equal(t, uint64(2), s.Assigned)
			require.Equal(t, uint64(0), s.Failures)
			require.Equal(t, 0, s.InFlight)
		})
	}
}

// A failed emit (the client went away) ends the call without counting
// against the server; a server failing after streamed tokens is not
// resent elsewhere.
func TestGenerateStreamFailures(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5, 6)})
	r := newRouter(t, Config{}, Backend{"a", eng})
	gone := errors.New("client gone")
	_, err := r.GenerateStream(ctx, req("x", ""), func(server.Chunk) error { return gone })
	require.ErrorIs(t, err, gone)
	s := r.Snapshot().Servers[0]
	require.Equal(t, uint64(0), s.Failures)
	require.Equal(t, 0, s.ConsecutiveFailures)

	// Two servers; the chosen one fails retryably after its first token.
	a := servertest.New(servertest.Config{Name: "a", Rule: servertest.Constant(4, 5, 6)})
	b := servertest.New(servertest.Config{Name: "b", Rule: servertest.Constant(4, 5, 6)})
	r2 := newRouter(t, Config{}, Backend{"a", &failAfterFirst{Server: a}}, Backend{"b", &failAfterFirst{Server: b}})
	var c servertest.Chunks
	_, err = r2.GenerateStream(ctx, req("y", ""), c.Emit)
	require.Error(t, err)
	require.False(t, server.IsRetryable(err), "a streamed request must not be resent: %v", err)
	require.Equal(t, []int32{4}, c.TokenIDs)
	require.Equal(t, int64(1), a.Stats().Calls+b.Stats().Calls)
	require.Equal(t, uint64(0), r2.Snapshot().Retries)
}

// failAfterFirst streams one token, then fails as an unreachable server
// does (retryable).
type failAfterFirst struct{ *servertest.Server }

func (f *failAfterFirst) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	n := 0
	_, err := f.Server.GenerateStream(ctx, req, func(c server.Chunk) error {
		if n++; n > 1 {
			return server.ErrUnavailable
		}
		return emit(c)
	})
	return server.TokenOutput{}, &server.Error{Server: "f", Op: "generate", Retryable: true, Err: err}
}
