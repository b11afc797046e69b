package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/agentrl/agentrl/internal/yamlline"
)

// rolloutConfig is the YAML config of rollout. Keys mirror verl's where they
// mean the same (data.*, actor_rollout_ref.rollout.* with its multi_turn,
// val_kwargs and agent sections, actor_rollout_ref.model.path); agentrl's
// own settings live under "agentrl". A verl config file can be passed as it
// is: keys verl defines that have no effect here are listed in one note,
// keys neither defines are warnings naming the line and the closest known
// key (see checkKeys), before anything runs.
type rolloutConfig struct {
	Data struct {
		TrainFiles              stringList     `yaml:"train_files"`
		ValFiles                stringList     `yaml:"val_files"`
		TrainMaxSamples         int            `yaml:"train_max_samples"`
		ValMaxSamples           int            `yaml:"val_max_samples"`
		PromptKey               string         `yaml:"prompt_key"`
		ImageKey                string         `yaml:"image_key"`
		MaxPromptLength         int            `yaml:"max_prompt_length"`
		MaxResponseLength       int            `yaml:"max_response_length"`
		ToolConfigPath          string         `yaml:"tool_config_path"`
		ApplyChatTemplateKwargs map[string]any `yaml:"apply_chat_template_kwargs"`
	} `yaml:"data"`
	ActorRolloutRef struct {
		Model struct {
			Path string `yaml:"path"`
		} `yaml:"model"`
		Rollout struct {
			Name              string   `yaml:"name"`
			N                 int      `yaml:"n"`
			Temperature       *float64 `yaml:"temperature"`
			TopP              *float64 `yaml:"top_p"`
			TopK              *int     `yaml:"top_k"`
			DoSample          *bool    `yaml:"do_sample"`
			MinP              float64  `yaml:"min_p"`
			RepetitionPenalty float64  `yaml:"repetition_penalty"`
			PromptLength      int      `yaml:"prompt_length"`
			ResponseLength    int      `yaml:"response_length"`
			CalculateLogProbs *bool    `yaml:"calculate_log_probs"`
			// EnableRolloutRoutingReplay asks the engines for the MoE
			// routing of every token (R3): routed_experts in the batch.
			EnableRolloutRoutingReplay bool `yaml:"enable_rollout_routing_replay"`
			ValKwargs                  struct {
				N           int      `yaml:"n"`
				Temperature *float64 `yaml:"temperature"`
				TopP        *float64 `yaml:"top_p"`
				TopK        *int     `yaml:"top_k"`
				DoSample    *bool    `yaml:"do_sample"`
			} `yaml:"val_kwargs"`
			MultiTurn struct {
				Enable                         bool           `yaml:"enable"`
				MaxAssistantTurns              int            `yaml:"max_assistant_turns"`
				MaxUserTurns                   int            `yaml:"max_user_turns"`
				MaxParallelCalls               int            `yaml:"max_parallel_calls"`
				MaxToolResponseLength          int            `yaml:"max_tool_response_length"`
				ToolResponseTruncateSide       string         `yaml:"tool_response_truncate_side"`
				Format                         string         `yaml:"format"`
				MaxConsecutiveInvalidToolCalls int            `yaml:"max_consecutive_invalid_tool_calls"`
				ThinkAware                     bool           `yaml:"think_aware"`
				ChatTemplateKwargs             map[string]any `yaml:"chat_template_kwargs"`
				ToolConfigPath                 string         `yaml:"tool_config_path"`
				InteractionConfigPath          string         `yaml:"interaction_config_path"`
				UseInferenceChatTemplate       bool           `yaml:"use_inference_chat_template"`
			} `yaml:"multi_turn"`
			Agent struct {
				DefaultAgentLoop    string `yaml:"default_agent_loop"`
				AgentLoopConfigPath string `yaml:"agent_loop_config_path"`
			} `yaml:"agent"`
		} `yaml:"rollout"`
	} `yaml:"actor_rollout_ref"`
	AgentRL struct {
		Servers     []string      `yaml:"servers"`
		LocalModel  string        `yaml:"local_model"` // HF model directory for the in-process engine
		Device      string        `yaml:"device"`      // where the in-process engine runs: cpu (default) or cuda
		Backend     string        `yaml:"backend"`     // sglang (default) or vllm
		Model       string        `yaml:"model"`       // vLLM model name
		Concurrency int           `yaml:"concurrency"`
		Timeout     time.Duration `yaml:"timeout"`
		Reward      string        `yaml:"reward"` // "", gsm8k or gsm8k_flexible
		// AllowRemoteImages lets dataset rows and tools name http(s)
		// images; off, only data URLs and local files are read.
		AllowRemoteImages bool `yaml:"allow_remote_images"`
		// KeepImages writes each trajectory's images into the JSONL
		// (base64), for agentrl view; off, only their grids.
		KeepImages bool `yaml:"keep_images"`
	} `yaml:"agentrl"`
}

