package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestTrain runs a very short training (the real one takes minutes) and
// checks that it writes a loadable checkpoint, the plot and the report, and
// that a second run with the same seed writes the same bytes.
func TestTrain(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a model")
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	run := func(dir string, seed ...string) {
		var stdout, stderr bytes.Buffer
		args := []string{"train", "-seed", append(seed, "5")[0], "-out", dir, "-sft-steps", "3", "-sft-batch", "2",
			"-grpo-steps", "1", "-grpo-prompts", "2", "-grpo-group", "2", "-eval-tasks", "2",
			"-plot", filepath.Join(dir, "plot.svg"), "-report", filepath.Join(dir, "report.json")}
		require.Equal(t, 0, runMain(context.Background(), args, nil, &stdout, &stderr), stderr.String())
		require.Contains(t, stdout.String(), "accuracy on 2 held-out tasks")
	}
	a, b := t.TempDir(), t.TempDir()
	run(a)
	run(b)
	for _, name := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		require.NoError(t, err)
		y, err := os.ReadFile(filepath.Join(b, name))
		require.NoError(t, err)
		require.Equal(t, x, y, "%s differs between two runs with the same seed", name)
	}
	// The comparison can fail: another seed trains other weights.
	c := t.TempDir()
	run(c, "6")
	x, err := os.ReadFile(filepath.Join(a, "model.safetensors"))
	require.NoError(t, err)
	y, err := os.ReadFile(filepath.Join(c, "model.safetensors"))
	require.NoError(t, err)
	require.NotEqual(t, x, y, "seeds 5 and 6 wrote the same weights")
	svg, err := os.ReadFile(filepath.Join(a, "plot.svg"))
	require.NoError(t, err)
	require.Contains(t, string(svg), "<polyline")
	var rep struct{ Steps []json.RawMessage }
	data, err := os.ReadFile(filepath.Join(a, "report.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &rep))
	require.Len(t, rep.Steps, 3+1)

	// The trained directory is a checkpoint the demo can run.
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"demo", "-model", a, "-n", "2"}, nil, &stdout, &stderr), stderr.String())
}

func TestTrainFlags(t *testing.T) {
	for _, args := range [][]string{
		{"train"}, // -out missing
		{"train", "-out", t.TempDir(), "-threads", "0"},
		{"train", "-out", t.TempDir(), "-sft-steps", "-1"},
		{"train", "-out", t.TempDir(), "-grpo-group", "0"},
		{"train", "-nope"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 1, min(1, runMain(context.Background(), args, nil, &stdout, &stderr)), "%v", args)
		require.NotEmpty(t, stderr.String())
	}
}
