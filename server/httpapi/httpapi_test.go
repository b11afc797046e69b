package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/servertest"
)

var testClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}

func TestMain(m *testing.M) { wiretest.Main(m, testClient) }

// capture is a servertest rule that remembers the requests it saw.
type capture struct {
	mu   sync.Mutex
	reqs []server.GenerateRequest
	rule servertest.Rule
}

func (c *capture) Rule(call servertest.Call) servertest.Reply {
	c.mu.Lock()
	c.reqs = append(c.reqs, call.Req)
	c.mu.Unlock()
	return c.rule(call)
}

func (c *capture) last() server.GenerateRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reqs[len(c.reqs)-1]
}

func start(t *testing.T, engine server.LLMServer, cfg httpapi.Config) *httpapi.Server {
	t.Helper()
	s, err := httpapi.Start(engine, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func post(t *testing.T, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

// postAsync is post for goroutines other than the test's: failures come
// back as status -1 and the error text instead of stopping the test.
func postAsync(url, body string) (int, string) {
	resp, err := testClient.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return -1, err.Error()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return -1, err.Error()
	}
	return resp.StatusCode, string(data)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := testClient.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(data)
}

func TestBindsLoopbackByDefault(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{})
	require.True(t, strings.HasPrefix(s.Addr(), "127.0.0.1:"), s.Addr())
}

func TestSGLangGenerate(t *testing.T) {
	cp := &capture{rule: servertest.Constant(5, 6, 2, 9)}
	eng := servertest.New(servertest.Config{Rule: cp.Rule})
	s := start(t, eng, httpapi.Config{})

	code, body := post(t, s.URL()+"/generate", `{"rid":"r1","input_ids":[1,2,3],"return_logprob":true,
		"sampling_params":{"temperature":0,"top_k":-1,"max_new_tokens":8,"stop_token_ids":[2],"sampling_seed":7,"min_p":0.1,"repetition_penalty":1.1}}`)
	require.Equal(t, 200, code, body)
	seed := uint64(7)
	require.Equal(t, server.GenerateRequest{RequestID: "r1", PromptIDs: []int32{1, 2, 3}, Params: server.SamplingParams{
		Temperature: 0, TopP: 1, TopK: 0, MinP: 0.1, RepetitionPenalty: 1.1, MaxNewTokens: 8,
		StopTokenIDs: []int32{2}, Seed: &seed, Logprobs: true}}, cp.last())
	var resp struct {
		Text      string  `json:"text"`
		OutputIDs []int32 `json:"output_ids"`
		MetaInfo  struct {
			ID                  string          `json:"id"`
			FinishReason        json.RawMessage `json:"finish_reason"`
			PromptTokens        int             `json:"prompt_tokens"`
			CompletionTokens    int             `json:"completion_tokens"`
			WeightVersion       string          `json:"weight_version"`
			OutputTokenLogprobs [][]any         `json:"output_token_logprobs"`
		} `json:"meta_info"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &resp))
	require.Equal(t, []int32{5, 6, 2}, resp.OutputIDs)
	require.Equal(t, "r1", resp.MetaInfo.ID)
	require.JSONEq(t, `{"type":"stop","matched":2}`, string(resp.MetaInfo.FinishReason))
	require.Equal(t, 3, resp.MetaInfo.PromptTokens)
	require.Equal(t, 3, resp.MetaInfo.CompletionTokens)
	require.Equal(t, "0", resp.MetaInfo.WeightVersion)
	require.Len(t, resp.MetaInfo.OutputTokenLogprobs, 3)
	for i, e := range resp.MetaInfo.OutputTokenLogprobs {
		require.Len(t, e, 3)
		require.InDelta(t, float64(servertest.DefaultLogprob(resp.OutputIDs[i], i)), e[0].(float64), 1e-7)
		require.Equal(t, float64(resp.OutputIDs[i]), e[1].(float64))
		require.Nil(t, e[2])
	}

	// SGLang's defaults when sampling_params is absent; no logprobs key.
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[4]}`)
	require.Equal(t, 200, code, body)
	got := cp.last()
	require.Len(t, got.RequestID, 32)
	require.Equal(t, server.SamplingParams{Temperature: 1, TopP: 1, MaxNewTokens: 128}, got.Params)
	require.NotContains(t, body, "output_token_logprobs")
	require.Contains(t, body, `"finish_reason":{"type":"stop","matched":9}`)

	code, body = post(t, s.URL()+"/generate", `{"input_ids":[4],"sampling_params":{"max_new_tokens":2}}`)
	require.Equal(t, 200, code, body)
	require.Contains(t, body, `"finish_reason":{"type":"length","length":2}`)
}

// wholeTurns hides an engine's optional capabilities (Streamer among
// them): what an engine that only returns whole turns looks like.
type wholeTurns struct{ server.LLMServer }

func TestSGLangStream(t *testing.T) {
	s := start(t, wholeTurns{servertest.New(servertest.Config{Rule: servertest.Constant(3, 4)})}, httpapi.Config{})
	resp, err := testClient.Post(s.URL()+"/generate", "application/json", strings.NewReader(`{"input_ids":[1],"stream":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	events := readSSE(t, resp.Body)
	require.Len(t, events, 2)
	require.Equal(t, "[DONE]", events[1])
	require.Contains(t, events[0], `"output_ids":[3,4]`)
}

func readSSE(t *testing.T, r io.Reader) []string {
	t.Helper()
	var events []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		require.True(t, strings.HasPrefix(line, "data: "), line)
		events = append(events, strings.TrimPrefix(line, "data: "))
	}
	require.NoError(t, sc.Err())
	return events
}

func TestRequestErrors(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{MaxBodyBytes: 200})
	tests := []struct {
		path, body string
		status     int
		want       string
	}{
		{"/generate", ``, 400, "empty request body"},
		{"/generate", `{"input_ids":[1,2`, 400, "invalid JSON"},
		{"/generate", `{"input_ids":"abc"}`, 400, `field "input_ids": expected a list of token ids`},
		{"/generate", `{"input_ids":[[1],[2,-3]]}`, 400, `batch item 1: field "input_ids": element 1: token id -3 is negative`},
		{"/generate", `{"input_ids":[1,-2]}`, 400, `element 1: token id -2 is negative`},
		{"/generate", `{"input_ids":[1, 99999999999]}`, 400, `field "input_ids"`},
		{"/generate", `{"input_ids":[]}`, 400, "empty prompt"},
		{"/generate", `{"rid":["a","b"],"input_ids":[1]}`, 400, `field "rid": expected a string`},
		{"/generate", `{"text":"hi"}`, 400, "no tokenizer"},
		{"/generate", `{"text":"hi","input_ids":[1]}`, 400, "exactly one"},
		{"/generate", `{}`, 400, "missing prompt"},
		{"/generate", `{"input_embeds":[[0.1]]}`, 400, "input_embeds"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"n":0}}`, 400, `"sampling_params.n": must be ≥ 1`},
		{"/generate", `{"input_ids":[1],"sampling_params":{"stop":["x"]}}`, 400, "stop strings"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"top_p":0}}`, 400, `"sampling_params.top_p": must be in (0, 1]`},
		{"/generate", `{"input_ids":[1],"sampling_params":{"temperature":-1}}`, 400, "temperature"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"max_new_tokens":0}}`, 400, "max_new_tokens"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"top_k":-5}}`, 400, "top_k"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"regex":"a+"}}`, 400, "constrained decoding"},
		{"/generate", `{"input_ids":[1],"return_logprob":true,"top_logprobs_num":21}`, 400, "top_logprobs_num"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"temperature":"hot"}}`, 400, `field "sampling_params.temperature": expected float64`},
		{"/generate", `{"input_ids":[` + strings.Repeat("1,", 200) + `1]}`, 413, "larger than the limit of 200 bytes"},
		{"/inference/v1/generate", `{"token_ids":[1],"sampling_params":{"seed":-1}}`, 400, "seed"},
		{"/inference/v1/generate", `{"sampling_params":{}}`, 400, `"token_ids"`},
		{"/inference/v1/generate", `{"token_ids":[1],"sampling_params":{"logprobs":-1}}`, 400, "logprobs"},
		{"/v1/completions", `{"prompt":[1],"echo":true}`, 400, "echo"},
		{"/v1/completions", `{"prompt":"hello"}`, 400, "no tokenizer"},
		{"/v1/completions", `{"prompt":[1],"max_tokens":-3}`, 400, `"max_tokens": must be ≥ 1`},
		{"/v1/completions", `{"prompt":[1],"presence_penalty":2.5}`, 400, "presence_penalty"},
		{"/generate", `{"input_ids":[1],"sampling_params":{"frequency_penalty":-3}}`, 400, "sampling_params.frequency_penalty"},
		// Fields of embedded Go structs are named as the client sent them.
		{"/v1/completions", `{"prompt":[1],"temperature":"hot"}`, 400, `field "temperature": expected float64`},
		{"/inference/v1/generate", `{"token_ids":[1],"sampling_params":{"top_k":1.5}}`, 400, `field "sampling_params.top_k": expected int`},
		{"/v1/chat/completions", `{"messages":[]}`, 404, "no chat template"},
		{"/abort_request", `{}`, 400, `"rid"`},
		{"/update_weights_from_disk", `{"model_path":"/x","weight_version":[2]}`, 400, "weight_version"},
		{"/update_weights_from_disk", `{}`, 400, "model_path"},
		{"/release_memory_occupation", `{"tags":["gpu"]}`, 400, `unknown tag "gpu"`},
		{"/pause_generation", `{"mode":"later"}`, 400, `unknown mode "later"`},
		{"/pause?mode=later", ``, 400, `unknown mode "later"`},
		{"/sleep?level=3", ``, 400, "level"},
		{"/wake_up?tags=gpu", ``, 400, "gpu"},
	}
	for _, tc := range tests {
		t.Run(tc.path+" "+tc.body, func(t *testing.T) {
			code, body := post(t, s.URL()+tc.path, tc.body)
			require.Equal(t, tc.status, code, body)
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			require.Contains(t, e.Error.Message, tc.want)
			require.Equal(t, "invalid_request_error", e.Error.Type, body)
		})
	}
	// Wrong method.
	code, _ := get(t, s.URL()+"/generate")
	require.Equal(t, http.StatusMethodNotAllowed, code)
}

func TestAuth(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{AuthToken: "tok"})
	code, _ := post(t, s.URL()+"/generate", `{"input_ids":[1]}`)
	require.Equal(t, 401, code)
	code, _ = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "Authorization", "Bearer tok2")
	require.Equal(t, 401, code)
	code, _ = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "Authorization", "Basic tok")
	require.Equal(t, 401, code)
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "Authorization", "bearer tok")
	require.Equal(t, 200, code, body)
	code, _ = get(t, s.URL()+"/health")
	require.Equal(t, 401, code)
	// Anthropic's clients send the token as x-api-key; a wrong one there
	// does not let a right bearer token down, nor the reverse.
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "x-api-key", "tok")
	require.Equal(t, 200, code, body)
	code, _ = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "x-api-key", "tok2")
	require.Equal(t, 401, code)
	code, body = post(t, s.URL()+"/generate", `{"input_ids":[1]}`, "x-api-key", "tok2", "Authorization", "Bearer tok")
	require.Equal(t, 200, code, body)
}

type plainEngine struct{ err error }

func (p plainEngine) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	if p.err != nil {
		return server.TokenOutput{}, p.err
	}
	return server.TokenOutput{TokenIDs: []int32{1}, StopReason: server.StopEOS}, nil
}

func TestEngineErrorsMapToStatus(t *testing.T) {
	tests := []struct {
		err    error
		status int
	}{
		{fmt.Errorf("x: %w", server.ErrUnavailable), 503},
		{fmt.Errorf("x: %w", server.ErrOverloaded), 429},
		{fmt.Errorf("x: %w", server.ErrBadRequest), 400},
		{fmt.Errorf("x: %w", server.ErrBadResponse), 500},
		{context.DeadlineExceeded, 504},
		{&server.Error{Server: "up", Op: "generate", Status: 502, Err: errors.New("gateway")}, 502},
		{errors.New("boom"), 500},
	}
	for _, tc := range tests {
		t.Run(tc.err.Error(), func(t *testing.T) {
			s := start(t, plainEngine{err: tc.err}, httpapi.Config{})
			for _, path := range []string{"/generate", "/inference/v1/generate", "/v1/completions"} {
				body := `{"input_ids":[1]}`
				if path != "/generate" {
					body = `{"token_ids":[1],"prompt":[1]}`
				}
				code, resp := post(t, s.URL()+path, body)
				require.Equal(t, tc.status, code, resp)
				require.Contains(t, resp, tc.err.Error())
			}
		})
	}
}

func TestCapabilitiesMissing(t *testing.T) {
	s := start(t, plainEngine{}, httpapi.Config{})
	for _, path := range []string{"/abort_request", "/flush_cache", "/release_memory_occupation", "/resume_memory_occupation",
		"/pause_generation", "/continue_generation", "/abort_requests", "/sleep", "/wake_up", "/pause", "/resume", "/reset_prefix_cache"} {
		body := `{"rid":"x"}`
		if path == "/abort_requests" {
			body = `{"request_ids":["x"]}`
		}
		code, resp := post(t, s.URL()+path, body)
		require.Equal(t, http.StatusNotImplemented, code, path+": "+resp)
	}
	code, resp := post(t, s.URL()+"/update_weights_from_disk", `{"model_path":"/m"}`)
	require.Equal(t, http.StatusNotImplemented, code, resp)
	// No HealthChecker: healthy while serving.
	code, _ = get(t, s.URL()+"/health")
	require.Equal(t, 200, code)
}

func TestControlEndpoints(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	weights := t.TempDir()
	ckpt := filepath.Join(weights, "ckpt")
	require.NoError(t, os.Mkdir(ckpt, 0o700))
	s := start(t, eng, httpapi.Config{Model: "m1", AllowedWeightDirs: []string{weights}})
	code, _ := get(t, s.URL()+"/health_generate")
	require.Equal(t, 200, code)
	eng.SetHealthy(false)
	code, body := get(t, s.URL()+"/health")
	require.Equal(t, 503, code)
	require.Contains(t, body, "marked unhealthy")

	code, body = post(t, s.URL()+"/update_weights_from_disk", `{"model_path":`+strconv.Quote(ckpt)+`,"weight_version":9,"abort_all_requests":true,"flush_cache":false}`)
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"success":true,"message":"Succeeded to update model weights.","num_paused_requests":0}`, body)
	require.Equal(t, int64(9), eng.WeightVersion())
	require.Equal(t, 0, eng.Flushes())

	code, _ = post(t, s.URL()+"/release_memory_occupation", ``)
	require.Equal(t, 200, code)
	sl, lvl := eng.Sleeping()
	require.True(t, sl)
	require.Equal(t, server.SleepWeights, lvl)
	code, body = get(t, s.URL()+"/is_sleeping")
	require.Equal(t, 200, code)
	require.JSONEq(t, `{"is_sleeping":true}`, body)
	code, _ = post(t, s.URL()+"/resume_memory_occupation", `{"tags":["kv_cache"]}`)
	require.Equal(t, 200, code)
	sl, _ = eng.Sleeping()
	require.False(t, sl)
	code, _ = post(t, s.URL()+"/sleep?level=1", ``)
	require.Equal(t, 200, code)
	_, lvl = eng.Sleeping()
	require.Equal(t, server.SleepKVCache, lvl)
	code, _ = post(t, s.URL()+"/wake_up?tags=weights&tags=kv_cache", ``)
	require.Equal(t, 200, code)

	// GET /flush_cache (which SGLang also takes) is refused: an image tag
	// on any web page could send it.
	code, _ = get(t, s.URL()+"/flush_cache")
	require.Equal(t, http.StatusMethodNotAllowed, code)
	code, _ = post(t, s.URL()+"/flush_cache", ``)
	require.Equal(t, 200, code)
	code, _ = post(t, s.URL()+"/reset_prefix_cache", ``)
	require.Equal(t, 200, code)
	require.Equal(t, 2, eng.Flushes())

	code, body = get(t, s.URL()+"/v1/models")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"id":"m1"`)
	code, body = get(t, s.URL()+"/model_info")
	require.Equal(t, 200, code)
	require.Contains(t, body, `"model_path":"m1"`)
}

func TestAbortAndPauseThroughHTTP(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(1, 2, 3, 4, 5, 6), TokenLatency: servertest.Fixed(30 * time.Millisecond)})
	s := start(t, eng, httpapi.Config{})
	type result struct {
		code int
		body string
	}
	results := make(chan result, 3)
	for _, body := range []string{`{"rid":"a","input_ids":[1]}`, `{"rid":"b","input_ids":[1]}`, `{"request_id":"c","token_ids":[1],"sampling_params":{"max_tokens":50}}`} {
		path := "/generate"
		if strings.Contains(body, "token_ids") {
			path = "/inference/v1/generate"
		}
		go func() {
			code, resp := postAsync(s.URL()+path, body)
			results <- result{code, resp}
		}()
	}
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 3 }, 2*time.Second, time.Millisecond)
	time.Sleep(40 * time.Millisecond)
	code, _ := post(t, s.URL()+"/abort_request", `{"rid":"a"}`)
	require.Equal(t, 200, code)
	code, _ = post(t, s.URL()+"/abort_requests", `{"request_ids":["c"]}`)
	require.Equal(t, 200, code)
	code, _ = post(t, s.URL()+"/pause_generation", `{"mode":"abort"}`)
	require.Equal(t, 200, code)
	for range 3 {
		r := <-results
		require.Equal(t, 200, r.code)
		require.True(t, strings.Contains(r.body, `"type":"abort"`) || strings.Contains(r.body, `"finish_reason":"abort"`), r.body)
	}
	// Paused: a new request waits until /continue_generation.
	go func() {
		code, resp := postAsync(s.URL()+"/generate", `{"rid":"d","input_ids":[1],"sampling_params":{"max_new_tokens":1}}`)
		results <- result{code, resp}
	}()
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	select {
	case r := <-results:
		t.Fatalf("ran while paused: %v", r)
	case <-time.After(30 * time.Millisecond):
	}
	code, _ = post(t, s.URL()+"/continue_generation", ``)
	require.Equal(t, 200, code)
	r := <-results
	require.Equal(t, 200, r.code)
	require.Contains(t, r.body, `"output_ids":[1]`)
}

func TestVLLMGenerateAndCompletions(t *testing.T) {
	cp := &capture{rule: servertest.Constant(5, 6, 2, 9)}
	eng := servertest.New(servertest.Config{Rule: cp.Rule})
	s := start(t, eng, httpapi.Config{Model: "policy"})

	code, body := post(t, s.URL()+"/inference/v1/generate", `{"request_id":"v1","token_ids":[1,2],"sampling_params":{"logprobs":0,"stop_token_ids":[2]}}`)
	require.Equal(t, 200, code, body)
	require.Equal(t, server.SamplingParams{Temperature: 1, TopP: 1, MaxNewTokens: 16, StopTokenIDs: []int32{2}, Logprobs: true}, cp.last().Params)
	var g struct {
		RequestID string `json:"request_id"`
		Choices   []struct {
			FinishReason string  `json:"finish_reason"`
			TokenIDs     []int32 `json:"token_ids"`
			Logprobs     struct {
				Content []struct {
					Token   string  `json:"token"`
					TokenID int32   `json:"token_id"`
					Logprob float32 `json:"logprob"`
				} `json:"content"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &g))
	require.Equal(t, "v1", g.RequestID)
	require.Equal(t, "stop", g.Choices[0].FinishReason)
	require.Equal(t, []int32{5, 6, 2}, g.Choices[0].TokenIDs)
	require.Equal(t, "token_id:6", g.Choices[0].Logprobs.Content[1].Token)
	require.Equal(t, servertest.DefaultLogprob(6, 1), g.Choices[0].Logprobs.Content[1].Logprob)

	code, body = post(t, s.URL()+"/v1/completions", `{"model":"policy","prompt":[1,2],"max_tokens":3,"logprobs":1,"return_token_ids":true,"return_tokens_as_token_ids":true,"request_id":"c1"}`)
	require.Equal(t, 200, code, body)
	var c struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Model   string `json:"model"`
		Choices []struct {
			FinishReason   string  `json:"finish_reason"`
			TokenIDs       []int32 `json:"token_ids"`
			PromptTokenIDs []int32 `json:"prompt_token_ids"`
			Logprobs       struct {
				TokenLogprobs []float32 `json:"token_logprobs"`
				Tokens        []string  `json:"tokens"`
			} `json:"logprobs"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &c))
	require.Equal(t, "cmpl-c1", c.ID)
	require.Equal(t, "text_completion", c.Object)
	require.Equal(t, "policy", c.Model)
	require.Equal(t, "length", c.Choices[0].FinishReason)
	require.Equal(t, []int32{5, 6, 2}, c.Choices[0].TokenIDs)
	require.Equal(t, []int32{1, 2}, c.Choices[0].PromptTokenIDs)
	require.Equal(t, []string{"token_id:5", "token_id:6", "token_id:2"}, c.Choices[0].Logprobs.Tokens)
	require.Equal(t, 2, c.Usage.PromptTokens)
	require.Equal(t, 3, c.Usage.CompletionTokens)

	// Streaming completions: one chunk, a usage chunk, [DONE].
	resp, err := testClient.Post(s.URL()+"/v1/completions", "application/json",
		strings.NewReader(`{"prompt":[1],"max_tokens":2,"stream":true,"stream_options":{"include_usage":true}}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	events := readSSE(t, resp.Body)
	require.Len(t, events, 3)
	require.Contains(t, events[0], `"finish_reason":"length"`)
	require.Contains(t, events[1], `"completion_tokens":2`)
	require.Equal(t, "[DONE]", events[2])
}