// Defaults verl's config gives when a key is absent
// (verl/trainer/config/data/legacy_data.yaml: max_prompt_length and
// max_response_length 512; rollout.yaml: prompt_length and response_length
// follow them). Without them a rollout with no config generated to the
// model's whole context.
const (
	defaultPromptLength   = 512
	defaultResponseLength = 512
)

// stringList is a YAML string or list of strings (verl's data.train_files
// takes both).
type stringList []string

func (s *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*s = nil
			return nil
		}
		*s = stringList{n.Value}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := n.Decode(&l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	return fmt.Errorf("line %d: want a file name or a list of them", n.Line)
}

// Key kinds of the config schema.
const (
	keyUsed     = "used"      // read by agentrl
	keyNoEffect = "no-effect" // a verl key with no meaning here
	keyOpen     = "open"      // a section whose contents are not checked
)

// configSchema is the tree of keys rollout knows, from verl's
// verl/trainer/config/_generated_ppo_trainer.yaml (data, rollout) at
// volcengine/verl@b178a3cd56f58b2d502255daba591e92833930a7. Sections of the
// trainer (actor, critic, algorithm, ...) are open: they configure verl's
// training, not the rollout.
var configSchema = map[string]any{
	"hydra": keyOpen, "defaults": keyOpen,
	"trainer": keyOpen, "algorithm": keyOpen, "critic": keyOpen, "custom_reward_function": keyOpen,
	"global_profiler": keyOpen, "ray_kwargs": keyOpen, "reward_manager": keyOpen, "reward_model": keyOpen,
	"transfer_queue": keyOpen,
	"data": section(map[string][]string{keyUsed: {"train_files", "val_files", "train_max_samples", "val_max_samples", "prompt_key", "image_key",
		"max_prompt_length", "max_response_length", "tool_config_path"}, keyOpen: {"apply_chat_template_kwargs", "custom_cls", "sampler", "datagen"}, keyNoEffect: {"tokenizer", "use_shm", "reward_fn_key", "train_batch_size", "val_batch_size",
		"return_raw_input_ids", "return_raw_chat", "return_full_prompt", "shuffle", "seed", "dataloader_num_workers",
		"image_patch_size", "validation_shuffle", "filter_overlong_prompts", "filter_overlong_prompts_workers",
		"truncation", "video_key", "trust_remote_code", "return_multi_modal_inputs"}}),
	"actor_rollout_ref": map[string]any{
		"hybrid_engine": keyNoEffect, "nccl_timeout": keyNoEffect, "actor": keyOpen, "ref": keyOpen,
		"model": section(map[string][]string{keyUsed: {"path"}, keyOpen: {"override_config", "lora", "custom_chat_template", "mtp"}, keyNoEffect: {"external_lib", "enable_gradient_checkpointing", "enable_activation_offload", "use_remove_padding",
			"lora_rank", "lora_alpha", "target_modules", "exclude_modules", "use_liger", "use_fused_kernels",
			"fused_kernel_options", "trust_remote_code", "use_shm", "tokenizer_path", "hf_config_path"}}),
		"rollout": func() map[string]any {
			m := section(map[string][]string{keyUsed: {"name", "n", "temperature", "top_p", "top_k", "do_sample", "min_p", "repetition_penalty",
				"prompt_length", "response_length", "calculate_log_probs", "enable_rollout_routing_replay"}, keyOpen: {"engine_kwargs", "checkpoint_engine", "trace", "profiler", "prometheus", "custom_async_server", "mtp"}, keyNoEffect: {"_target_", "mode", "dtype", "gpu_memory_utilization", "ignore_eos", "enforce_eager",
				"cudagraph_capture_sizes", "free_cache_engine", "tensor_model_parallel_size", "data_parallel_size",
				"expert_parallel_size", "pipeline_model_parallel_size", "max_num_batched_tokens", "max_model_len",
				"max_num_seqs", "enable_chunked_prefill", "enable_prefix_caching", "logprobs_mode", "scheduling_policy",
				"load_format", "log_prob_micro_batch_size", "log_prob_micro_batch_size_per_gpu", "log_prob_use_dynamic_bsz",
				"log_prob_max_token_len_per_gpu", "disable_log_stats", "over_sample_rate", "multi_stage_wake_up",
				"skip_rollout", "skip_dump_dir", "skip_tokenizer_init", "quantization",
				"quantization_config_file", "layered_summon"}})
			m["val_kwargs"] = section(map[string][]string{keyUsed: {"n", "temperature", "top_p", "top_k", "do_sample"}, keyNoEffect: {"_target_"}})
			m["multi_turn"] = section(map[string][]string{keyUsed: {"enable", "max_assistant_turns", "max_user_turns", "max_parallel_calls",
				"max_tool_response_length", "tool_response_truncate_side", "format", "tool_config_path",
				"interaction_config_path", "use_inference_chat_template",
				// agentrl's additions to the section:
				"max_consecutive_invalid_tool_calls", "think_aware"}, keyOpen: {"chat_template_kwargs"}, keyNoEffect: {"_target_", "tokenization_sanity_check_mode", "num_repeat_rollouts"}})
			m["agent"] = section(map[string][]string{keyUsed: {"default_agent_loop", "agent_loop_config_path"}, keyOpen: {"custom_async_server"}, keyNoEffect: {"_target_", "num_workers"}})
			return m
		}(),
	},
	"agentrl": section(map[string][]string{keyUsed: {"servers", "local_model", "device", "backend", "model", "concurrency", "timeout", "reward", "allow_remote_images", "keep_images"}}),
}

