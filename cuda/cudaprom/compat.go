package cudaprom

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/cuda"
)

// Compat is a prometheus.Collector that shows an engine's Stats under the
// metric names SGLang and vLLM export where they mean the same thing, so
// dashboards and autoscalers written for those servers read this one.
// Names, kinds and label names follow
//   - sgl-project/sglang python/sglang/srt/metrics/collector.py @ 00ae9c15
//     (SchedulerMetricsCollector, TokenizerMetricsCollector; label
//     model_name), and
//   - vllm-project/vllm vllm/v1/metrics/loggers.py @ a6f0308c
//     (PrometheusStatLogger; labels model_name and engine).
//
// What the engine does not track (per-request latencies, finish reasons)
// is not invented here.
type Compat struct {
	statsMetrics

	mu       sync.Mutex
	lastAt   time.Time
	lastToks int64
	rate     float64
}

// NewCompat returns a Compat collector reading src; model is the served
// model name, the model_name label's value.
func NewCompat(src Source, model string) *Compat {
	c := &Compat{statsMetrics: statsMetrics{src: src}}
	sgl := func(name, help string, kind prometheus.ValueType, f func(s cuda.Stats) float64) {
		c.metrics = append(c.metrics, metric{prometheus.NewDesc(name, help, []string{"model_name"}, nil), kind, f,
			[]string{model}})
	}
	// One engine per process: vLLM labels its engine core index, 0 here.
	vl := func(name, help string, kind prometheus.ValueType, f func(s cuda.Stats) float64) {
		c.metrics = append(c.metrics, metric{prometheus.NewDesc(name, help, []string{"model_name", "engine"}, nil), kind, f,
			[]string{model, "0"}})
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	running := func(s cuda.Stats) float64 { return float64(s.Running) }
	waiting := func(s cuda.Stats) float64 { return float64(s.Waiting) }
	usage := func(s cuda.Stats) float64 {
		if s.KVBlocks == 0 {
			return 0
		}
		return float64(s.KVBlocks-s.FreeBlocks) / float64(s.KVBlocks)
	}
	prompt := func(s cuda.Stats) float64 { return float64(s.PromptTokens) }
	generated := func(s cuda.Stats) float64 { return float64(s.DecodeTokens) }

	sgl("sglang:num_running_reqs", "The number of running requests.", g, running)
	sgl("sglang:num_queue_reqs", "The number of requests in the waiting queue.", g, waiting)
	sgl("sglang:token_usage", "The token usage.", g, usage)
	sgl("sglang:cache_hit_rate", "The prefix cache hit rate.", g, func(s cuda.Stats) float64 {
		if s.PromptTokens == 0 {
			return 0
		}
		return float64(s.CachedTokens) / float64(s.PromptTokens)
	})
	sgl("sglang:gen_throughput", "The generation throughput (token/s).", g, c.throughput)
	sgl("sglang:prompt_tokens_total", "Number of prefill tokens processed.", k, prompt)
	sgl("sglang:generation_tokens_total", "Number of generation tokens processed.", k, generated)

	vl("vllm:num_requests_running", "Number of requests in model execution batches.", g, running)
	vl("vllm:num_requests_waiting", "Number of requests waiting to be processed.", g, waiting)
	vl("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", g, usage)
	vl("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", k, prompt)
	vl("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", k, func(s cuda.Stats) float64 { return float64(s.CachedTokens) })
	vl("vllm:prompt_tokens_total", "Number of prefill tokens processed.", k, prompt)
	vl("vllm:generation_tokens_total", "Number of generation tokens processed.", k, generated)
	vl("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", k, func(s cuda.Stats) float64 { return float64(s.Preemptions) })
	return c
}

// throughput is the tokens sampled per second between the two latest
// scrapes (SGLang's scheduler reports it over its last logging interval);
// 0 at the first scrape.
func (c *Compat) throughput(s cuda.Stats) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.lastAt.IsZero() {
		if dt := now.Sub(c.lastAt).Seconds(); dt > 0 {
			c.rate = float64(s.DecodeTokens-c.lastToks) / dt
		}
	}
	c.lastAt, c.lastToks = now, s.DecodeTokens
	return c.rate
}
