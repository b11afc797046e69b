package cuda

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

var _ server.Streamer = (*Engine)(nil)

// TestGenerateStreamMatchesGenerate: streamed greedy requests (several at
// once, so they share steps) emit every token in order, and their outputs
// equal the non-streamed ones token for token, logprobs included.
func TestGenerateStreamMatchesGenerate(t *testing.T) {
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 256})
	ctx := context.Background()
	rq := func(i int) server.GenerateRequest {
		return server.GenerateRequest{PromptIDs: append([]int32{int32(i + 1)}, ref.prompt...),
			Params: server.SamplingParams{MaxNewTokens: 16, Logprobs: true}}
	}
	const n = 3
	want := make([]server.TokenOutput, n)
	for i := range n {
		var err error
		want[i], err = e.Generate(ctx, rq(i))
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	got := make([]server.TokenOutput, n)
	ids := make([][]int32, n)
	lps := make([][]float32, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = e.GenerateStream(ctx, rq(i), func(c server.Chunk) error {
				if len(c.Logprobs) != len(c.TokenIDs) {
					return errors.New("chunk logprobs do not match its tokens")
				}
				ids[i] = append(ids[i], c.TokenIDs...)
				lps[i] = append(lps[i], c.Logprobs...)
				return nil
			})
		}()
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, want[i].TokenIDs, got[i].TokenIDs, "request %d", i)
		require.Equal(t, want[i].Logprobs, got[i].Logprobs, "request %d", i)
		require.Equal(t, want[i].StopReason, got[i].StopReason)
		require.Equal(t, got[i].TokenIDs, ids[i], "streamed tokens, request %d", i)
		require.Equal(t, got[i].Logprobs, lps[i])
	}
}

// TestGenerateStreamEmitErrorAborts: an emit error aborts the request; the
// engine goes on serving. The scheduler never waits for emit, so a request
// can finish (the reference model's context is short) before its caller
// runs emit at all; then the error is still returned, with the finished
// output. Each try checks whichever happened, and an abort must happen.
func TestGenerateStreamEmitErrorAborts(t *testing.T) {
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 256})
	ctx := context.Background()
	gone := errors.New("client gone")
	full, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 1000}})
	require.NoError(t, err)
	aborted := false
	for try := 0; try < 100 && !aborted; try++ {
		n := 0
		out, err := e.GenerateStream(ctx, server.GenerateRequest{PromptIDs: ref.prompt,
			Params: server.SamplingParams{MaxNewTokens: 1000}}, func(c server.Chunk) error {
			n += len(c.TokenIDs)
			return gone
		})
		require.ErrorIs(t, err, gone)
		require.GreaterOrEqual(t, len(out.TokenIDs), n)
		require.Equal(t, full.TokenIDs[:len(out.TokenIDs)], out.TokenIDs)
		switch out.StopReason {
		case server.StopAbort:
			aborted = true
			require.Less(t, len(out.TokenIDs), len(full.TokenIDs))
		default: // finished before emit ran
			require.Equal(t, full.StopReason, out.StopReason)
			require.Len(t, out.TokenIDs, len(full.TokenIDs))
		}
	}
	require.True(t, aborted, "no request was aborted by its emit error in 100 tries")

	_, err = e.GenerateStream(ctx, server.GenerateRequest{PromptIDs: ref.prompt}, nil)
	require.ErrorIs(t, err, server.ErrBadRequest)

	out, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 4}})
	require.NoError(t, err)
	require.Len(t, out.TokenIDs, 4)
}
