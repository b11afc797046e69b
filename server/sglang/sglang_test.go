package sglang_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

func TestMain(m *testing.M) { wiretest.Main(m, sglang.DefaultHTTPClient) }

// setup serves engine through httpapi behind a recorder on loopback.
func setup(t *testing.T, engine server.LLMServer, cfg sglang.Config) (*sglang.Client, *wiretest.Recorder, *httptest.Server) {
	t.Helper()
	rec, ts := wiretest.Serve(t, engine)
	cfg.BaseURL = ts.URL
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase = time.Millisecond
		cfg.BackoffMax = 5 * time.Millisecond
	}
	c, err := sglang.New(cfg)
	require.NoError(t, err)
	return c, rec, ts
}

func TestGenerateRoundTrip(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
		"traj-1": {{7, 8, 9, 2, 5}, {11, 2}, {12, 2}},
	}, nil)})
	c, rec, _ := setup(t, eng, sglang.Config{Name: "sg0"})
	seed := uint64(42)
	p := server.SamplingParams{Temperature: 0.7, MaxNewTokens: 10, StopTokenIDs: []int32{2}, Seed: &seed, Logprobs: true}
	out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1", PromptIDs: []int32{1, 2, 3}, Params: p})
	require.NoError(t, err)
	require.Equal(t, []int32{7, 8, 9, 2}, out.TokenIDs)
	require.Equal(t, server.StopEOS, out.StopReason)
	want := []float32{servertest.DefaultLogprob(7, 0), servertest.DefaultLogprob(8, 1), servertest.DefaultLogprob(9, 2), servertest.DefaultLogprob(2, 3)}
	require.Equal(t, want, out.Logprobs)
	require.Equal(t, 3, out.PromptTokens)

	r := rec.Last("/generate")
	require.Equal(t, "traj-1", r.Header.Get(sglang.RoutingHeader))
	require.JSONEq(t, `{"rid":"traj-1","input_ids":[1,2,3],
		"sampling_params":{"temperature":0.7,"top_p":1,"top_k":-1,"min_p":0,"repetition_penalty":1,
		"max_new_tokens":10,"stop_token_ids":[2],"skip_special_tokens":false,"no_stop_trim":true,"sampling_seed":42},
		"return_logprob":true,"logprob_start_len":-1,"stream":false}`, r.Body)

	// Second turn: prefix cached, length stop, no logprobs.
	out, err = c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3, 7, 8, 9, 2, 4}, Params: server.SamplingParams{MaxNewTokens: 1}})
	require.NoError(t, err)
	require.Equal(t, []int32{11}, out.TokenIDs)
	require.Equal(t, server.StopLength, out.StopReason)
	require.Equal(t, 7, out.CachedTokens)
	require.Zero(t, out.WeightVersion)
	require.Nil(t, out.Logprobs)

	// New weights flush the cache and tag later outputs.
	ckpt := wiretest.Checkpoint(t)
	require.NoError(t, c.UpdateWeights(ctx, server.Weights{Version: 3, Path: ckpt}))
	out, err = c.Generate(ctx, server.GenerateRequest{RequestID: "traj-1",
		PromptIDs: []int32{1, 2, 3, 7, 8, 9, 2, 4, 11}, Params: server.SamplingParams{MaxNewTokens: 5}})
	require.NoError(t, err)
	require.Equal(t, []int32{12, 2}, out.TokenIDs)
	require.Equal(t, int64(3), out.WeightVersion)
	require.Zero(t, out.CachedTokens)
	require.Equal(t, ckpt, eng.WeightsPath())
}

func TestGenerateEmptyRequestIDGetsOne(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1)})
	c, rec, _ := setup(t, eng, sglang.Config{})
	_, err := c.Generate(context.Background(), server.GenerateRequest{PromptIDs: []int32{1}, Params: server.SamplingParams{MaxNewTokens: 4}})
	require.NoError(t, err)
	var body struct{ RID string }
	require.NoError(t, json.Unmarshal([]byte(rec.Last("/generate").Body), &body))
	require.Len(t, body.RID, 32)
}

func TestAbortMidway(t *testing.T) {
	wiretest.AbortMidway(t, func(eng server.LLMServer) wiretest.Client {
		c, _, _ := setup(t, eng, sglang.Config{})
		return c
	})
}

