package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// calcEngine serves a scripted "model" over SGLang's HTTP API on loopback:
// it calls the calculator on its first turn and answers on its second.
func calcEngine(t *testing.T, tok *tokenizer.Tokenizer) *httpapi.Server {
	t.Helper()
	imStart, _ := tok.TokenID("<|im_start|>")
	imEnd, _ := tok.TokenID("<|im_end|>")
	call := append(tok.Encode("<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"2+2\"}}\n</tool_call>"), imEnd)
	answer := append(tok.Encode("The answer is 4."), imEnd)
	rule := func(c servertest.Call) servertest.Reply {
		n := 0
		for _, id := range c.Req.PromptIDs {
			if id == imStart {
				n++
			}
		}
		if n <= 3 { // system (tools), user, assistant: the first turn
			return servertest.Reply{Tokens: call}
		}
		return servertest.Reply{Tokens: answer}
	}
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv
}

// verlRow is the layout of a verl dataset Parquet file.
type verlRow struct {
	DataSource  string    `parquet:"data_source"`
	Prompt      []verlMsg `parquet:"prompt,list"`
	Ability     string    `parquet:"ability"`
	RewardModel struct {
		GroundTruth string `parquet:"ground_truth"`
		Style       string `parquet:"style"`
	} `parquet:"reward_model"`
	ExtraInfo struct {
		Index int64  `parquet:"index"`
		Split string `parquet:"split"`
	} `parquet:"extra_info"`
}

type verlMsg struct {
	Content string `parquet:"content"`
	Role    string `parquet:"role"`
}

const rolloutYAML = `
data:
  max_prompt_length: 512
  max_response_length: 256
actor_rollout_ref:
  model: {path: ignored}
  rollout:
    name: sglang
    n: 2
    temperature: 0.7
    calculate_log_probs: true
    multi_turn:
      enable: true
      max_assistant_turns: 4
      max_parallel_calls: 1
      format: hermes
      max_consecutive_invalid_tool_calls: 2
agentrl:
  concurrency: 8
  reward: gsm8k_flexible
`

const toolsYAML = `
tools:
  - class_name: calculator
    config: {type: native, max_concurrency: 4, timeout: 5s}
`

