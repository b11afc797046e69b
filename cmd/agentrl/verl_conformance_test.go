package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/dataset"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
)

// verl's run script's overrides (examples/sglang_multiturn/
// run_qwen2.5-3b_gsm8k_multiturn.sh) that do not depend on the machine:
// agentrl must accept them all (most have no effect on a rollout).
var verlRunOverrides = []string{
	"algorithm.adv_estimator=grpo", "data.train_batch_size=256", "data.filter_overlong_prompts=True",
	"data.truncation='error'", "data.return_raw_chat=True", "actor_rollout_ref.actor.optim.lr=1e-6",
	"actor_rollout_ref.model.use_remove_padding=True", "actor_rollout_ref.actor.use_kl_loss=True",
	"actor_rollout_ref.model.enable_gradient_checkpointing=True",
	"actor_rollout_ref.rollout.tensor_model_parallel_size=1", "actor_rollout_ref.rollout.name=sglang",
	"actor_rollout_ref.rollout.gpu_memory_utilization=0.85", "actor_rollout_ref.rollout.multi_stage_wake_up=True",
	"actor_rollout_ref.rollout.over_sample_rate=0.1", "actor_rollout_ref.rollout.mode=async",
	"trainer.logger=[\"console\",\"wandb\"]", "trainer.n_gpus_per_node=8", "trainer.total_epochs=15",
}

func readTrajectories(t *testing.T, path string) []*trajectory.Trajectory {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	trajs, err := trajectory.ReadJSONL(f)
	require.NoError(t, err)
	return trajs
}

func readBatch(t *testing.T, path string) *trajectory.Batch {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := trajectory.ReadSafetensorsBatch(f)
	require.NoError(t, err)
	return b
}

// checkBatch checks the batch against the trajectories row by row, in
// verl's layout, runs verl's trainer index operations on it with PyTorch,
// and compares it with verl's own postprocessing of the trajectories.
func checkBatch(t *testing.T, b *trajectory.Batch, trajs []*trajectory.Trajectory, samples map[int]agentloop.Sample, tokDir string) {
	t.Helper()
	require.Equal(t, len(trajs), b.Size)
	P, R := b.PromptLen, b.ResponseLen
	byID := map[string]*trajectory.Trajectory{}
	for _, tr := range trajs {
		byID[tr.ID] = tr
	}
	for i := 0; i < b.Size; i++ {
		tr := byID[b.IDs[i]]
		require.NotNil(t, tr, b.IDs[i])
		np, nr := len(tr.PromptIDs), min(len(tr.ResponseIDs), R)
		require.Equal(t, tr.PromptIDs, b.Prompts[i*P+P-np:(i+1)*P], "row %d prompt", i)
		require.Equal(t, tr.ResponseIDs[:nr], b.Responses[i*R:i*R+nr], "row %d response", i)
		for k := 0; k < nr; k++ {
			require.Equal(t, int32(tr.ResponseMask[k]), b.ResponseMask[i*R+k])
			if tr.Logprobs != nil {
				require.Equal(t, tr.Logprobs[k], b.RolloutLogprobs[i*R+k])
			}
		}
		var uid string
		require.NoError(t, json.Unmarshal(b.NonTensor["uid"][i], &uid))
		require.Equal(t, tr.GroupID, uid)
		var idx int
		require.NoError(t, json.Unmarshal(b.NonTensor["index"][i], &idx))
		require.Equal(t, tr.Index, idx)
		var raw []chat.Message
		require.NoError(t, json.Unmarshal(b.NonTensor["raw_prompt"][i], &raw))
		require.Equal(t, samples[tr.Index].Messages, raw, "raw_prompt of row %d", i)
		var toolRewards, turnScores []float64
		require.NoError(t, json.Unmarshal(b.NonTensor["tool_rewards"][i], &toolRewards))
		require.NoError(t, json.Unmarshal(b.NonTensor["turn_scores"][i], &turnScores))
		require.Equal(t, len(tr.ToolRewards), len(toolRewards))
		require.Equal(t, len(tr.TurnRewards), len(turnScores))
		require.InDelta(t, tr.Timing.Tool.Seconds(), b.Metrics[i].ToolCalls, 1e-9, "metrics.tool_calls is seconds, as in verl")
	}
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import torch").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have python3-torch (.ci/deps.sh installs it): %v: %s", err, out)
		}
		t.Skipf("the PyTorch checks need python3-torch: %v: %s", err, out)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "b.safetensors")
	var buf bytes.Buffer
	require.NoError(t, b.WriteSafetensors(&buf))
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	out, err := exec.Command(py, "../../trajectory/testdata/check_torch.py", path).CombinedOutput()
	require.NoError(t, err, string(out))
	// verl's own postprocessing (agent_loop.py's _agent_loop_postprocess
	// and _postprocess, ported to PyTorch) of the same trajectories, with
	// the pad id verl takes from the tokenizer, must give these tensors.
	jsonl := filepath.Join(dir, "trajs.jsonl")
	buf.Reset()
	require.NoError(t, trajectory.WriteJSONL(&buf, trajs))
	require.NoError(t, os.WriteFile(jsonl, buf.Bytes(), 0o644))
	out, err = exec.Command(py, "../../trajectory/testdata/verl_postprocess.py", path, jsonl, strconv.Itoa(hfPadTokenID(t, tokDir))).CombinedOutput()
	require.NoError(t, err, string(out))
	t.Log(strings.TrimSpace(string(out)))
}