func TestRetries(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name      string
		faults    int
		fault     servertest.Fault
		attempts  int
		wantErr   error
		wantCalls int64
		status    int
		retryable bool
	}{
		{"503 then ok", 2, servertest.Unavailable(), 4, nil, 3, 0, false},
		{"429 then ok", 3, servertest.Overloaded(), 4, nil, 4, 0, false},
		{"503 exhausts", 5, servertest.Unavailable(), 3, server.ErrUnavailable, 3, 503, true},
		{"429 exhausts", 5, servertest.Overloaded(), 2, server.ErrOverloaded, 2, 429, true},
		{"400 not retried", 1, servertest.ErrorFault(server.ErrBadRequest), 4, server.ErrBadRequest, 1, 400, false},
		{"500 not retried", 1, servertest.ErrorFault(io.ErrUnexpectedEOF), 4, server.ErrBadResponse, 1, 500, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			eng := servertest.New(servertest.Config{Rule: servertest.Constant(4, 5)})
			eng.FaultNext(tc.faults, tc.fault)
			c, _, _ := setup(t, eng, sglang.Config{Name: "sgX", MaxAttempts: tc.attempts})
			out, err := c.Generate(ctx, server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
			require.Equal(t, tc.wantCalls, eng.Stats().Calls)
			if tc.wantErr == nil {
				require.NoError(t, err)
				require.Equal(t, []int32{4, 5}, out.TokenIDs)
				return
			}
			require.ErrorIs(t, err, tc.wantErr)
			var se *server.Error
			require.ErrorAs(t, err, &se)
			require.Equal(t, "sgX", se.Server)
			require.Equal(t, "generate", se.Op)
			require.Equal(t, tc.status, se.Status)
			require.Equal(t, tc.retryable, se.Retryable)
			require.Equal(t, tc.retryable, server.IsRetryable(err))
			require.Contains(t, err.Error(), "sgX generate: HTTP")
		})
	}
}

func TestConnectErrorRetriedThenTyped(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now
	c, err := sglang.New(sglang.Config{BaseURL: "http://" + addr, MaxAttempts: 3, BackoffBase: time.Millisecond, BackoffMax: 2 * time.Millisecond})
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.True(t, server.IsRetryable(err))
	require.Error(t, c.Health(context.Background()))
}

func TestServerDiesThenComesBack(t *testing.T) {
	// The first attempt finds nothing listening; a later one succeeds.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(9)})
	api, err := httpapi.New(eng, httpapi.Config{Addr: addr})
	require.NoError(t, err)
	defer api.Close()
	c, err := sglang.New(sglang.Config{BaseURL: "http://" + addr, MaxAttempts: 50, BackoffBase: 5 * time.Millisecond, BackoffMax: 10 * time.Millisecond})
	require.NoError(t, err)
	time.AfterFunc(30*time.Millisecond, func() { _ = api.Start() })
	out, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
	require.NoError(t, err)
	require.Equal(t, []int32{9}, out.TokenIDs)
	require.Equal(t, int64(1), eng.Stats().Calls)
}

func TestCancelAbortsServerSide(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1, 2, 3), Latency: servertest.Fixed(10 * time.Second)})
	c, rec, _ := setup(t, eng, sglang.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := c.Generate(ctx, server.GenerateRequest{RequestID: "cancel-me", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, context.Canceled)
	require.False(t, server.IsRetryable(err))
	require.Less(t, time.Since(start), 5*time.Second)
	require.Contains(t, rec.Paths(), "/abort_request")
	require.JSONEq(t, `{"rid":"cancel-me"}`, rec.Last("/abort_request").Body)
	// The engine stopped working on it.
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 0 }, 2*time.Second, time.Millisecond)
}

