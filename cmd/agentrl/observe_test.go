package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

var arithCheckpoint = filepath.Join("..", "..", "internal", "arith", "checkpoint")

// gated is an engine whose calls wait for the gate to open, then end the
// turn with EOS.
type gated struct {
	gate    chan struct{}
	eos     int32
	started chan struct{}
}

func (g *gated) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	select {
	case g.started <- struct{}{}:
	default:
	}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return server.TokenOutput{}, ctx.Err()
	}
	return server.TokenOutput{TokenIDs: []int32{g.eos}, Logprobs: []float32{-0.5}, StopReason: server.StopEOS}, nil
}

// metricValue returns the sum of the samples of name in a text exposition.
func metricValue(t *testing.T, text, name string) float64 {
	t.Helper()
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `(\{[^}]*\})? (\S+)$`)
	sum, found := 0.0, false
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		v, err := strconv.ParseFloat(m[2], 64)
		require.NoError(t, err)
		sum += v
		found = true
	}
	require.True(t, found, "no %s in:\n%s", name, text)
	return sum
}

func scrapeText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
	return string(b)
}

// metricsURL waits for the JSON log record announcing the metrics URL.
func metricsURL(t *testing.T, stderr *syncbuf.Buffer) string {
	t.Helper()
	var url string
	require.Eventually(t, func() bool {
		for _, line := range strings.Split(stderr.String(), "\n") {
			var rec struct{ Msg, URL string }
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "metrics" {
				url = rec.URL
				return true
			}
		}
		return false
	}, 60*time.Second, 5*time.Millisecond, "stderr: %s", stderr.String())
	return url
}