func TestClientDisconnectCancels(t *testing.T) {
	eng := servertest.New(servertest.Config{Latency: servertest.Fixed(time.Minute)})
	s := start(t, eng, httpapi.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/generate", strings.NewReader(`{"input_ids":[1]}`))
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, cancel)
	_, err = testClient.Do(req)
	require.ErrorIs(t, err, context.Canceled)
	require.Eventually(t, func() bool { st := eng.Stats(); return st.InFlight == 0 && st.Failed == 1 }, 2*time.Second, time.Millisecond)
}

func TestGracefulShutdown(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(7), Latency: servertest.Fixed(100 * time.Millisecond)})
	s, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(t, err)
	done := make(chan string, 1)
	go func() {
		_, body := postAsync(s.URL()+"/generate", `{"input_ids":[1]}`)
		done <- body
	}()
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.Shutdown(ctx))
	require.Contains(t, <-done, `"output_ids":[7]`) // the in-flight request finished
	_, err = testClient.Post(s.URL()+"/generate", "application/json", strings.NewReader(`{"input_ids":[1]}`))
	require.Error(t, err) // no longer listening
}

func TestShutdownDeadlineCancelsInFlight(t *testing.T) {
	eng := servertest.New(servertest.Config{Latency: servertest.Fixed(time.Minute)})
	s, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(t, err)
	done := make(chan int, 1)
	go func() {
		resp, err := testClient.Post(s.URL()+"/generate", "application/json", strings.NewReader(`{"input_ids":[1]}`))
		if err != nil {
			done <- -1
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, s.Shutdown(ctx), context.DeadlineExceeded)
	require.Equal(t, int64(0), eng.Stats().InFlight) // handlers returned before Shutdown did
	code := <-done
	require.True(t, code == -1 || code == 503, "status %d", code)
}

func TestCloseKillsConnections(t *testing.T) {
	eng := servertest.New(servertest.Config{Latency: servertest.Fixed(time.Minute)})
	s, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		resp, err := testClient.Post(s.URL()+"/generate", "application/json", strings.NewReader(`{"input_ids":[1]}`))
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	require.NoError(t, s.Close())
	require.Error(t, <-errc)
	require.Equal(t, int64(0), eng.Stats().InFlight)
}

func TestNewValidates(t *testing.T) {
	_, err := httpapi.New(nil, httpapi.Config{})
	require.Error(t, err)
	_, err = httpapi.New(plainEngine{}, httpapi.Config{Chat: &httpapi.Chat{}})
	require.Error(t, err)
	_, err = httpapi.Start(plainEngine{}, httpapi.Config{Addr: "256.0.0.1:1"})
	require.Error(t, err)
}

func TestMountedHandlerAfterClose(t *testing.T) {
	api, err := httpapi.New(servertest.New(servertest.Config{}), httpapi.Config{})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	defer ts.Close()
	code, _ := post(t, ts.URL+"/generate", `{"input_ids":[1]}`)
	require.Equal(t, 200, code)
	require.NoError(t, api.Close())
	code, body := post(t, ts.URL+"/generate", `{"input_ids":[1]}`)
	require.Equal(t, 503, code)
	require.Contains(t, body, "shutting down")
	require.Error(t, api.Start(), "a closed server cannot be restarted")
}

func TestMountedHandlerShutdown(t *testing.T) {
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(4), Latency: servertest.Fixed(80 * time.Millisecond)})
	api, err := httpapi.New(eng, httpapi.Config{})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	defer ts.Close()
	done := make(chan string, 1)
	go func() {
		_, body := postAsync(ts.URL+"/generate", `{"input_ids":[1]}`)
		done <- body
	}()
	require.Eventually(t, func() bool { return eng.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, api.Shutdown(ctx))
	require.Contains(t, <-done, `"output_ids":[4]`)

	// Past the deadline, running requests are cancelled.
	eng2 := servertest.New(servertest.Config{Latency: servertest.Fixed(time.Minute)})
	api2, err := httpapi.New(eng2, httpapi.Config{})
	require.NoError(t, err)
	ts2 := httptest.NewServer(api2)
	defer ts2.Close()
	go func() {
		code, _ := postAsync(ts2.URL+"/generate", `{"input_ids":[1]}`)
		done <- fmt.Sprint(code)
	}()
	require.Eventually(t, func() bool { return eng2.Stats().InFlight == 1 }, 2*time.Second, time.Millisecond)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel2()
	require.ErrorIs(t, api2.Shutdown(ctx2), context.DeadlineExceeded)
	require.Equal(t, "503", <-done)
	require.Zero(t, eng2.Stats().InFlight)
}
