package vllm_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/vllm"
)

func TestMain(m *testing.M) { wiretest.Main(m, vllm.DefaultHTTPClient) }

// setup serves engine through httpapi behind a recorder on loopback, hiding
// the hidden paths.
func setup(t *testing.T, engine server.LLMServer, cfg vllm.Config, hidden ...string) (*vllm.Client, *wiretest.Recorder) {
	t.Helper()
	rec, ts := wiretest.Serve(t, engine, hidden...)
	cfg.BaseURL = ts.URL
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = time.Millisecond
		cfg.BackoffMax = 5 * time.Millisecond
	}
	c, err := vllm.New(cfg)
	require.NoError(t, err)
	return c, rec
}

func TestGenerateBothEndpoints(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprint("fallback=", hide), func(t *testing.T) {
			ctx := context.Background()
			eng := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
				"traj-1": {{7, 8, 9, 2, 5}, {11, 12, 13}},
			}, nil)})
			var hidden []string
			if hide {
				hidden = []string{"/inference/v1/generate"}
			}
			c, rec := setup(t, eng, vllm.Config{Name: "v0", Model: "agentrl"}, hidden...)
			seed := uint64(3)
			p := server.SamplingParams{Temperature: 0.5, TopK: 20, MaxNewTokens: 9, StopTokenIDs: []int32{2}, Seed: &seed, Logprobs: true}
			out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: []int32{1, 2, 3}, Params: p})
			require.NoError(t, err)
			require.Equal(t, []int32{7, 8, 9, 2}, out.TokenIDs)
			require.Equal(t, server.StopEOS, out.StopReason)
			require.Equal(t, []float32{servertest.DefaultLogprob(7, 0), servertest.DefaultLogprob(8, 1),
				servertest.DefaultLogprob(9, 2), servertest.DefaultLogprob(2, 3)}, out.Logprobs)
			require.Equal(t, hide, c.UsesCompletions())

			if hide {
				r := rec.Last("/v1/completions")
				require.Equal(t, "traj-1", r.Header.Get(vllm.SessionHeader))
				require.JSONEq(t, `{"model":"agentrl","prompt":[1,2,3],"request_id":"traj-1","max_tokens":9,
					"temperature":0.5,"top_p":1,"top_k":20,"min_p":0,"repetition_penalty":1,"seed":3,"logprobs":1,
					"stop_token_ids":[2],"skip_special_tokens":false,"include_stop_str_in_output":true,
					"return_token_ids":true,"return_tokens_as_token_ids":true,"stream":false}`, r.Body)
			} else {
				r := rec.Last("/inference/v1/generate")
				require.Equal(t, "traj-1", r.Header.Get(vllm.SessionHeader))
				require.JSONEq(t, `{"request_id":"traj-1","token_ids":[1,2,3],"model":"agentrl",
					"sampling_params":{"max_tokens":9,"temperature":0.5,"top_p":1,"top_k":20,"min_p":0,
					"repetition_penalty":1,"seed":3,"logprobs":0,"stop_token_ids":[2],"skip_special_tokens":false,
					"include_stop_str_in_output":true},"stream":false}`, r.Body)
			}

			require.NoError(t, eng.UpdateWeights(ctx, server.Weights{Version: 4}))
			out, err = c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1",
				PromptIDs: []int32{1, 2, 3, 7, 8, 9, 2, 6}, Params: server.SamplingParams{MaxNewTokens: 2}})
			require.NoError(t, err)
			require.Equal(t, []int32{11, 12}, out.TokenIDs)
			require.Equal(t, server.StopLength, out.StopReason)
			require.Equal(t, 7, out.CachedTokens)
			require.Equal(t, int64(4), out.WeightVersion)
			require.Nil(t, out.Logprobs)

			// After a fallback the missing endpoint is not tried again.
			n := 0
			for _, r := range rec.All() {
				if r.Path == "/inference/v1/generate" {
					n++
				}
			}
			if hide {
				require.Equal(t, 1, n)
			} else {
				require.Equal(t, 2, n)
			}
		})
	}
}