// rollout --metrics-addr: while both trajectories wait on the engine,
// /metrics shows them in flight on the router's server and in the agent
// loop, and none finished; once the engine lets one through, it shows
// one finished and one in flight; the counts match the trajectories the
// rollout returns.
func TestRolloutMetricsAddr(t *testing.T) {
	tok, err := tokenizer.Load(arithCheckpoint)
	require.NoError(t, err)
	g := &gated{gate: make(chan struct{}), eos: tok.EOSTokenIDs()[0], started: make(chan struct{}, 1)}
	api, err := httpapi.Start(g, httpapi.Config{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	defer api.Shutdown(context.Background())

	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "config.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(rolloutYAML), 0o644))
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "What is 2+2?"}], "reward_model": {"ground_truth": "4"}}`+"\n"), 0o644))
	out := filepath.Join(tmp, "out.jsonl")
	var stdout, stderr syncbuf.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runMain(context.Background(), []string{"rollout", "--config", cfg, "--data", data, "--tokenizer", arithCheckpoint,
			"--servers", api.URL(), "--out", out, "--progress", "never", "--metrics-addr", "127.0.0.1:0", "--log-format", "json"},
			strings.NewReader(""), &stdout, &stderr)
	}()
	defer func() {
		select {
		case <-g.gate:
		default:
			close(g.gate) // a failed check must not leave the rollout waiting
		}
		<-code
	}()
	url := metricsURL(t, &stderr)
	var text string
	require.Eventually(t, func() bool {
		text = scrapeText(t, url)
		return metricValue(t, text, "agentrl_router_in_flight") == 2
	}, 60*time.Second, 5*time.Millisecond)
	require.Equal(t, 1.0, metricValue(t, text, "agentrl_router_server_state"))
	require.NotContains(t, text, "agentrl_agentloop_trajectories_total{", "none finished")
	require.Contains(t, text, "go_goroutines")
	require.Equal(t, 2.0, metricValue(t, text, "agentrl_agentloop_trajectories_in_flight"))
	require.Equal(t, 0.0, metricValue(t, text, "agentrl_agentloop_trajectories_queued"))
	require.Equal(t, 2.0, metricValue(t, text, "agentrl_agentloop_prompt_encode_seconds_count"))

	g.gate <- struct{}{} // one engine call returns
	require.Eventually(t, func() bool {
		text = scrapeText(t, url)
		return strings.Contains(text, "agentrl_agentloop_trajectories_total{")
	}, 60*time.Second, 5*time.Millisecond)
	require.Equal(t, 1.0, metricValue(t, text, "agentrl_agentloop_trajectories_total"))
	require.Equal(t, 1.0, metricValue(t, text, "agentrl_agentloop_trajectories_in_flight"))
	require.Equal(t, 1.0, metricValue(t, text, "agentrl_router_in_flight"))
	mid := text
	g.gate <- struct{}{}
	rc := <-code
	code <- rc // for the deferred wait
	require.Equal(t, 0, rc, stderr.String())

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	trajs, err := trajectory.ReadJSONL(f)
	require.NoError(t, err)
	require.Len(t, trajs, 2)
	// What was scraped mid-rollout matches the trajectories returned:
	// both prompts were encoded, one trajectory had finished.
	prompt := 0
	for _, tr := range trajs {
		prompt += len(tr.PromptIDs)
		require.Equal(t, trajs[0].StopReason, tr.StopReason)
		require.Equal(t, trajs[0].MaskOnes(), tr.MaskOnes())
	}
	require.Equal(t, float64(prompt), metricValue(t, mid, "agentrl_agentloop_prompt_tokens_total"))
	require.Contains(t, mid, fmt.Sprintf("agentrl_agentloop_trajectories_total{stop_reason=%q} 1\n", trajs[0].StopReason))
	require.Equal(t, float64(trajs[0].MaskOnes()), metricValue(t, mid, "agentrl_agentloop_generated_tokens_total"))
	require.Equal(t, 1.0, metricValue(t, mid, "agentrl_agentloop_turns_count"))
	require.Equal(t, float64(trajs[0].NumTurns-1), metricValue(t, mid, "agentrl_agentloop_turns_sum"), "assistant turns (NumTurns counts the prompt)")
	_, err = http.Get(url)
	require.Error(t, err, "the metrics server stops with the rollout")
}

// serve --metrics-addr exports the engine's statistics on a listener of
// its own; --log-format json makes the request log JSON.
func TestServeMetricsAddr(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sout, serr syncbuf.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runMain(ctx, []string{"serve", "-model", arithCheckpoint, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0",
			"-log-format", "json", "-kv-memory", "4000000"}, strings.NewReader(""), &sout, &serr)
	}()
	url := metricsURL(t, &serr)
	base := waitURL(t, &sout, servingOn, &serr)
	text := scrapeText(t, url)
	require.Equal(t, 0.0, metricValue(t, text, "agentrl_engine_requests_total"))
	require.Equal(t, http.StatusMisdirectedRequest, getHost(t, url, "rebind.example", ""), "the metrics listener has the API's Host check")

	sc, err := sglang.New(sglang.Config{BaseURL: base})
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := sc.Generate(ctx, server.GenerateRequest{RequestID: fmt.Sprint(i), PromptIDs: []int32{5, 6, 7, 8}, Params: server.SamplingParams{MaxNewTokens: 3}})
		require.NoError(t, err)
	}
	// The engine publishes its counters after the step that answered the
	// last request, so a scrape right after the answer may be one step
	// behind: wait for them.
	require.Eventually(t, func() bool {
		text = scrapeText(t, url)
		return metricValue(t, text, "agentrl_engine_requests_total") == 3 &&
			metricValue(t, text, "agentrl_engine_decode_tokens_total") == 9
	}, 10*time.Second, 5*time.Millisecond, "last scrape:\n%s", text)
	// The API port serves the same registry, with SGLang's and vLLM's names.
	api := scrapeText(t, base+"/metrics")
	require.Equal(t, 9.0, metricValue(t, api, "sglang:generation_tokens_total"))
	require.Equal(t, 9.0, metricValue(t, api, "vllm:generation_tokens_total"))
	require.Equal(t, 12.0, metricValue(t, api, "vllm:prompt_tokens_total"))
	require.Equal(t, 3.0, metricValue(t, api, "agentrl_engine_requests_total"))
	cancel()
	require.Equal(t, 0, <-code, serr.String())
	// Every log record is a JSON object.
	for _, line := range strings.Split(strings.TrimSpace(serr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "log line %q", line)
	}
}

// getHost GETs url with the Host header host (and a bearer token when
// given) and returns the status.
func getHost(t *testing.T, url, host, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	req.Host = host
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestAttackMetricsAddrRebinding: the --metrics-addr listener checked
// neither Host nor the auth token, so a DNS-rebinding page (its own host
// name resolved to 127.0.0.1) could read it. It now answers as the API
// port does: without a token only IP addresses, localhost and allowed
// names; with one, only requests that carry it.
func TestAttackMetricsAddrRebinding(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "agentrl_up 1\n") })
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name   string
		access httpapi.Config
		host   string
		token  string
		want   int
	}{
		{"rebinding", httpapi.Config{}, "rebind.example", "", http.StatusMisdirectedRequest},
		{"rebinding with port", httpapi.Config{}, "rebind.example:9090", "", http.StatusMisdirectedRequest},
		{"ip", httpapi.Config{}, "", "", 200},
		{"localhost", httpapi.Config{}, "localhost:9090", "", 200},
		{"allowed name", httpapi.Config{AllowedHosts: []string{"trainer-0"}}, "trainer-0:9090", "", 200},
		{"other name", httpapi.Config{AllowedHosts: []string{"trainer-0"}}, "trainer-1:9090", "", http.StatusMisdirectedRequest},
		{"no token", httpapi.Config{AuthToken: "t0k"}, "", "", http.StatusUnauthorized},
		{"wrong token", httpapi.Config{AuthToken: "t0k"}, "", "t0K", http.StatusUnauthorized},
		{"token", httpapi.Config{AuthToken: "t0k"}, "", "t0k", 200},
	} {
		m, err := serveMetrics("127.0.0.1:0", logger, h, tc.access)
		require.NoError(t, err)
		host := tc.host
		if host == "" {
			host = m.Addr()
		}
		require.Equal(t, tc.want, getHost(t, "http://"+m.Addr()+"/metrics", host, tc.token), tc.name)
		require.NoError(t, m.stop())
	}
	_, err := serveMetrics("127.0.0.1:0", logger, h, httpapi.Config{AllowedHosts: []string{"a b"}})
	require.ErrorContains(t, err, "AllowedHosts")
}

func TestLogFormatFlag(t *testing.T) {
	var stdout, stderr syncbuf.Buffer
	require.Equal(t, 1, runMain(context.Background(), []string{"serve", "-model", arithCheckpoint, "-log-format", "xml"}, nil, &stdout, &stderr))
	require.Contains(t, stderr.String(), "--log-format must be text or json")
}