// section builds one section of the schema from the keys of each kind.
func section(kinds map[string][]string) map[string]any {
	m := map[string]any{}
	for kind, keys := range kinds {
		for _, k := range keys {
			m[k] = kind
		}
	}
	return m
}

// configNotes are what checkKeys found: unknown keys (warnings) and verl
// keys that have no effect here.
type configNotes struct {
	unknown  []string
	noEffect []string
}

// checkKeys walks the YAML document against configSchema.
func checkKeys(doc *yaml.Node) configNotes {
	var notes configNotes
	if doc == nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return notes
	}
	var walk func(n *yaml.Node, sch map[string]any, path string)
	walk = func(n *yaml.Node, sch map[string]any, path string) {
		if n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			full := path + k.Value
			switch s := sch[k.Value].(type) {
			case map[string]any:
				walk(v, s, full+".")
			case string:
				if s == keyNoEffect {
					notes.noEffect = append(notes.noEffect, full)
				}
			default:
				msg := fmt.Sprintf("line %d: unknown key %s", k.Line, full)
				if k.Line < 0 {
					msg = "override: unknown key " + full
				}
				if near := closest(k.Value, sch); near != "" {
					msg += fmt.Sprintf(" (did you mean %s%s?)", path, near)
				}
				notes.unknown = append(notes.unknown, msg+"; it is ignored")
			}
		}
	}
	walk(doc.Content[0], configSchema, "")
	return notes
}