func TestRetriesAndTypedErrors(t *testing.T) {
	tests := []struct {
		name      string
		faults    int
		fault     servertest.Fault
		wantErr   error
		wantCalls int64
		status    int
	}{
		{"503 then ok", 2, servertest.Unavailable(), nil, 3, 0},
		{"429 exhausts", 9, servertest.Overloaded(), server.ErrOverloaded, 4, 429},
		{"400 not retried", 1, servertest.ErrorFault(server.ErrBadRequest), server.ErrBadRequest, 1, 400},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := servertest.New(servertest.Config{Rule: servertest.Constant(4)})
			eng.FaultNext(tc.faults, tc.fault)
			c, _ := setup(t, eng, vllm.Config{Name: "v1"})
			_, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
			require.Equal(t, tc.wantCalls, eng.Stats().Calls)
			if tc.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			var se *server.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, tc.status, se.Status)
			require.Equal(t, "v1", se.Server)
			require.Equal(t, tc.status == 429, se.Retryable)
		})
	}
}

func TestCancelAbortsServerSide(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1), Latency: servertest.Fixed(10 * time.Second)})
	c, rec := setup(t, eng, vllm.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Generate(ctx, server.GenerateRequest{RequestID: "gone", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// vLLM schedules the request as "generate-tokens-{request_id}"
	// (vllm/entrypoints/openai/serving_tokens.py @ 0362f42a) and
	// /abort_requests passes the ids to the engine as given.
	require.JSONEq(t, `{"request_ids":["generate-tokens-gone"]}`, rec.Last("/abort_requests").Body)
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 0 }, 2*time.Second, time.Millisecond)

	// On /v1/completions the engine id is "cmpl-{request_id}-{i}".
	c2, rec2 := setup(t, eng, vllm.Config{Completions: true})
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	_, err = c2.Generate(ctx2, server.GenerateRequest{RequestID: "gone2", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.JSONEq(t, `{"request_ids":["cmpl-gone2-0"]}`, rec2.Last("/abort_requests").Body)
	require.NoError(t, c2.Abort(context.Background(), "x"))
	require.JSONEq(t, `{"request_ids":["cmpl-x-0"]}`, rec2.Last("/abort_requests").Body)
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 0 }, 2*time.Second, time.Millisecond)
}

func TestEngineRequestID(t *testing.T) {
	require.Equal(t, "generate-tokens-r1", vllm.EngineRequestID("r1", false))
	require.Equal(t, "cmpl-r1-0", vllm.EngineRequestID("r1", true))
}

func TestAbortMidway(t *testing.T) {
	wiretest.AbortMidway(t, func(eng server.LLMServer) wiretest.Client {
		c, _ := setup(t, eng, vllm.Config{})
		return c
	})
}

func TestControl(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1)})
	c, rec := setup(t, eng, vllm.Config{})
	var _ server.Aborter = c
	var _ server.Sleeper = c
	var _ server.HealthChecker = c
	var _ server.CacheFlusher = c
	var _ server.Pauser = c

	require.NoError(t, c.Health(ctx))
	eng.SetHealthy(false)
	require.ErrorIs(t, c.Health(ctx), server.ErrUnavailable)
	eng.SetHealthy(true)

	require.NoError(t, c.Sleep(ctx, server.SleepWeights))
	require.Equal(t, "level=2", rec.Last("/sleep").Query)
	sleeping, err := c.IsSleeping(ctx)
	require.NoError(t, err)
	require.True(t, sleeping)
	_, lvl := eng.Sleeping()
	require.Equal(t, server.SleepWeights, lvl)
	require.NoError(t, c.WakeUp(ctx))
	sleeping, err = c.IsSleeping(ctx)
	require.NoError(t, err)
	require.False(t, sleeping)
	require.ErrorIs(t, c.Sleep(ctx, 0), server.ErrBadRequest)

	require.NoError(t, c.FlushCache(ctx))
	require.Equal(t, 1, eng.Flushes())

	require.NoError(t, c.Pause(ctx, server.PauseKeep))
	require.Equal(t, "mode=keep", rec.Last("/pause").Query)
	require.NoError(t, c.Resume(ctx))
	require.NoError(t, c.Pause(ctx, server.PauseWait))
	require.Equal(t, "mode=wait", rec.Last("/pause").Query)
	require.NoError(t, c.Resume(ctx))
	// vLLM cannot retract; refused before any call.
	calls := len(rec.All())
	require.ErrorIs(t, c.Pause(ctx, server.PauseRetract), errors.ErrUnsupported)
	require.ErrorIs(t, c.Pause(ctx, "freeze"), server.ErrBadRequest)
	require.Len(t, rec.All(), calls)
	require.NoError(t, c.AbortAll(ctx))
	require.Equal(t, "mode=abort", rec.Last("/pause").Query)
	require.Equal(t, "/resume", rec.All()[len(rec.All())-1].Path)
}