func TestHangPastDeadline(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	eng.SetFault(servertest.HangFault())
	c, _, _ := setup(t, eng, sglang.Config{AbortTimeout: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Generate(ctx, server.GenerateRequest{RequestID: "h", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	var se *server.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, "generate", se.Op)
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 0 }, 2*time.Second, time.Millisecond)
}

func TestControl(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1)})
	c, rec, _ := setup(t, eng, sglang.Config{})
	var _ server.Aborter = c
	var _ server.Sleeper = c
	var _ server.WeightUpdater = c
	var _ server.HealthChecker = c
	var _ server.CacheFlusher = c
	var _ server.Pauser = c

	require.NoError(t, c.Health(ctx))
	eng.SetHealthy(false)
	err := c.Health(ctx)
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.Contains(t, err.Error(), "marked unhealthy")
	eng.SetHealthy(true)

	require.NoError(t, c.Sleep(ctx, server.SleepKVCache))
	require.JSONEq(t, `{"tags":["kv_cache"]}`, rec.Last("/release_memory_occupation").Body)
	sl, lvl := eng.Sleeping()
	require.True(t, sl)
	require.Equal(t, server.SleepKVCache, lvl)
	_, err = c.Generate(ctx, server.GenerateRequest{RequestID: "s", PromptIDs: []int32{1}})
	require.ErrorIs(t, err, server.ErrUnavailable) // sleeping engine answers 503
	require.NoError(t, c.Sleep(ctx, server.SleepWeights))
	_, lvl = eng.Sleeping()
	require.Equal(t, server.SleepWeights, lvl)
	require.ErrorIs(t, c.Sleep(ctx, 7), server.ErrBadRequest)
	require.NoError(t, c.WakeUp(ctx))
	sl, _ = eng.Sleeping()
	require.False(t, sl)

	require.ErrorIs(t, c.UpdateWeights(ctx, server.Weights{Version: 1}), server.ErrBadRequest)
	ckpt := wiretest.Checkpoint(t)
	require.NoError(t, c.UpdateWeights(ctx, server.Weights{Version: 5, Path: ckpt}))
	require.JSONEq(t, `{"model_path":`+strconv.Quote(ckpt)+`,"weight_version":"5","flush_cache":true}`, rec.Last("/update_weights_from_disk").Body)
	require.Equal(t, int64(5), eng.WeightVersion())
	require.Equal(t, 1, eng.Flushes())

	require.NoError(t, c.FlushCache(ctx))
	require.Equal(t, 2, eng.Flushes())
	require.NoError(t, c.AbortAll(ctx))
	require.JSONEq(t, `{"rid":"","abort_all":true}`, rec.Last("/abort_request").Body)

	require.NoError(t, c.Pause(ctx, false))
	require.JSONEq(t, `{"mode":"in_place"}`, rec.Last("/pause_generation").Body)
	require.NoError(t, c.Resume(ctx))
	require.Equal(t, "/continue_generation", rec.Paths()[len(rec.Paths())-1])
}

func TestAuthToken(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1)})
	api, err := httpapi.Start(eng, httpapi.Config{AuthToken: "s3cret"})
	require.NoError(t, err)
	defer api.Close()
	good, err := sglang.New(sglang.Config{BaseURL: api.URL(), AuthToken: "s3cret"})
	require.NoError(t, err)
	bad, err := sglang.New(sglang.Config{BaseURL: api.URL(), AuthToken: "nope"})
	require.NoError(t, err)
	req := server.GenerateRequest{RequestID: "x", PromptIDs: []int32{1}}
	_, err = good.Generate(context.Background(), req)
	require.NoError(t, err)
	_, err = bad.Generate(context.Background(), req)
	require.ErrorIs(t, err, server.ErrBadRequest)
	var se *server.Error
	require.ErrorAs(t, err, &se)
	require.Equal(t, 401, se.Status)
}

func TestNewRejectsBadURL(t *testing.T) {
	for _, u := range []string{"", "localhost:30000", "ftp://x", "http://"} {
		_, err := sglang.New(sglang.Config{BaseURL: u})
		require.Error(t, err, u)
	}
}

// TestRecordedResponses parses bodies in the shapes SGLang returns (see
// testdata/README.md).
func TestRecordedResponses(t *testing.T) {
	tests := []struct {
		file     string
		logprobs bool
		want     server.TokenOutput
		wantErr  string
	}{
		{file: "stop_logprobs.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{1234, 151645},
			Logprobs: []float32{-0.0123, -1.2}, StopReason: server.StopEOS, PromptTokens: 812, CachedTokens: 768}},
		{file: "stop_logprobs.json", logprobs: false, want: server.TokenOutput{TokenIDs: []int32{1234, 151645},
			StopReason: server.StopEOS, PromptTokens: 812, CachedTokens: 768}},
		{file: "length_version.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{90, 91, 92},
			Logprobs: []float32{-0.5, -0.25, 0}, StopReason: server.StopLength, PromptTokens: 4, WeightVersion: 12}},
		{file: "abort_before_prefill.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{},
			Logprobs: []float32{}, StopReason: server.StopAbort, PromptTokens: 10}},
		{file: "abort_partial.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{5, 6},
			Logprobs: []float32{-1, -2}, StopReason: server.StopAbort, PromptTokens: 3, CachedTokens: 2}},
		{file: "ids_only_in_logprobs.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{42, 2},
			Logprobs: []float32{-0.1, -0.2}, StopReason: server.StopEOS, PromptTokens: 2}},
		{file: "finish_string.json", logprobs: false, want: server.TokenOutput{TokenIDs: []int32{3},
			StopReason: server.StopLength, PromptTokens: 1}},
		{file: "err_logprob_mismatch.json", logprobs: true, wantErr: "output_token_logprobs[1] is for token 7 but output_ids[1] is 8"},
		{file: "err_logprob_count.json", logprobs: true, wantErr: "has 1 entries for 2 output_ids"},
		{file: "err_unfinished.json", wantErr: "finish_reason is missing"},
		{file: "err_batch.json", wantErr: "batch response"},
		{file: "err_unknown_finish.json", wantErr: `unknown type "timeout"`},
		// SGLang's ORJSONResponse writes -inf as null (orjson encodes
		// non-finite floats as null): the token's logprob is -Inf.
		{file: "null_logprob.json", logprobs: true, want: server.TokenOutput{TokenIDs: []int32{7},
			Logprobs: []float32{float32(math.Inf(-1))}, StopReason: server.StopEOS}},
		{file: "err_no_meta.json", wantErr: "no meta_info"},
		{file: "err_positive_logprob.json", logprobs: true, wantErr: "not ≤ 0"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			wiretest.CheckRecorded(t, sglang.ParseGenerateResponse, tc.file, tc.logprobs, tc.want, tc.wantErr)
		})
	}
}

