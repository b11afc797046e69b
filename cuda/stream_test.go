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

// TestTopLogprobsAndPenaltiesEngine: through Generate and GenerateStream,
// every sampled token comes with its alternatives (as many as asked, the
// sampled token's entry equal to its logprob under greedy), the stream
// carries the same lists as the final output, and a frequency penalty
// changes what greedy decoding repeats.
func TestTopLogprobsAndPenaltiesEngine(t *testing.T) {
	ref := loadReferences(t)[0]
	e := newEngine(t, ref, Options{BlockSize: 4, KVBlocks: 256})
	ctx := context.Background()
	req := server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 12, Logprobs: true, TopLogprobs: 5}}
	out, err := e.Generate(ctx, req)
	require.NoError(t, err)
	require.Len(t, out.TopLogprobs, len(out.TokenIDs))
	for i, top := range out.TopLogprobs {
		require.Len(t, top, 5)
		require.Equal(t, out.TokenIDs[i], top[0].TokenID, "greedy draws the most probable token")
		require.Equal(t, out.Logprobs[i], top[0].Logprob)
	}
	var tops [][]server.TopLogprob
	got, err := e.GenerateStream(ctx, req, func(c server.Chunk) error {
		if len(c.TopLogprobs) != len(c.TokenIDs) {
			return errors.New("chunk top logprobs do not match its tokens")
		}
		tops = append(tops, c.TopLogprobs...)
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, out.TopLogprobs, got.TopLogprobs)
	require.Equal(t, out.TopLogprobs, tops)

	plain, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 12}})
	require.NoError(t, err)
	require.Nil(t, plain.TopLogprobs)
	require.Equal(t, out.TokenIDs, plain.TokenIDs, "asking for alternatives changes nothing sampled")
	pen, err := e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{MaxNewTokens: 12, FrequencyPenalty: 2, PresencePenalty: 2}})
	require.NoError(t, err)
	require.NotEqual(t, plain.TokenIDs, pen.TokenIDs, "penalties of 2 change the greedy output %v", plain.TokenIDs)
	_, err = e.Generate(ctx, server.GenerateRequest{PromptIDs: ref.prompt, Params: server.SamplingParams{TopLogprobs: 21}})
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "top_logprobs")
}