func TestRecordedResponses(t *testing.T) {
	tests := []struct {
		file     string
		compl    bool
		logprobs bool
		want     server.TokenOutput
		wantErr  string
	}{
		{file: "generate_new.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{1234, 151645},
			Logprobs: []float32{-0.01, -0.5}, StopReason: server.StopEOS}},
		{file: "generate_old_tokens.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{1234, 77},
			Logprobs: []float32{-0.01, -9999}, StopReason: server.StopLength}},
		{file: "generate_abort.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{},
			Logprobs: []float32{}, StopReason: server.StopAbort}},
		{file: "generate_new.json", logprobs: false, want: server.TokenOutput{TokenIDs: []int32{1234, 151645}, StopReason: server.StopEOS}},
		{file: "completions.json", compl: true, logprobs: true, want: server.TokenOutput{TokenIDs: []int32{9906, 151645},
			Logprobs: []float32{-0.25, -0.125}, StopReason: server.StopEOS, PromptTokens: 3, CachedTokens: 2}},
		{file: "completions_no_details.json", compl: true, logprobs: false, want: server.TokenOutput{TokenIDs: []int32{5},
			StopReason: server.StopLength, PromptTokens: 3}},
		{file: "err_generate_mismatch.json", logprobs: true, wantErr: "content[1] is for token 9 but token_ids[1] is 151645"},
		{file: "err_generate_count.json", logprobs: true, wantErr: "has 1 entries for 2 token_ids"},
		{file: "err_generate_null_finish.json", wantErr: "finish_reason is null"},
		{file: "err_generate_two_choices.json", wantErr: "expected 1 choice, got 2"},
		{file: "err_completions_no_ids.json", compl: true, wantErr: "does not support return_token_ids"},
		{file: "err_completions_token_mismatch.json", compl: true, logprobs: true, wantErr: "tokens[0] is token 8 but token_ids[0] is 9906"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			parse := vllm.ParseGenerateResponse
			if tc.compl {
				parse = vllm.ParseCompletionsResponse
			}
			wiretest.CheckRecorded(t, parse, tc.file, tc.logprobs, tc.want, tc.wantErr)
		})
	}
}

func FuzzParseResponses(f *testing.F) {
	wiretest.AddRecordedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, logprobs bool) {
		for _, parse := range []wiretest.ParseFunc{vllm.ParseGenerateResponse, vllm.ParseCompletionsResponse} {
			out, err := parse(data, logprobs)
			if err != nil {
				require.ErrorIs(t, err, server.ErrBadResponse)
				continue
			}
			require.NotNil(t, out.TokenIDs)
			if logprobs {
				require.Len(t, out.Logprobs, len(out.TokenIDs))
			}
			for _, id := range out.TokenIDs {
				require.GreaterOrEqual(t, id, int32(0))
			}
		}
	})
}

// TestTopLogprobsAndPenaltiesBothEndpoints: TopLogprobs k goes out as
// logprobs k+1 with the penalties under vLLM's names, and each endpoint's
// alternatives (chat-shaped top_logprobs on /inference/v1/generate,
// token→logprob objects on /v1/completions) come back as the engine's k
// most probable, streamed and not.
func TestTopLogprobsAndPenaltiesBothEndpoints(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprint("fallback=", hide), func(t *testing.T) {
			ctx := context.Background()
			eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 8, 9)})
			var hidden []string
			path := "/inference/v1/generate"
			if hide {
				hidden, path = []string{path}, "/v1/completions"
			}
			c, rec := setup(t, eng, vllm.Config{Model: "agentrl"}, hidden...)
			p := server.SamplingParams{MaxNewTokens: 3, TopLogprobs: 2, PresencePenalty: 1.5, FrequencyPenalty: 0.25}
			req := server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}, Params: p}
			out, err := c.Generate(ctx, req)
			require.NoError(t, err)
			body := rec.Last(path).Body
			require.Contains(t, body, `"logprobs":3`)
			require.Contains(t, body, `"presence_penalty":1.5`)
			require.Contains(t, body, `"frequency_penalty":0.25`)
			want := make([][]server.TopLogprob, len(out.TokenIDs))
			for i, id := range out.TokenIDs {
				want[i] = servertest.DefaultTopLogprobs(id, servertest.DefaultLogprob(id, i), 2, 0)
			}
			require.Equal(t, want, out.TopLogprobs)
			require.Nil(t, out.Logprobs)
			var got servertest.Chunks
			sout, err := c.GenerateStream(ctx, req, got.Emit)
			require.NoError(t, err)
			require.Equal(t, want, sout.TopLogprobs)
			require.Equal(t, want, got.TopLogprobs)
		})
	}
}
