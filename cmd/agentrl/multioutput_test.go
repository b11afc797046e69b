package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// twoPassLoop is a multi-output loop (verl's list[AgentLoopOutput]): it
// answers the row, then answers again from a fresh prompt, so its two
// turns are two trajectories.
type twoPassLoop struct{ single agentloop.AgentLoop }

func (l twoPassLoop) Run(ctx context.Context, s agentloop.Sample, p server.SamplingParams) (*trajectory.Trajectory, error) {
	ts, err := l.RunMulti(ctx, s, p)
	if len(ts) == 0 {
		return nil, err
	}
	return ts[len(ts)-1], err
}

func (l twoPassLoop) RunMulti(ctx context.Context, s agentloop.Sample, p server.SamplingParams) ([]*trajectory.Trajectory, error) {
	first, err := l.single.Run(ctx, s, p)
	if err != nil {
		return nil, err
	}
	s.Messages = []chat.Message{{Role: chat.RoleUser, Content: "Check your answer."}}
	second, err := l.single.Run(ctx, s, p)
	return []*trajectory.Trajectory{first, second}, err
}

// A recipe registers its loop by name, as with verl's @register.
func init() {
	agentloop.Register("two_pass_agent", func(env *agentloop.Env, cfg agentloop.Config) (agentloop.AgentLoop, error) {
		single, err := agentloop.NewSingleTurn(env, cfg)
		return twoPassLoop{single}, err
	})
}

// TestRolloutMultiOutput: verl's GSM8K config with an agent-loop config
// that redeclares tool_agent as a multi-output loop. Every trajectory of
// every rollout is written to the JSONL and is a batch row keyed
// {uid}_{session}_{index}, with loss_mask, and the batch passes PyTorch's
// checks of verl's layout.
func TestRolloutMultiOutput(t *testing.T) {
	tokDir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(tokDir)
	require.NoError(t, err)
	srv, calls, _ := countingEngine(t, tok)
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "agent_loop.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte("- name: tool_agent\n  _target_: recipe.two_pass.TwoPassAgentLoop\n"), 0o644))
	data := filepath.Join("..", "..", "dataset", "testdata", "gsm8k_duckdb.parquet")
	out, batch := filepath.Join(dir, "o.jsonl"), filepath.Join(dir, "b.safetensors")
	var stdout, stderr bytes.Buffer
	args := append([]string{"rollout", "--config", "testdata/verl/gsm8k_multiturn_grpo.yaml", "--servers", srv.URL(),
		"--out", out, "--batch", batch, "--progress", "never", "data.train_files=" + data, "actor_rollout_ref.model.path=" + tokDir,
		"actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.agent.agent_loop_config_path=" + cfgPath,
		"actor_rollout_ref.rollout.multi_turn.tool_config_path=testdata/verl/tool_config/gsm8k_tool_config.yaml",
	}, verlRunOverrides...)
	require.Equal(t, 0, runMain(context.Background(), args, strings.NewReader(""), &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), `msg="agent loop replaced" name=tool_agent old=built-in new="agent config entry 0 (_target_ recipe.two_pass.TwoPassAgentLoop)"`)

	samples := samplesByIndex(t, data)
	trajs := readTrajectories(t, out)
	require.Len(t, trajs, len(samples)*2*2, "rows × n × two outputs")
	require.Equal(t, int64(len(trajs)), calls.Load())
	seen := map[string]bool{}
	for _, tr := range trajs {
		require.True(t, tr.MultiOutput(), tr.ID)
		require.Equal(t, tr.RolloutID+"/"+string(rune('0'+tr.Output)), tr.ID)
		seen[tr.Key()] = true
	}
	require.Len(t, seen, len(trajs))
	b := readBatch(t, batch)
	require.Equal(t, len(trajs), b.Size)
	require.Equal(t, b.ResponseMask, b.LossMask)
	for i, id := range b.IDs {
		var key string
		require.NoError(t, json.Unmarshal(b.NonTensor[trajectory.NonTensorKey][i], &key))
		require.True(t, seen[key], "row %d (%s): key %q", i, id, key)
		require.Equal(t, id[:strings.LastIndexByte(id, '/')], b.RolloutIDs[i])
	}
	checkBatch(t, b, trajs, samples, tokDir)
}