// TestErrorBodies checks that the server's message reaches the error, in
// each shape servers use.
func TestErrorBodies(t *testing.T) {
	tests := []struct {
		status int
		body   string
		want   string
		is     error
	}{
		{400, `{"error":{"message":"input_ids too long","type":"BadRequestError","code":400}}`, "input_ids too long", server.ErrBadRequest},
		{400, `{"object":"error","message":"The context length is exceeded","type":"BadRequestError"}`, "context length is exceeded", server.ErrBadRequest},
		{422, `{"detail":[{"loc":["body","rid"],"msg":"str type expected"}]}`, "str type expected", server.ErrBadRequest},
		{500, `Internal Server Error`, "Internal Server Error", server.ErrBadResponse},
		{502, ``, "bad gateway", server.ErrUnavailable},
		{404, `{"detail":"Not Found"}`, "Not Found", server.ErrBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.body, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c, err := sglang.New(sglang.Config{BaseURL: ts.URL, Name: "peer"})
			require.NoError(t, err)
			_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "x", PromptIDs: []int32{1}})
			require.ErrorIs(t, err, tc.is)
			if tc.body != "" {
				require.Contains(t, err.Error(), tc.want)
			}
			require.Contains(t, err.Error(), "peer generate: HTTP")
		})
	}
}

func FuzzParseGenerateResponse(f *testing.F) {
	wiretest.AddRecordedSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, logprobs bool) {
		out, err := sglang.ParseGenerateResponse(data, logprobs)
		if err != nil {
			require.ErrorIs(t, err, server.ErrBadResponse)
			return
		}
		require.NotNil(t, out.TokenIDs)
		require.Contains(t, []server.StopReason{server.StopEOS, server.StopLength, server.StopAbort}, out.StopReason)
		if logprobs {
			require.Len(t, out.Logprobs, len(out.TokenIDs))
			for _, lp := range out.Logprobs {
				require.LessOrEqual(t, lp, float32(0))
			}
		}
	})
}

func TestServerDiesMidRequest(t *testing.T) {
	eng := servertest.New(servertest.Config{Latency: servertest.Fixed(time.Minute)})
	api, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(t, err)
	c, err := sglang.New(sglang.Config{BaseURL: api.URL(), Name: "dying", BackoffBase: time.Millisecond, BackoffMax: time.Millisecond, AbortTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	go func() {
		for eng.Stats().InFlight == 0 {
			time.Sleep(time.Millisecond)
		}
		_ = api.Close()
	}()
	_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1}})
	// The request reached the server: resending it could duplicate work, so
	// the error is typed but not retryable, and it was sent exactly once.
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.False(t, server.IsRetryable(err))
	require.Contains(t, err.Error(), "dying generate")
	require.Equal(t, int64(1), eng.Stats().Calls)
}

