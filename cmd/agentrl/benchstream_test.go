package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// bench stream runs end to end on a tiny model and reports every endpoint.
func TestBenchStream(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := filepath.Join(t.TempDir(), "tiny")
	var out, errOut bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"model", "init", "-out", dir, "-arch", "llama",
		"-layers", "1", "-hidden", "32", "-heads", "2", "-kv-heads", "2", "-intermediate", "64", "-vocab", "300", "-seed", "1"},
		strings.NewReader(""), &out, &errOut), errOut.String())
	out.Reset()
	require.Equal(t, 0, runMain(context.Background(), []string{"bench", "stream", "-model", dir, "-reps", "2", "-prompt-tokens", "8", "-max-tokens", "3"},
		strings.NewReader(""), &out, &errOut), errOut.String())
	for _, ep := range streamEndpoints {
		require.Contains(t, out.String(), ep.name)
	}
	require.Contains(t, out.String(), "median of paired ratios")

	require.NotEqual(t, 0, runMain(context.Background(), []string{"bench", "stream"}, strings.NewReader(""), &out, &errOut))
}
