//go:build !cuda

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDeviceFlag: every command that runs the in-process engine takes
// --device; without the cuda build tag, cuda is a clear error, and an
// unknown device is named.
func TestDeviceFlag(t *testing.T) {
	tokDir := qwenTokenizerDir(t)
	tmp := t.TempDir()
	modelDir := filepath.Join(tmp, "model")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "--layers", "1", "--hidden", "32", "--heads", "2",
		"--seed", "1", "--tokenizer", tokDir, "--out", modelDir}, strings.NewReader(""), &stdout, &stderr), stderr.String())
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "hi"}]}`+"\n"), 0o644))
	commands := [][]string{
		{"serve", "--model", modelDir, "--addr", "127.0.0.1:0"},
		{"bench", "engine", "--model", modelDir, "--reps", "1"},
		{"rollout", "--data", data, "--tokenizer", tokDir, "--model", modelDir, "--out", filepath.Join(tmp, "out.jsonl"), "--progress", "never"},
	}
	for _, cmd := range commands {
		for _, tt := range []struct{ device, want string }{
			{"cuda", "built without the cuda tag"},
			{"tpu", `unknown device "tpu"`},
		} {
			t.Run(cmd[0]+"/"+tt.device, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := runMain(context.Background(), append(append([]string(nil), cmd...), "--device", tt.device), strings.NewReader(""), &stdout, &stderr)
				require.Equal(t, 1, code)
				require.Contains(t, stderr.String(), tt.want)
			})
		}
	}
}