// TestConcurrentSessions runs many multi-turn sessions at once through one
// client and one server: every reply is the one the rule makes for that
// session and turn, and the server ends with nothing in flight.
func TestConcurrentSessions(t *testing.T) {
	rule := servertest.Random(9, 50000, 1, 40)
	eng := servertest.New(servertest.Config{Rule: rule, Latency: servertest.Uniform(0, 2*time.Millisecond), Seed: 3})
	c, _, _ := setup(t, eng, sglang.Config{})
	const sessions, turns = 64, 6
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rid := fmt.Sprintf("sess-%d", s)
			prompt := []int32{1, 2, 3}
			for turn := range turns {
				req := server.GenerateRequest{RequestID: rid, PromptIDs: prompt, Params: server.SamplingParams{Logprobs: true}}
				out, err := c.Generate(context.Background(), req)
				if err != nil {
					errs <- err
					return
				}
				want := rule(servertest.Call{Req: req, Turn: turn}).Tokens
				if fmt.Sprint(out.TokenIDs) != fmt.Sprint(want) || len(out.Logprobs) != len(want) {
					errs <- fmt.Errorf("%s turn %d: got %v, want %v", rid, turn, out.TokenIDs, want)
					return
				}
				if turn > 0 && out.CachedTokens != len(prompt)-1 {
					errs <- fmt.Errorf("%s turn %d: cached %d of %d", rid, turn, out.CachedTokens, len(prompt))
					return
				}
				prompt = append(append(prompt, out.TokenIDs...), 7)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := eng.Stats()
	require.Equal(t, int64(sessions*turns), st.Calls)
	require.Equal(t, int64(sessions*turns), st.Completed)
	require.Zero(t, st.InFlight)
	require.Greater(t, st.MaxInFlight, int64(1))
}

// fakeMemorySaver replays SGLang's release/resume_memory_occupation
// handlers (sgl-project/sglang
// python/sglang/srt/managers/scheduler_update_weights_mixin.py @ c20e3fec):
// release adds the tags to offload_tags; resume reads an empty or missing
// list as all tags and removes each from the set, a KeyError (an error
// response) for a tag that was not released.
type fakeMemorySaver struct {
	mu       sync.Mutex
	offload  map[string]bool
	requests []string
}

func (f *fakeMemorySaver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := io.ReadAll(r.Body)
	f.requests = append(f.requests, r.URL.Path+" "+string(body))
	var in struct {
		Tags []string `json:"tags"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if len(in.Tags) == 0 {
		in.Tags = []string{"weights", "kv_cache", "cuda_graph"} // GPU_MEMORY_ALL_TYPES
	}
	switch r.URL.Path {
	case "/release_memory_occupation":
		for _, t := range in.Tags {
			f.offload[t] = true
		}
	case "/resume_memory_occupation":
		for _, t := range in.Tags {
			if !f.offload[t] {
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"KeyError: '%s'"}}`, t)
				return
			}
			delete(f.offload, t)
		}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"success":true,"message":""}`)
}

func TestWakeUpResumesOnlyReleasedTags(t *testing.T) {
	ctx := context.Background()
	fake := &fakeMemorySaver{offload: map[string]bool{}}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	c, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)

	// A partial sleep: only the KV cache. An empty resume would name the
	// weights and cuda_graph too and fail on SGLang.
	require.NoError(t, c.Sleep(ctx, server.SleepKVCache))
	require.NoError(t, c.WakeUp(ctx))
	require.Empty(t, fake.offload)

	// Deepening a sleep releases only what is still held, and the wake-up
	// names everything released.
	require.NoError(t, c.Sleep(ctx, server.SleepKVCache))
	require.NoError(t, c.Sleep(ctx, server.SleepWeights))
	require.NoError(t, c.Sleep(ctx, server.SleepWeights)) // nothing left to release: no request
	require.NoError(t, c.WakeUp(ctx))
	require.Empty(t, fake.offload)
	require.Equal(t, []string{
		`/release_memory_occupation {"tags":["kv_cache"]}`,
		`/resume_memory_occupation {"tags":["kv_cache"]}`,
		`/release_memory_occupation {"tags":["kv_cache"]}`,
		`/release_memory_occupation {"tags":["weights"]}`,
		`/resume_memory_occupation {"tags":["kv_cache","weights"]}`,
	}, fake.requests)

	// A client that never slept the server cannot know what was released:
	// it asks for everything.
	fake.offload = map[string]bool{"weights": true, "kv_cache": true, "cuda_graph": true}
	c2, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)
	require.NoError(t, c2.WakeUp(ctx))
	require.Equal(t, `/resume_memory_occupation {}`, fake.requests[len(fake.requests)-1])

	// A failed resume keeps the record, so a retry names the same tags.
	require.NoError(t, c.Sleep(ctx, server.SleepKVCache))
	delete(fake.offload, "kv_cache") // e.g. resumed by someone else
	require.Error(t, c.WakeUp(ctx))
	fake.offload["kv_cache"] = true
	require.NoError(t, c.WakeUp(ctx))
}
