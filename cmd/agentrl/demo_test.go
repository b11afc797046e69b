package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/trajectory"
)

func TestDemo(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	out := filepath.Join(t.TempDir(), "demo.jsonl")
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"demo", "-n", "6", "-out", out}, nil, &stdout, &stderr)
	require.Equal(t, 0, code, stderr.String())
	text := stdout.String()
	require.Contains(t, text, "task")
	require.Contains(t, text, "tool calls")
	require.Contains(t, text, "trajectories/s")
	require.Contains(t, text, "accuracy")
	require.Equal(t, 6+1, strings.Count(strings.Split(text, "\n\n")[0], "\n")+1, "header + one row per task:\n%s", text)

	f, err := os.Open(out)
	require.NoError(t, err)
	defer f.Close()
	trajs, err := trajectory.ReadJSONL(f)
	require.NoError(t, err)
	require.Len(t, trajs, 6)
	solved := 0
	for _, tr := range trajs {
		require.NoError(t, tr.Validate())
		require.NotNil(t, tr.Reward)
		solved += int(*tr.Reward)
	}
	// The committed model solves ~90% of held-out tasks; a broken
	// checkpoint, engine or loop solves none.
	require.GreaterOrEqual(t, solved, 3, text)
}

func TestDemoFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing")
	for _, tt := range []struct {
		args []string
		want string // the start of stderr
	}{
		// runMain names the command once: the errors carry no "demo:" of their own.
		{[]string{"demo", "-n", "0"}, "agentrl demo: -n must be ≥ 1, got 0\n"},
		{[]string{"demo", "-threads", "0"}, "agentrl demo: -threads must be ≥ 1, got 0\n"},
		{[]string{"demo", "-model", missing}, "agentrl demo: "},
		{[]string{"demo", "-bogus"}, "flag provided but not defined: -bogus"},
	} {
		var stdout, stderr bytes.Buffer
		require.NotEqual(t, 0, runMain(context.Background(), tt.args, nil, &stdout, &stderr), "%v", tt.args)
		require.True(t, strings.HasPrefix(stderr.String(), tt.want), "%v: stderr %q, want it to start with %q", tt.args, stderr.String(), tt.want)
		require.NotContains(t, stderr.String(), "demo: demo:", "%v", tt.args)
	}
}