// hfPadTokenID is the tokenizer's pad_token_id as transformers gives it
// to verl: tokenizer_config.json's pad_token looked up in tokenizer.json's
// added tokens (read here as plain JSON, not through agentrl's tokenizer).
func hfPadTokenID(t *testing.T, dir string) int {
	t.Helper()
	var cfg struct {
		PadToken json.RawMessage `json:"pad_token"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &cfg))
	var name string
	if json.Unmarshal(cfg.PadToken, &name) != nil {
		var obj struct{ Content string }
		require.NoError(t, json.Unmarshal(cfg.PadToken, &obj))
		name = obj.Content
	}
	var tj struct {
		AddedTokens []struct {
			ID      int
			Content string
		} `json:"added_tokens"`
	}
	data, err = os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &tj))
	for _, a := range tj.AddedTokens {
		if a.Content == name {
			return a.ID
		}
	}
	t.Fatalf("pad token %q is not an added token of %s", name, dir)
	return 0
}

func samplesByIndex(t *testing.T, paths ...string) map[int]agentloop.Sample {
	t.Helper()
	ss, err := dataset.ReadAll(context.Background(), dataset.Options{}, paths...)
	require.NoError(t, err)
	m := map[int]agentloop.Sample{}
	for _, s := range ss {
		m[s.Index] = s
	}
	return m
}

// TestVerlConformance runs `agentrl rollout` on verl's own example configs
// (testdata/verl, unchanged) and GSM8K-style Parquet files written by
// DuckDB in the layouts of verl's preprocessing scripts, with the rest of
// the settings given as verl's run scripts give them (key.path=value
// overrides), and checks the trajectories and the batch field by field.
func TestVerlConformance(t *testing.T) {
	tokDir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(tokDir)
	require.NoError(t, err)
	tmp := t.TempDir()
	toolData := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_duckdb.parquet")
	interData := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_duckdb_interaction.parquet")
	// A second writer: parquetjs (bare repeated fields), rows 20..22, one
	// of them selecting no tools.
	jsData := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_parquetjs.parquet")
	tools, err := tool.LoadConfig(context.Background(), "testdata/verl/tool_config/gsm8k_tool_config.yaml")
	require.NoError(t, err)
	schemas := tools.Schemas()

	t.Run("tool config, in-process engine", func(t *testing.T) {
		modelDir := filepath.Join(tmp, "model")
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "--arch", "qwen3", "--layers", "1", "--hidden", "32",
			"--heads", "2", "--max-pos", "2048", "--seed", "7", "--tokenizer", tokDir, "--out", modelDir}, strings.NewReader(""), &stdout, &stderr), stderr.String())
		out, batch := filepath.Join(tmp, "a.jsonl"), filepath.Join(tmp, "a.safetensors")
		stdout.Reset()
		stderr.Reset()
		args := append([]string{"rollout", "--config", "testdata/verl/gsm8k_multiturn_grpo.yaml", "--model", modelDir,
			"--out", out, "--batch", batch, "--progress", "never",
			"data.train_files=[" + toolData + "," + jsData + "]", "actor_rollout_ref.model.path=" + tokDir, "data.max_response_length=16",
			"actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.calculate_log_probs=True",
			"actor_rollout_ref.rollout.multi_turn.tool_config_path=testdata/verl/tool_config/gsm8k_tool_config.yaml",
			"actor_rollout_ref.rollout.agent.agent_loop_config_path=testdata/verl/agent_loop_config.yaml",
		}, verlRunOverrides...)
		code := runMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		require.NotContains(t, stderr.String(), "WARNING", "verl's config and run-script settings are all understood")
		require.Contains(t, stderr.String(), "verl settings with no effect on agentrl's rollout: data.train_batch_size")

		samples := samplesByIndex(t, toolData, jsData)
		trajs := readTrajectories(t, out)
		require.Len(t, trajs, 12) // 6 rows × n=2
		for _, tr := range trajs {
			s := samples[tr.Index]
			require.Regexp(t, `^(0|1|2|20|21|22)/[01]$`, tr.ID)
			require.Equal(t, strings.Split(tr.ID, "/")[0], tr.GroupID)
			// The prompt is the chat template over the row's messages with
			// verl's GSM8K tool schema (none for a row selecting no tools),
			// exactly.
			rowTools := schemas
			if s.Tools != nil && len(s.Tools) == 0 {
				rowTools = nil
			}
			want, err := tok.EncodeChat(tokenizer.ChatContext{Messages: s.Messages, Tools: rowTools, AddGenerationPrompt: true})
			require.NoError(t, err)
			require.Equal(t, want, tr.PromptIDs)
			require.NoError(t, tr.Validate())
			require.LessOrEqual(t, len(tr.ResponseIDs), 16)
			require.Len(t, tr.Logprobs, len(tr.ResponseIDs))
			require.Positive(t, tr.MaskOnes())
			require.Nil(t, tr.Reward, "no reward function configured: verl's reward manager scores later")
		}
		b := readBatch(t, batch)
		require.Equal(t, 1024, b.PromptLen) // data.max_prompt_length of verl's config
		require.Equal(t, 16, b.ResponseLen)
		checkBatch(t, b, trajs, samples, tokDir)
	})

	t.Run("agent loop config redeclaring tool_agent", func(t *testing.T) {
		// verl overwrites registry names from agent_loop_config_path,
		// built-in ones included; the rows (agent_name tool_agent) run
		// the redeclared loop, and the log says what replaced what. The
		// data: DuckDB's file and arrow-rs's.
		arrowData := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_arrow_rs.parquet")
		// The model calls the GSM8K tool on every turn, so the turn limit
		// ends each rollout: the redeclared loop's 2, not multi_turn's 5.
		imEnd, _ := tok.TokenID("<|im_end|>")
		callTool := append(tok.Encode("<tool_call>\n{\"name\": \"calc_gsm8k_reward\", \"arguments\": {\"answer\": \"4\"}}\n</tool_call>"), imEnd)
		var calls atomic.Int64
		srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: func(servertest.Call) servertest.Reply {
			calls.Add(1)
			return servertest.Reply{Tokens: callTool}
		}}), httpapi.Config{})
		require.NoError(t, err)
		defer srv.Close()
		// The two files hold the same rows (indices 0..2): one run each.
		for i, data := range []string{toolData, arrowData} {
			before := calls.Load()
			out, batch := filepath.Join(tmp, fmt.Sprintf("c%d.jsonl", i)), filepath.Join(tmp, fmt.Sprintf("c%d.safetensors", i))
			var stdout, stderr bytes.Buffer
			args := append([]string{"rollout", "--config", "testdata/verl/gsm8k_multiturn_grpo.yaml",
				"--servers", srv.URL(), "--out", out, "--batch", batch, "--progress", "never",
				"data.train_files=" + data, "actor_rollout_ref.model.path=" + tokDir, "actor_rollout_ref.rollout.n=2",
				"actor_rollout_ref.rollout.multi_turn.tool_config_path=testdata/verl/tool_config/gsm8k_tool_config.yaml",
				"actor_rollout_ref.rollout.agent.agent_loop_config_path=testdata/verl/agent_loop_config_tool_agent.yaml",
			}, verlRunOverrides...)
			code := runMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			require.NotContains(t, stderr.String(), "WARNING")
			require.Contains(t, stderr.String(), `msg="agent loop replaced" name=tool_agent old=built-in new="agent config entry 0 (_target_ verl.experimental.agent_loop.tool_agent_loop.ToolAgentLoop)" file=testdata/verl/agent_loop_config_tool_agent.yaml`)
			samples := samplesByIndex(t, data)
			trajs := readTrajectories(t, out)
			require.Len(t, trajs, len(samples)*2, data)
			require.Equal(t, int64(2*len(trajs)), calls.Load()-before, "two assistant turns per rollout")
			for _, tr := range trajs {
				require.Equal(t, trajectory.StopMaxTurns, tr.StopReason, tr.ID)
				require.Equal(t, 1, tr.ToolCalls, tr.ID, "the second turn's call is not run: the turn limit comes first, as in verl")
			}
			checkBatch(t, readBatch(t, batch), trajs, samples, tokDir)
		}
	})

	t.Run("interaction config, scripted engine", func(t *testing.T) {
		// The model answers wrong, is told so by verl's GSM8K interaction,
		// then answers right.
		imEnd, _ := tok.TokenID("<|im_end|>")
		wrong := append(tok.Encode("It is 70."), imEnd)
		right := append(tok.Encode("Sorry: #### 72"), imEnd)
		rule := func(c servertest.Call) servertest.Reply {
			if c.Turn == 0 {
				return servertest.Reply{Tokens: wrong}
			}
			return servertest.Reply{Tokens: right}
		}
		srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
		require.NoError(t, err)
		defer srv.Close()
		out, batch := filepath.Join(tmp, "b.jsonl"), filepath.Join(tmp, "b.safetensors")
		var stdout, stderr bytes.Buffer
		args := append([]string{"rollout", "--config", "testdata/verl/gsm8k_multiturn_grpo_w_interaction.yaml",
			"--servers", srv.URL(), "--out", out, "--batch", batch, "--progress", "never", "--limit", "1",
			"data.train_files=" + interData, "actor_rollout_ref.model.path=" + tokDir,
			"actor_rollout_ref.rollout.multi_turn.interaction_config_path=testdata/verl/interaction_config/gsm8k_interaction_config.yaml",
			"actor_rollout_ref.rollout.agent.agent_loop_config_path=testdata/verl/agent_loop_config.yaml",
			"actor_rollout_ref.rollout.agent.default_agent_loop=gsm8k_tool_agent",
		}, verlRunOverrides...)
		code := runMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		require.Equal(t, 0, code, stderr.String())
		require.NotContains(t, stderr.String(), "WARNING")
		trajs := readTrajectories(t, out)
		require.Len(t, trajs, 1)
		tr := trajs[0]
		require.Equal(t, trajectory.StopInteractionDone, tr.StopReason)
		require.Equal(t, []float64{0, 1}, tr.TurnRewards, "verl's Gsm8kInteraction: 0 for the wrong answer, 1 for the right one")
		text, err := tok.Decode(tr.ResponseIDs, false)
		require.NoError(t, err)
		require.Equal(t, "It is 70.<|im_end|>\n<|im_start|>user\nYour response is incorrect! You need to reflect on your answer and try again.<|im_end|>\n<|im_start|>assistant\nSorry: #### 72<|im_end|>\n<|im_start|>user\nYour response is correct!<|im_end|>\n<|im_start|>assistant\n", text, "verl appends the reply that ends the episode")
		var score float64
		require.NoError(t, json.Unmarshal(tr.Extra["interaction_score"], &score))
		require.Equal(t, 1.0, score)
		samples := samplesByIndex(t, interData)
		b := readBatch(t, batch)
		checkBatch(t, b, trajs, samples, tokDir)
		require.Equal(t, 1024, b.PromptLen)
		require.Equal(t, 1024, b.ResponseLen)
	})
}

// TestVerlExampleConfigsLoad: verl's search and ReTool example configs
// (format "qwen", the search and SandboxFusion tool configs) and the
// gpt-oss format name pass validation and run; the tools are not called
// (the services do not exist here), only loaded.
func TestVerlExampleConfigsLoad(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv, calls, _ := countingEngine(t, tok)
	data := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_duckdb.parquet")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"search", []string{"--config", "testdata/verl/search_multiturn_grpo.yaml",
			"actor_rollout_ref.rollout.multi_turn.tool_config_path=testdata/verl/tool_config/search_tool_config.yaml"}},
		// ReTool's config names its tool config relative to verl's
		// examples directory; the override points at the same file here.
		{"retool", []string{"--config", "testdata/verl/retool_multiturn_grpo.yaml",
			"actor_rollout_ref.rollout.multi_turn.tool_config_path=testdata/verl/tool_config/sandbox_fusion_tool_config.yaml"}},
		{"gpt-oss format", []string{"--config", "testdata/verl/gsm8k_multiturn_grpo.yaml", "actor_rollout_ref.rollout.multi_turn.format=gpt-oss"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := calls.Load()
			var stdout, stderr bytes.Buffer
			args := append([]string{"rollout", "--servers", srv.URL(), "--out", filepath.Join(t.TempDir(), "o.jsonl"),
				"--progress", "never", "--limit", "1", "data.train_files=" + data, "actor_rollout_ref.model.path=" + dir}, c.args...)
			code := runMain(context.Background(), args, nil, &stdout, &stderr)
			require.Equal(t, 0, code, stderr.String())
			require.NotContains(t, stderr.String(), "WARNING")
			require.Equal(t, before+1, calls.Load())
		})
	}
}
