package cudaprom_test

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/cudaprom"
)

// stats stands in for a *cuda.Engine, which is a cudaprom.Source.
type stats cuda.Stats

func (s stats) Stats() cuda.Stats { return cuda.Stats(s) }

func Example() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cudaprom.New(stats{KVBlocks: 100, FreeBlocks: 75, PromptTokens: 400, CachedTokens: 300}, cudaprom.Options{}))
	fams, _ := reg.Gather()
	for _, f := range fams {
		if n := f.GetName(); n == "agentrl_engine_kv_usage_ratio" || n == "agentrl_engine_prefix_cache_hit_ratio" {
			fmt.Println(n, f.Metric[0].Gauge.GetValue())
		}
	}
	// Output:
	// agentrl_engine_kv_usage_ratio 0.25
	// agentrl_engine_prefix_cache_hit_ratio 0.75
}

// NewCompat shows the same engine stats under SGLang's and vLLM's metric
// names, labelled with the served model's name.
func ExampleNewCompat() {
	reg := prometheus.NewRegistry()
	reg.MustRegister(cudaprom.NewCompat(stats{Running: 3, Waiting: 1, PromptTokens: 400, DecodeTokens: 90}, "qwen3"))
	fams, _ := reg.Gather()
	for _, f := range fams {
		switch n := f.GetName(); n {
		case "sglang:num_running_reqs", "vllm:num_requests_waiting":
			fmt.Println(n, f.Metric[0].GetGauge().GetValue(), len(f.Metric[0].GetLabel()))
		case "sglang:generation_tokens_total", "vllm:prompt_tokens_total":
			fmt.Println(n, f.Metric[0].GetCounter().GetValue(), len(f.Metric[0].GetLabel()))
		}
	}
	// Output:
	// sglang:generation_tokens_total 90 1
	// sglang:num_running_reqs 3 1
	// vllm:num_requests_waiting 1 2
	// vllm:prompt_tokens_total 400 2
}
