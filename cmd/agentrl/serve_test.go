package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/server/vllm"
)

// servingOn matches the line serve prints once it listens; its group is
// the base URL.
var servingOn = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`)

// waitURL waits (up to a minute) for a command running in the background
// to announce the URL it serves on: the first group of re's first match in
// out. A failure shows stderr as it is then.
func waitURL(t *testing.T, out *syncbuf.Buffer, re *regexp.Regexp, stderr *syncbuf.Buffer) string {
	t.Helper()
	var url string
	if !assert.Eventually(t, func() bool {
		m := re.FindStringSubmatch(out.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	}, 60*time.Second, 5*time.Millisecond) {
		t.Fatalf("no %q in the output; stderr: %s", re, stderr.String())
	}
	return url
}

func TestServe(t *testing.T) {
	tokDir := qwenTokenizerDir(t)
	dir := filepath.Join(t.TempDir(), "tiny-qwen3")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "-out", dir, "-tokenizer", tokDir,
		"-layers", "1", "-hidden", "32", "-heads", "2", "-seed", "1", "-dtype", "bf16"}, strings.NewReader(""), &out, &errOut), errOut.String())

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t.Setenv("AGENTRL_TEST_TOKEN", "tok")
	var sout, serr syncbuf.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runMain(ctx, []string{"serve", "-model", dir, "-addr", "127.0.0.1:0", "-auth-token-env", "AGENTRL_TEST_TOKEN",
			"-tool-parser", "hermes", "-kv-memory", "4000000", "-clamp-max-tokens", "-session-key", "header:x-session-id"}, strings.NewReader(""), &sout, &serr)
	}()
	base := waitURL(t, &sout, servingOn, &serr)

	// SGLang and vLLM clients drive the real engine through the server.
	sc, err := sglang.New(sglang.Config{BaseURL: base, AuthToken: "tok"})
	require.NoError(t, err)
	seed := uint64(5)
	req := server.GenerateRequest{RequestID: "s1", PromptIDs: []int32{9707, 11, 1879}, // "Hello, world"
		Params: server.SamplingParams{Temperature: 1, MaxNewTokens: 6, Seed: &seed, Logprobs: true}}
	a, err := sc.Generate(ctx, req)
	require.NoError(t, err)
	require.Len(t, a.TokenIDs, 6)
	require.Equal(t, server.StopLength, a.StopReason)
	require.Len(t, a.Logprobs, 6)
	vc, err := vllm.New(vllm.Config{BaseURL: base, AuthToken: "tok"})
	require.NoError(t, err)
	b, err := vc.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, a.TokenIDs, b.TokenIDs, "a seeded request gives the same tokens through either API")
	require.Equal(t, a.Logprobs, b.Logprobs)
	require.NoError(t, sc.Health(ctx))

	// Top logprobs and the output penalties from the real engine, through
	// either client alike.
	req.Params.TopLogprobs, req.Params.PresencePenalty, req.Params.FrequencyPenalty = 5, 0.5, 0.5
	a, err = sc.Generate(ctx, req)
	require.NoError(t, err)
	require.Len(t, a.TopLogprobs, len(a.TokenIDs))
	for _, top := range a.TopLogprobs {
		require.Len(t, top, 5)
	}
	b, err = vc.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, a.TokenIDs, b.TokenIDs)
	require.Equal(t, a.TopLogprobs, b.TopLogprobs)

	// The OpenAI chat endpoint renders the template and decodes.
	// -clamp-max-tokens: a budget past the context is lowered, not refused.
	hreq, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"Hi"}],"max_tokens":32000,"temperature":0}`))
	require.NoError(t, err)
	hreq.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	clamped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(clamped))

	body := `{"messages":[{"role":"user","content":"Hi"}],"max_tokens":4,"seed":1}`
	hreq, err = http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	require.NoError(t, err)
	hreq.Header.Set("Authorization", "Bearer tok")
	resp, err = http.DefaultClient.Do(hreq)
	require.NoError(t, err)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, 200, resp.StatusCode, string(data))
	var cr struct {
		Choices []struct {
			Message struct {
				Role string `json:"role"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	require.NoError(t, json.Unmarshal(data, &cr))
	require.Equal(t, "assistant", cr.Choices[0].Message.Role)
	require.LessOrEqual(t, cr.Usage.CompletionTokens, 4)

	// Without the token: 401.
	resp, err = http.Post(base+"/generate", "application/json", strings.NewReader(`{"input_ids":[1]}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, 401, resp.StatusCode)

	cancel()
	require.Equal(t, 0, <-code, serr.String())
	require.Contains(t, sout.String(), "stopped")
	// The endpoints are listed at start and every request is logged.
	require.Contains(t, sout.String(), "endpoints:")
	require.Contains(t, sout.String(), "POST "+base+"/v1/chat/completions")
	require.Regexp(t, `msg=request method=POST path=/generate status=200 bytes=\d+ duration=\S+ remote=127\.0\.0\.1:\d+`, serr.String())
	require.Regexp(t, `msg=request method=POST path=/generate status=401 `, serr.String())
	sglang.DefaultHTTPClient.CloseIdleConnections()
	vllm.DefaultHTTPClient.CloseIdleConnections()
	http.DefaultClient.CloseIdleConnections()
}

func TestServeUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "-model is required"},
		{[]string{"serve", "-model", "x", "extra"}, "unexpected arguments"},
		{[]string{"serve", "-model", "x", "-auth-token-env", "AGENTRL_SURELY_UNSET_VAR"}, "AGENTRL_SURELY_UNSET_VAR is empty or unset"},
		{[]string{"serve", "-model", filepath.Join(t.TempDir(), "none"), "-tool-parser", "hermes"}, "need a tokenizer"},
		{[]string{"serve", "-model", filepath.Join(t.TempDir(), "none")}, "none"},
		{[]string{"serve", "-model", "x", "-max-conns", "0"}, "-max-conns: must be positive"},
		{[]string{"serve", "-model", "x", "-max-inflight", "-3"}, "-max-inflight: must be positive"},
		{[]string{"serve", "-model", "x", "-body-timeout", "0s"}, "-body-timeout: must be positive"},
		{[]string{"serve", "-model", "x", "-max-body", "0"}, "-max-body: must be positive"},
		{[]string{"serve", "-model", "x", "-kv-memory", "-1"}, "must not be negative"},
		{[]string{"serve", "-model", "x", "-allow-weights-dir", ""}, "empty value"},
		{[]string{"serve", "-model", "x", "-weights", "int3"}, "-weights: model: unknown weight type"},
		{[]string{"serve", "-model", "x", "-kv-cache", "fp8"}, `-kv-cache: model: bad input: unknown KV cache type "fp8"`},
	}
	for _, tc := range tests {
		var out, errOut bytes.Buffer
		require.Equal(t, 1, runMain(context.Background(), tc.args, strings.NewReader(""), &out, &errOut))
		require.Contains(t, errOut.String(), tc.want)
	}
}

// TestServeEndpointsRouted checks the endpoint list `serve` prints against
// the real handler: each listed method and path must reach a handler (an
// answer other than the router's own 404 or 405), whatever it then makes
// of the empty request.
func TestServeEndpointsRouted(t *testing.T) {
	h, err := httpapi.New(servertest.New(servertest.Config{}), httpapi.Config{})
	require.NoError(t, err)
	defer h.Close()
	for _, e := range serveEndpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		req := httptest.NewRequestWithContext(ctx, e.method, e.path, strings.NewReader("{}"))
		req.Host = "127.0.0.1"
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		cancel()
		require.NotEqual(t, http.StatusMethodNotAllowed, rec.Code, "%s %s", e.method, e.path)
		// The server's own answer to an unrouted request (httpapi unrouted).
		require.False(t, rec.Code == http.StatusNotFound && strings.Contains(rec.Body.String(), "Invalid URL"), "%s %s is not routed", e.method, e.path)
	}
	var buf bytes.Buffer
	printEndpoints(&buf, "http://127.0.0.1:1", false)
	require.Contains(t, buf.String(), "POST http://127.0.0.1:1/inference/v1/generate")
	require.Contains(t, buf.String(), "(off: no tokenizer)")
}