func TestRolloutJSONLAndParquet(t *testing.T) {
	dir := qwenTokenizerDir(t)
	// The model's config.json picks verl's continuous-token family: every
	// tool result's delta below is checked against Qwen3's rule.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3"}`), 0o644))
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv := calcEngine(t, tok)
	tmp := t.TempDir()
	cfg := filepath.Join(tmp, "config.yaml")
	tools := filepath.Join(tmp, "tools.yaml")
	require.NoError(t, os.WriteFile(tools, []byte(toolsYAML), 0o644))
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(rolloutYAML, "format: hermes", "format: hermes\n      tool_config_path: "+tools, 1)), 0o644))

	// The same three rows as JSONL and as verl Parquet.
	jsonl := filepath.Join(tmp, "data.jsonl")
	var lines []string
	rows := make([]verlRow, 3)
	for i := range rows {
		truth := "4"
		if i == 2 {
			truth = "5"
		}
		rows[i].DataSource, rows[i].Ability = "openai/gsm8k", "math"
		rows[i].Prompt = []verlMsg{{Role: "user", Content: fmt.Sprintf("What is 2+2? (%d)", i)}}
		rows[i].RewardModel.GroundTruth, rows[i].RewardModel.Style = truth, "rule"
		rows[i].ExtraInfo.Index, rows[i].ExtraInfo.Split = int64(10+i), "test"
		lines = append(lines, fmt.Sprintf(`{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "What is 2+2? (%d)"}], "reward_model": {"ground_truth": %q}, "extra_info": {"index": %d, "split": "test"}}`, i, truth, 10+i))
	}
	require.NoError(t, os.WriteFile(jsonl, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	pq := filepath.Join(tmp, "data.parquet")
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[verlRow](&buf)
	_, err = w.Write(rows)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(pq, buf.Bytes(), 0o644))

	var outputs [][]*trajectory.Trajectory
	for _, data := range []string{jsonl, pq} {
		out := filepath.Join(tmp, filepath.Base(data)+".trajectories.jsonl")
		batch := filepath.Join(tmp, filepath.Base(data)+".safetensors")
		var stdout, stderr bytes.Buffer
		progress := "auto" // off a terminal: no bar
		if data == pq {
			progress = "always"
		}
		code := runMain(context.Background(), []string{"rollout", "--config", cfg, "--data", data, "--tokenizer", dir,
			"--servers", srv.URL(), "--out", out, "--batch", batch, "--progress", progress}, nil, &stdout, &stderr)
		require.Equal(t, 0, code, "stderr: %s", stderr.String())
		require.Contains(t, stderr.String(), "model_type=qwen3 family=qwen3")
		summary := strings.Join(strings.Fields(stdout.String()), " ")
		require.Contains(t, summary, "trajectories 6 (3 groups, 0 filtered, 0 failed)")
		require.Contains(t, summary, "stop reasons completed=6")
		require.Contains(t, summary, "tool calls 6 (success rate 1.000)")
		require.Contains(t, summary, "reward mean 0.6667 min 0.0000 max 1.0000")
		require.Contains(t, summary, "mask-ones ratio 0.667")
		if progress == "auto" {
			// No progress bar off a terminal: log records only (start,
			// end, and progress at --log-interval).
			require.NotContains(t, stderr.String(), "6/6", "no progress bar off a terminal")
			for line := range strings.SplitSeq(strings.TrimSpace(stderr.String()), "\n") {
				require.Regexp(t, `level=INFO msg="(rollout |continuous-token family)`, line, "only log records on stderr")
			}
		} else {
			require.Contains(t, stderr.String(), "rollout")
			require.Contains(t, stderr.String(), "6/6")
		}

		f, err := os.Open(out)
		require.NoError(t, err)
		trajs, err := trajectory.ReadJSONL(f)
		f.Close()
		require.NoError(t, err)
		require.Len(t, trajs, 6)
		outputs = append(outputs, trajs)
		for _, tr := range trajs {
			require.NoError(t, tr.Validate())
			require.Equal(t, 4, tr.NumTurns)
			require.NotNil(t, tr.Logprobs)
			text, err := tok.Decode(tr.ResponseIDs, false)
			require.NoError(t, err)
			require.Contains(t, text, "<tool_response>\n4\n</tool_response>")
			require.True(t, strings.HasSuffix(text, "The answer is 4.<|im_end|>"))
		}

		bf, err := os.Open(batch)
		require.NoError(t, err)
		b, err := trajectory.ReadSafetensorsBatch(bf)
		bf.Close()
		require.NoError(t, err)
		require.Equal(t, 6, b.Size)
		require.Equal(t, 512, b.PromptLen)
		require.Equal(t, 256, b.ResponseLen)
	}
	// Both dataset formats give the same trajectories (ids and tokens).
	byID := func(ts []*trajectory.Trajectory) map[string][]int32 {
		m := map[string][]int32{}
		for _, t := range ts {
			m[t.ID] = append(append([]int32{}, t.PromptIDs...), t.ResponseIDs...)
		}
		return m
	}
	require.Equal(t, byID(outputs[0]), byID(outputs[1]))
	require.Contains(t, byID(outputs[0]), "12/1")
}

