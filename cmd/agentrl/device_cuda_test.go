//go:build cuda

package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/cuda/gpu"
	"github.com/stretchr/testify/require"
)

// TestBenchEngineOnGPU runs `bench engine --device cuda` on a tiny model.
func TestBenchEngineOnGPU(t *testing.T) {
	if !gpu.Available() {
		t.Skip("no CUDA device")
	}
	modelDir := filepath.Join(t.TempDir(), "model")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "--layers", "1", "--hidden", "32", "--heads", "2",
		"--max-pos", "512", "--seed", "1", "--out", modelDir}, strings.NewReader(""), &stdout, &stderr), stderr.String())
	stdout.Reset()
	require.Equal(t, 0, runMain(context.Background(), []string{"bench", "engine", "--model", modelDir, "--device", "cuda", "--reps", "1",
		"--decode-tokens", "4", "--prefill-tokens", "16", "--concurrency", "2"}, strings.NewReader(""), &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "on the CUDA device")
	require.Contains(t, stdout.String(), "aggregate decode, 2 sequences")
}
