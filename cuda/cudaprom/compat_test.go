package cudaprom_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/cuda/cudaprom"
	"github.com/agentrl/agentrl/internal/arith"
	"github.com/agentrl/agentrl/server/httpapi"
)

// scrape reads GET /metrics and returns each sample's value by its name
// and labels as written ("name{labels}").
func scrape(t *testing.T, c *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := c.Get(url + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := map[string]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(t, err, line)
		out[line[:i]] = v
	}
	return out
}

// TestCompatMetricsOnTheAPIPort drives the engine through the HTTP API
// while scraping /metrics on the same port, and checks the SGLang- and
// vLLM-named token counters against what the responses reported.
func TestCompatMetricsOnTheAPIPort(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	_, eng, err := arith.LoadCheckpoint(filepath.Join("..", "..", "internal", "arith", "checkpoint"), 1)
	require.NoError(t, err)
	defer eng.Close()
	reg := prometheus.NewPedanticRegistry()
	compat := cudaprom.NewCompat(eng, "arith")
	reg.MustRegister(cudaprom.New(eng, cudaprom.Options{}), compat)
	srv, err := httpapi.Start(eng, httpapi.Config{Model: "arith", Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})})
	require.NoError(t, err)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	const n = 6
	var wg sync.WaitGroup
	var mu sync.Mutex
	var promptSum, genSum, cachedSum float64
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := make([]int32, 40+i)
			for j := range ids {
				ids[j] = int32(10 + (j*7+i)%50)
			}
			b, _ := json.Marshal(map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 8 + i, "temperature": 0}})
			resp, err := client.Post(srv.URL()+"/generate", "application/json", strings.NewReader(string(b)))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			var r struct {
				MetaInfo struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
					CachedTokens     int `json:"cached_tokens"`
				} `json:"meta_info"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != 200 {
				errs <- fmt.Errorf("status %d: %v", resp.StatusCode, err)
				return
			}
			mu.Lock()
			promptSum += float64(r.MetaInfo.PromptTokens)
			genSum += float64(r.MetaInfo.CompletionTokens)
			cachedSum += float64(r.MetaInfo.CachedTokens)
			mu.Unlock()
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	const sgl, vl = `{model_name="arith"}`, `{engine="0",model_name="arith"}`
	// Scrape while the requests run: the counters only grow.
	last := scrape(t, client, srv.URL())
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		m := scrape(t, client, srv.URL())
		for _, name := range []string{"sglang:prompt_tokens_total" + sgl, "sglang:generation_tokens_total" + sgl,
			"vllm:prompt_tokens_total" + vl, "vllm:generation_tokens_total" + vl} {
			require.GreaterOrEqual(t, m[name], last[name], name)
		}
		require.Contains(t, m, "sglang:num_running_reqs"+sgl)
		require.Contains(t, m, "vllm:num_requests_waiting"+vl)
		last = m
	}
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	m := scrape(t, client, srv.URL())
	require.Equal(t, promptSum, m["sglang:prompt_tokens_total"+sgl])
	require.Equal(t, promptSum, m["vllm:prompt_tokens_total"+vl])
	require.Equal(t, promptSum, m["vllm:prefix_cache_queries_total"+vl])
	require.Equal(t, cachedSum, m["vllm:prefix_cache_hits_total"+vl])
	require.Equal(t, genSum, m["sglang:generation_tokens_total"+sgl])
	require.Equal(t, genSum, m["vllm:generation_tokens_total"+vl])
	require.Equal(t, m["agentrl_engine_decode_tokens_total"], genSum, "one collector's stats, two views")
	require.Zero(t, m["sglang:num_running_reqs"+sgl])
	require.Zero(t, m["vllm:num_requests_running"+vl])
	s := eng.Stats()
	require.InDelta(t, float64(s.KVBlocks-s.FreeBlocks)/float64(s.KVBlocks), m["vllm:kv_cache_usage_perc"+vl], 1e-12)
	require.InDelta(t, cachedSum/promptSum, m["sglang:cache_hit_rate"+sgl], 1e-12)
	require.GreaterOrEqual(t, m["sglang:gen_throughput"+sgl], 0.0)
	// The linter's one objection is the colon, which Prometheus reserves
	// for recording rules and SGLang and vLLM use in their names anyway.
	problems, err := testutil.CollectAndLint(compat)
	require.NoError(t, err)
	for _, p := range problems {
		require.Equal(t, "metric names should not contain ':'", p.Text, p.Metric)
	}
}

// TestMetricsAbsent: a server given no registry says so on /metrics.
func TestMetricsAbsent(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	_, eng, err := arith.LoadCheckpoint(filepath.Join("..", "..", "internal", "arith", "checkpoint"), 1)
	require.NoError(t, err)
	defer eng.Close()
	srv, err := httpapi.Start(eng, httpapi.Config{})
	require.NoError(t, err)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Get(srv.URL() + "/metrics")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Contains(t, string(body), "exports no metrics")
}