func TestRolloutErrors(t *testing.T) {
	tmp := t.TempDir()
	bad := filepath.Join(tmp, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"prompt": [{"role": "user", "content": "x"}]}`+"\n"+`{"prompt": 3}`+"\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--data, --tokenizer and either servers or --model (not both) are required"},
		{[]string{"--data", bad, "--tokenizer", tmp, "--servers", "http://127.0.0.1:1"}, "row 2"},
		{[]string{"--data", filepath.Join(tmp, "x.csv"), "--tokenizer", tmp, "--servers", "http://127.0.0.1:1"}, "want a .jsonl or .parquet"},
		{[]string{"--data", bad, "--tokenizer", tmp, "--servers", "http://127.0.0.1:1", "--progress", "maybe"}, "--progress must be"},
	} {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), append([]string{"rollout"}, c.args...), nil, &stdout, &stderr)
		require.Equal(t, 1, code)
		require.Contains(t, stderr.String(), c.want, c.args)
	}
}

// TestRolloutInProcessEngine runs the rollout against the in-process engine
// on a random tiny model that carries the Qwen3 tokenizer: no server at all.
func TestRolloutInProcessEngine(t *testing.T) {
	tokDir := qwenTokenizerDir(t)
	tmp := t.TempDir()
	modelDir := filepath.Join(tmp, "model")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "--arch", "qwen3", "--layers", "1", "--hidden", "32",
		"--heads", "2", "--max-pos", "1024", "--seed", "7", "--tokenizer", tokDir, "--out", modelDir}, strings.NewReader(""), &stdout, &stderr), stderr.String())

	cfg := filepath.Join(tmp, "config.yaml")
	yml := strings.Replace(rolloutYAML, "max_response_length: 256", "max_response_length: 12", 1)
	require.NoError(t, os.WriteFile(cfg, []byte(yml), 0o644))
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "What is 2+2?"}], "reward_model": {"ground_truth": "4"}}`+"\n"), 0o644))
	out := filepath.Join(tmp, "out.jsonl")
	stdout.Reset()
	stderr.Reset()
	code := runMain(context.Background(), []string{"rollout", "--config", cfg, "--data", data, "--tokenizer", tokDir,
		"--model", modelDir, "--out", out, "--progress", "never"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	trajs, err := trajectory.ReadJSONL(f)
	require.NoError(t, err)
	require.Len(t, trajs, 2) // n: 2
	for _, tr := range trajs {
		require.NoError(t, tr.Validate())
		require.Positive(t, tr.MaskOnes(), "the engine sampled tokens")
		require.LessOrEqual(t, len(tr.ResponseIDs), 12)
		require.Len(t, tr.Logprobs, len(tr.ResponseIDs))
	}

	// Servers and a local model are mutually exclusive.
	code = runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", tokDir, "--model", modelDir,
		"--servers", "http://127.0.0.1:1"}, strings.NewReader(""), &stdout, &stderr)
	require.Equal(t, 1, code)
}

// TestContinuousBoundaryFromConfig: --continuous-family auto picks verl's
// family by exact config.json model_type (verl's
// infer_continuous_token_model_family), falls back to verl's default for an
// unknown or missing one, takes an explicit family in verl's spelling, and
// refuses a family whose tokens the tokenizer lacks.
func TestContinuousBoundaryFromConfig(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	family := func(flag string) tokenizer.ContinuousFamily {
		t.Helper()
		b, err := continuousBoundary(dir, flag, tok, logger)
		require.NoError(t, err)
		return b.Family()
	}
	require.Equal(t, tokenizer.FamilyDefault, family("auto"), "no config.json")
	require.Contains(t, logs.String(), "no continuous-token family")
	for mt, want := range map[string]tokenizer.ContinuousFamily{
		"qwen3": tokenizer.FamilyQwen3, "qwen2": tokenizer.FamilyQwen, "qwen3_5": tokenizer.FamilyQwen35,
		"llama": tokenizer.FamilyDefault, "Qwen3": tokenizer.FamilyQwen3,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"`+mt+`"}`), 0o644))
		require.Equal(t, want, family("auto"), mt)
	}
	require.Equal(t, tokenizer.FamilyQwen35, family("Qwen_3.5"))
	b, err := continuousBoundary(dir, "off", tok, logger)
	require.NoError(t, err)
	require.Nil(t, b)
	_, err = continuousBoundary(dir, "qwen4", tok, logger)
	require.ErrorContains(t, err, `--continuous-family: tokenizer: continuous token: unknown model_family "qwen4"`)
	_, err = continuousBoundary(dir, "glm47", tok, logger)
	require.ErrorContains(t, err, `required token "<|observation|>"`)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":`), 0o644))
	_, err = continuousBoundary(dir, "auto", tok, logger)
	require.ErrorContains(t, err, "config.json")
}