// closest returns the known key nearest to k by edit distance, if near.
func closest(k string, sch map[string]any) string {
	best, bestD := "", len(k)/3+1
	keys := make([]string, 0, len(sch))
	for c := range sch {
		keys = append(keys, c)
	}
	sort.Strings(keys)
	for _, c := range keys {
		if d := editDistance(k, c); d < bestD || (d <= bestD && strings.HasPrefix(c, k) && best == "") {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// loadRolloutConfig reads the config file and applies hydra-style
// overrides ("data.train_files=/x.parquet", "+key=value", "~key"), as
// verl's command lines pass them. Unknown keys are written to warn as
// warnings (errors with strict); verl keys without effect are listed in
// one note.
func loadRolloutConfig(path string, overrides []string, warn io.Writer, strict bool) (rolloutConfig, error) {
	var cfg rolloutConfig
	doc := &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	name := "overrides"
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return cfg, err
		}
		var d yaml.Node
		if err := yaml.Unmarshal(data, &d); err != nil {
			return cfg, fmt.Errorf("config %s: %w", path, yamlline.Fix(data, err))
		}
		if len(d.Content) > 0 {
			doc = &d
		}
		name = path
	}
	for _, o := range overrides {
		if err := applyOverride(doc, o); err != nil {
			return cfg, err
		}
	}
	if err := doc.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
		return cfg, fmt.Errorf("config %s: %w", name, err)
	}
	notes := checkKeys(doc)
	for _, u := range notes.unknown {
		fmt.Fprintf(warn, "WARNING: config %s: %s\n", name, u)
	}
	if strict && len(notes.unknown) > 0 {
		return cfg, fmt.Errorf("config %s: %d unknown keys (--strict-config)", name, len(notes.unknown))
	}
	if len(notes.noEffect) > 0 {
		fmt.Fprintf(warn, "note: config %s: verl settings with no effect on agentrl's rollout: %s\n", name, strings.Join(notes.noEffect, ", "))
	}
	return cfg, nil
}

// applyOverride sets one hydra-style override in the document: key.path=value
// (the value read as YAML: numbers, booleans, quoted strings, [lists]),
// +key.path=value (hydra's "add"; the same here) or ~key.path (delete).
func applyOverride(doc *yaml.Node, o string) error {
	del := strings.HasPrefix(o, "~")
	key, val, ok := strings.Cut(strings.TrimLeft(o, "+~"), "=")
	if !ok && !del || key == "" {
		return fmt.Errorf("argument %q: want key.path=value (a hydra-style override)", o)
	}
	var v yaml.Node
	if !del {
		if err := yaml.Unmarshal([]byte(val), &v); err != nil {
			return fmt.Errorf("override %s: %w", key, err)
		}
	}
	node := doc.Content[0]
	parts := strings.Split(key, ".")
	for i, p := range parts {
		if node.Kind != yaml.MappingNode {
			return fmt.Errorf("override %s: %s is not a section", key, strings.Join(parts[:i], "."))
		}
		at := -1
		for j := 0; j+1 < len(node.Content); j += 2 {
			if node.Content[j].Value == p {
				at = j
			}
		}
		last := i == len(parts)-1
		switch {
		case last && del:
			if at >= 0 {
				node.Content = append(node.Content[:at], node.Content[at+2:]...)
			}
			return nil
		case last:
			value := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: ""}
			if len(v.Content) > 0 {
				value = v.Content[0]
			}
			markOverride(value)
			if at >= 0 {
				node.Content[at+1] = value
			} else {
				node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: -1}, value)
			}
			return nil
		case at < 0:
			if del {
				return nil
			}
			sub := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			node.Content = append(node.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p, Line: -1}, sub)
			node = sub
		default:
			node = node.Content[at+1]
		}
	}
	return nil
}

// markOverride sets Line -1 on an override's nodes, so messages about them
// say "override" instead of a line of the file.
func markOverride(n *yaml.Node) {
	n.Line = -1
	for _, c := range n.Content {
		markOverride(c)
	}
}
