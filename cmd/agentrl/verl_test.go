package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// countingEngine answers every request with a short final answer and
// counts the requests and the largest max_new_tokens it was sent.
func countingEngine(t *testing.T, tok *tokenizer.Tokenizer) (*httpapi.Server, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	imEnd, _ := tok.TokenID("<|im_end|>")
	answer := append(tok.Encode("#### 4"), imEnd)
	var calls, maxNew atomic.Int64
	rule := func(c servertest.Call) servertest.Reply {
		calls.Add(1)
		for {
			m := maxNew.Load()
			if int64(c.Req.Params.MaxNewTokens) <= m || maxNew.CompareAndSwap(m, int64(c.Req.Params.MaxNewTokens)) {
				break
			}
		}
		return servertest.Reply{Tokens: answer}
	}
	srv, err := httpapi.Start(servertest.New(servertest.Config{Rule: rule}), httpapi.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	return srv, &calls, &maxNew
}

// TestRolloutValidatesBeforeFirstRequest (issue 13): a misspelt key, a
// wrong format, a bad row or an unknown tool is reported before the
// engine sees a request and before any output is written.
func TestRolloutValidatesBeforeFirstRequest(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv, calls, _ := countingEngine(t, tok)
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(strings.Repeat(`{"prompt": [{"role": "user", "content": "2+2?"}]}`+"\n", 3)), 0o644))
	badRow := filepath.Join(tmp, "bad.jsonl")
	require.NoError(t, os.WriteFile(badRow, []byte(`{"prompt": [{"role": "user", "content": "2+2?"}]}`+"\n"+`{"prompt": [{"role": "user", "content": "x"}]}`+"\n"+`{"prompt": [{"role": 1}]}`+"\n"), 0o644))
	unknownTool := filepath.Join(tmp, "tools.jsonl")
	require.NoError(t, os.WriteFile(unknownTool, []byte(`{"prompt": [{"role": "user", "content": "x"}], "extra_info": {"tool_selection": ["search"]}}`+"\n"), 0o644))
	tools := filepath.Join(tmp, "tools.yaml")
	require.NoError(t, os.WriteFile(tools, []byte(toolsYAML), 0o644))
	write := func(name, yml string) string {
		p := filepath.Join(tmp, name)
		require.NoError(t, os.WriteFile(p, []byte(yml), 0o644))
		return p
	}
	typo := write("typo.yaml", "data:\n  max_prompt_length: 256\n  max_respons_length: 64\n")
	for _, c := range []struct {
		name, data string
		args       []string
		want       string
	}{
		{"typo is an error with --strict-config", good, []string{"--config", typo, "--strict-config"}, "1 unknown keys"},
		{"wrong format", good, []string{"--config", write("fmt.yaml", "actor_rollout_ref:\n  rollout:\n    multi_turn:\n      enable: true\n      format: nope\n")}, `multi_turn: agent "single_turn_agent": agentloop: invalid config: format: parser: unknown format "nope"`},
		{"bad row", badRow, nil, "bad.jsonl: row 3: column prompt[0].role"},
		{"unknown tool", unknownTool, []string{"--config", write("tools.yaml2", "actor_rollout_ref:\n  rollout:\n    multi_turn:\n      tool_config_path: "+tools+"\n")}, `tool_selection names "search"`},
		{"bad top_p", good, []string{"--config", write("topp.yaml", "actor_rollout_ref:\n  rollout:\n    top_p: 0\n")}, "top_p 0 not in (0, 1]"},
		{"unknown default loop", good, []string{"--config", write("def.yaml", "actor_rollout_ref:\n  rollout:\n    agent:\n      default_agent_loop: react\n")}, `unknown agent "react"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(tmp, "out.jsonl")
			_ = os.Remove(out)
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), append([]string{"rollout", "--data", c.data, "--tokenizer", dir,
				"--servers", srv.URL(), "--out", out, "--progress", "never"}, c.args...), nil, &stdout, &stderr)
			require.Equal(t, 1, code, stderr.String())
			require.Contains(t, stderr.String(), c.want)
			require.Zero(t, calls.Load(), "no request before validation passed")
			require.NoFileExists(t, out, "nothing written before validation passed")
		})
	}

	// Without --strict-config a typo is a warning naming the line and the
	// key it probably meant, printed before the run.
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--config", typo, "--data", good, "--tokenizer", dir,
		"--servers", srv.URL(), "--out", filepath.Join(tmp, "o.jsonl"), "--progress", "never"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Contains(t, stderr.String(), "WARNING: config "+typo+": line 3: unknown key data.max_respons_length (did you mean data.max_response_length?); it is ignored")
}

// TestRolloutDefaultLengths (issue 13): with no config, generation is
// bounded by verl's default response length (512) and --batch works.
func TestRolloutDefaultLengths(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv, calls, maxNew := countingEngine(t, tok)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "d.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "2+2?"}]}`+"\n"), 0o644))
	batch := filepath.Join(tmp, "b.safetensors")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(),
		"--out", filepath.Join(tmp, "o.jsonl"), "--batch", batch, "--progress", "never"}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	require.Equal(t, int64(1), calls.Load())
	require.Positive(t, maxNew.Load())
	require.LessOrEqual(t, maxNew.Load(), int64(512))
	f, err := os.Open(batch)
	require.NoError(t, err)
	defer f.Close()
	b, err := trajectory.ReadSafetensorsBatch(f)
	require.NoError(t, err)
	require.Equal(t, 512, b.PromptLen)
	require.Equal(t, 512, b.ResponseLen)
	require.JSONEq(t, `[{"role":"user","content":"2+2?"}]`, string(b.NonTensor["raw_prompt"][0]))
}

