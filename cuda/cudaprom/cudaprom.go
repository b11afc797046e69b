// Package cudaprom exports the in-process engine's statistics to
// Prometheus: requests running and waiting, KV cache blocks in use and
// cached, prefix-cache hit rate, tokens prefilled and decoded,
// preemptions, steps, batch sizes and the weight version. It reads
// cuda.Engine.Stats at scrape time, so the scheduler is not slowed.
//
//	reg.MustRegister(cudaprom.New(engine, cudaprom.Options{}))
package cudaprom

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/cuda"
)

// Source is what the collector reads; *cuda.Engine implements it.
type Source interface {
	Stats() cuda.Stats
}

// Options configure a Collector.
type Options struct {
	// Namespace prefixes every metric name; "" means "agentrl".
	Namespace   string
	ConstLabels prometheus.Labels
}

type metric struct {
	desc   *prometheus.Desc
	kind   prometheus.ValueType
	value  func(s cuda.Stats) float64
	labels []string // variable label values (Compat's model name and engine index)
}

// statsMetrics is the body both collectors share: constant metrics read
// from one Stats snapshot per scrape.
type statsMetrics struct {
	src     Source
	metrics []metric
}

// Describe implements prometheus.Collector.
func (c *statsMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range c.metrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c *statsMetrics) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	for _, m := range c.metrics {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, m.value(s), m.labels...)
	}
}

// Collector is a prometheus.Collector over an engine's Stats.
type Collector struct {
	statsMetrics
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// New returns a Collector reading src.
func New(src Source, opts Options) *Collector {
	ns := opts.Namespace
	if ns == "" {
		ns = "agentrl"
	}
	c := &Collector{statsMetrics{src: src}}
	add := func(name, help string, kind prometheus.ValueType, f func(s cuda.Stats) float64) {
		c.metrics = append(c.metrics, metric{desc: prometheus.NewDesc(prometheus.BuildFQName(ns, "engine", name), help, nil, opts.ConstLabels), kind: kind, value: f})
	}
	g, k := prometheus.GaugeValue, prometheus.CounterValue
	add("requests_running", "Requests being decoded now.", g, func(s cuda.Stats) float64 { return float64(s.Running) })
	add("requests_waiting", "Requests queued for admission.", g, func(s cuda.Stats) float64 { return float64(s.Waiting) })
	add("kv_blocks", "KV cache blocks in all.", g, func(s cuda.Stats) float64 { return float64(s.KVBlocks) })
	add("kv_blocks_free", "Unreferenced KV cache blocks (cached ones included).", g, func(s cuda.Stats) float64 { return float64(s.FreeBlocks) })
	add("kv_blocks_cached", "KV cache blocks findable in the prefix cache.", g, func(s cuda.Stats) float64 { return float64(s.CachedBlocks) })
	add("kv_usage_ratio", "Share of KV cache blocks referenced by requests (0..1).", g, func(s cuda.Stats) float64 {
		if s.KVBlocks == 0 {
			return 0
		}
		return float64(s.KVBlocks-s.FreeBlocks) / float64(s.KVBlocks)
	})
	add("prefix_cache_hit_ratio", "Share of admitted prompt tokens served from the prefix cache since start (0..1).", g, func(s cuda.Stats) float64 {
		if s.PromptTokens == 0 {
			return 0
		}
		return float64(s.CachedTokens) / float64(s.PromptTokens)
	})
	add("requests_total", "Requests admitted.", k, func(s cuda.Stats) float64 { return float64(s.Requests) })
	add("prompt_tokens_total", "Prompt tokens of admitted requests.", k, func(s cuda.Stats) float64 { return float64(s.PromptTokens) })
	add("cached_prompt_tokens_total", "Prompt tokens served from the prefix cache.", k, func(s cuda.Stats) float64 { return float64(s.CachedTokens) })
	add("prefill_tokens_total", "Positions computed for prompts (recompute after preemption included).", k, func(s cuda.Stats) float64 { return float64(s.PrefillTokens) })
	add("decode_tokens_total", "Tokens sampled.", k, func(s cuda.Stats) float64 { return float64(s.DecodeTokens) })
	add("preemptions_total", "Requests preempted for KV space.", k, func(s cuda.Stats) float64 { return float64(s.Preemptions) })
	add("steps_total", "Scheduler steps (forward passes).", k, func(s cuda.Stats) float64 { return float64(s.Steps) })
	add("batch_sequences_total", "Sum over steps of the sequences in the step (mean batch = this / steps).", k, func(s cuda.Stats) float64 { return float64(s.BatchSeqsSum) })
	add("batch_tokens_max", "Most tokens in one forward pass.", g, func(s cuda.Stats) float64 { return float64(s.BatchTokensMax) })
	add("weight_version", "Version of the weights loaded.", g, func(s cuda.Stats) float64 { return float64(s.WeightVersion) })
	add("asleep", "1 while the engine sleeps (weights and KV released).", g, func(s cuda.Stats) float64 { return b2f(s.Asleep) })
	add("paused", "1 while the engine is paused.", g, func(s cuda.Stats) float64 { return b2f(s.Paused) })
	return c
}
