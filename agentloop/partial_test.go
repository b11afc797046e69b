package agentloop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/trajectory"
)

// midGenServer produces `first` tokens at once, then waits. How it answers
// a cut depends on cancelReturnsTokens:
//   - false (an HTTP client of SGLang or vLLM): cancelling the call's
//     context loses the answer (error, no tokens), while Abort makes the
//     engine answer the waiting call with the tokens so far and finish
//     reason abort, as SGLang's /abort_request and vLLM's abort do;
//   - true (the in-process engine): a cancelled call returns the tokens so
//     far with StopAbort together with the context's error.
type midGenServer struct {
	first               []int32
	logprobs            []float32
	cancelReturnsTokens bool

	started chan struct{}
	once    sync.Once
	mu      sync.Mutex
	aborts  map[string]chan struct{}
	calls   int
}

func newMidGen(first []int32, lps []float32, cancelReturnsTokens bool) *midGenServer {
	return &midGenServer{first: first, logprobs: lps, cancelReturnsTokens: cancelReturnsTokens,
		started: make(chan struct{}), aborts: map[string]chan struct{}{}}
}

func (s *midGenServer) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	s.mu.Lock()
	s.calls++
	ab := make(chan struct{})
	s.aborts[req.RequestID] = ab
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.aborts, req.RequestID)
		s.mu.Unlock()
	}()
	partial := server.TokenOutput{TokenIDs: append([]int32(nil), s.first...), StopReason: server.StopAbort, WeightVersion: 7}
	if req.Params.Logprobs {
		partial.Logprobs = append([]float32(nil), s.logprobs...)
	}
	s.once.Do(func() { close(s.started) })
	select {
	case <-ab:
		return partial, nil
	case <-ctx.Done():
		if s.cancelReturnsTokens {
			return partial, ctx.Err()
		}
		return server.TokenOutput{}, &server.Error{Server: "midgen", Op: "generate", Err: ctx.Err()}
	}
}

func (s *midGenServer) Abort(ctx context.Context, rid string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ab, ok := s.aborts[rid]; ok {
		close(ab)
		delete(s.aborts, rid)
	}
	return nil
}

func (s *midGenServer) AbortAll(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for rid, ab := range s.aborts {
		close(ab)
		delete(s.aborts, rid)
	}
	return nil
}

// noAbort hides the Aborter of the server it wraps.
type noAbort struct{ server.LLMServer }

// TestCancelMidGenerationKeepsTokens is issue 13's second bug: a
// trajectory cut by cancellation keeps every token the engine produced
// before the cut, with mask 1 and its logprobs.
func TestCancelMidGenerationKeepsTokens(t *testing.T) {
	tok := qwen3(t)
	first := tok.Encode("The answer, worked out step by step, is")
	lps := make([]float32, len(first))
	for i := range lps {
		lps[i] = -0.125 * float32(i+1)
	}
	for _, c := range []struct {
		name string
		srv  func() (server.LLMServer, *midGenServer)
	}{
		{"sglang-like abort", func() (server.LLMServer, *midGenServer) { s := newMidGen(first, lps, false); return s, s }},
		{"engine returns tokens with ctx error", func() (server.LLMServer, *midGenServer) { s := newMidGen(first, lps, true); return s, s }},
		{"engine without Aborter", func() (server.LLMServer, *midGenServer) {
			s := newMidGen(first, lps, true)
			return noAbort{s}, s
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, mg := c.srv()
			for _, agent := range []string{SingleTurnAgent, ToolAgentName} {
				mg.once, mg.started = sync.Once{}, make(chan struct{})
				m, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true, DefaultAgent: agent, Sampling: server.SamplingParams{Logprobs: true}})
				require.NoError(t, err)
				ctx, cancel := context.WithCancel(context.Background())
				go func() {
					<-mg.started
					cancel()
				}()
				out, err := m.Generate(ctx, prompts("What is 6*7?"))
				cancel()
				require.NoError(t, err)
				tr := out.Results[0].Trajectories[0]
				require.NotNil(t, tr)
				require.NoError(t, out.Results[0].Err())
				require.Equal(t, trajectory.StopAborted, tr.StopReason, agent)
				require.Equal(t, first, tr.ResponseIDs, agent)
				require.Equal(t, lps, tr.Logprobs, agent)
				require.Equal(t, len(first), tr.MaskOnes(), agent)
				require.Equal(t, int64(7), tr.MaxWeightVersion, agent)
				require.NoError(t, tr.Validate())
				require.Equal(t, 1, out.Metrics.StopReasons[trajectory.StopAborted])
				require.Equal(t, float64(len(first)), out.Metrics.ResponseLength.Max)
			}
		})
	}
}

// TestTimeoutKeepsPartialTokens: Options.Timeout cuts a trajectory played
// out token by token by servertest; the partial trajectory keeps the
// prefix generated so far, its logprobs, and says it timed out.
func TestTimeoutKeepsPartialTokens(t *testing.T) {
	tok := qwen3(t)
	long := tok.Encode("one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty")
	srv := servertest.New(servertest.Config{
		Rule:         servertest.Constant(long...),
		TokenLatency: servertest.Fixed(100 * time.Millisecond), // ~2.5 s for the whole reply
	})
	m, err := NewManager(nil, &Env{Server: srv, Tokenizer: tok}, Options{RewardFromLoop: true,
		Timeout:  time.Second,
		Sampling: server.SamplingParams{Logprobs: true},
	})
	require.NoError(t, err)
	out, err := m.Generate(context.Background(), prompts("Count."))
	require.NoError(t, err)
	tr := out.Results[0].Trajectories[0]
	require.Equal(t, trajectory.StopAborted, tr.StopReason)
	require.JSONEq(t, "true", string(tr.Extra[ExtraTimeout]))
	require.NotEmpty(t, tr.ResponseIDs, "the tokens generated before the timeout were dropped")
	require.Less(t, len(tr.ResponseIDs), len(long))
	require.Equal(t, long[:len(tr.ResponseIDs)], tr.ResponseIDs)
	require.Len(t, tr.Logprobs, len(tr.ResponseIDs))
	for i, id := range tr.ResponseIDs {
		require.Equal(t, servertest.DefaultLogprob(id, i), tr.Logprobs[i])
		require.EqualValues(t, 1, tr.ResponseMask[i])
	}
	require.NoError(t, tr.Validate())
	require.EqualValues(t, 1, srv.Stats().Aborted, "the engine request was aborted, not left running")
}