// data.apply_chat_template_kwargs reaches the chat template (Qwen3's
// enable_thinking: false adds an empty think block to the prompt).
func TestApplyChatTemplateKwargs(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	srv, _, _ := countingEngine(t, tok)
	tmp := t.TempDir()
	data := filepath.Join(tmp, "d.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "2+2?"}]}`+"\n"), 0o644))
	prompts := map[string][]int32{}
	for _, kw := range []string{"", "data.apply_chat_template_kwargs={enable_thinking: false}"} {
		out := filepath.Join(tmp, "o.jsonl")
		args := []string{"rollout", "--data", data, "--tokenizer", dir, "--servers", srv.URL(), "--out", out, "--progress", "never"}
		if kw != "" {
			args = append(args, kw)
		}
		var stdout, stderr bytes.Buffer
		require.Equal(t, 0, runMain(context.Background(), args, nil, &stdout, &stderr), stderr.String())
		prompts[kw] = readTrajectories(t, out)[0].PromptIDs
	}
	off, err := tok.Decode(prompts["data.apply_chat_template_kwargs={enable_thinking: false}"], false)
	require.NoError(t, err)
	on, err := tok.Decode(prompts[""], false)
	require.NoError(t, err)
	require.True(t, strings.HasSuffix(off, "<|im_start|>assistant\n<think>\n\n</think>\n\n"), off)
	require.True(t, strings.HasSuffix(on, "<|im_start|>assistant\n"), on)
}

func TestConfigOverrides(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(path, []byte("data:\n  max_prompt_length: 64\n  train_files: a.parquet\nactor_rollout_ref:\n  rollout:\n    n: 2\n"), 0o644))
	var warn bytes.Buffer
	cfg, err := loadRolloutConfig(path, []string{
		"data.max_prompt_length=128", "+data.val_files=[b.parquet, c.parquet]", "~data.train_files",
		"actor_rollout_ref.rollout.multi_turn.format=hermes", "actor_rollout_ref.rollout.temperature=0.5",
		"data.apply_chat_template_kwargs={enable_thinking: false}", "trainer.total_epochs=3", "data.max_respons_length=9",
	}, &warn, false)
	require.NoError(t, err)
	require.Equal(t, 128, cfg.Data.MaxPromptLength)
	require.Equal(t, stringList{"b.parquet", "c.parquet"}, cfg.Data.ValFiles)
	require.Empty(t, cfg.Data.TrainFiles)
	require.Equal(t, 2, cfg.ActorRolloutRef.Rollout.N)
	require.Equal(t, "hermes", cfg.ActorRolloutRef.Rollout.MultiTurn.Format)
	require.Equal(t, 0.5, *cfg.ActorRolloutRef.Rollout.Temperature)
	require.Equal(t, map[string]any{"enable_thinking": false}, cfg.Data.ApplyChatTemplateKwargs)
	require.Contains(t, warn.String(), "override: unknown key data.max_respons_length (did you mean data.max_response_length?)")

	for _, o := range []string{"novalue", "=3", "data.max_prompt_length.x=1"} {
		_, err := loadRolloutConfig(path, []string{o}, io.Discard, false)
		require.Error(t, err, o)
	}
}
