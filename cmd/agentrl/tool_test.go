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
)

func TestToolCommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tools.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`
tools:
  - class_name: calculator
    config: {type: native}
  - class_name: gsm8k
    config: {type: native}
`), 0o644))
	in := strings.Join([]string{
		`{"name": "calculator", "arguments": {"expression": "6 * 7"}}`,
		`{"name": "calculator", "arguments": "{\"expression\": \"1/0\"}"}`,
		`{"name": "calc_gsm8k_reward", "arguments": {"answer": "42"}}`,
		`{"name": "nope", "arguments": {}}`,
		``,
	}, "\n")
	var out, errOut bytes.Buffer
	code := runMain(context.Background(), []string{"tool", "--config", cfg, "--create-kwargs", `{"calc_gsm8k_reward": {"ground_truth": "42"}}`},
		strings.NewReader(in), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 4)
	var got []map[string]any
	for _, l := range lines {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m))
		delete(m, "duration_ms")
		got = append(got, m)
	}
	require.Equal(t, "42", got[0]["text"])
	require.Equal(t, "execution", got[1]["error_kind"])
	require.Equal(t, `Error when executing tool "calculator": division by zero at position 2`, got[1]["text"])
	require.Equal(t, map[string]any{"score": 1.0}, got[2]["metrics"])
	require.Equal(t, "unknown_tool", got[3]["error_kind"])

	out.Reset()
	code = runMain(context.Background(), []string{"tool", "--config", cfg, "--list"}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 0, code, errOut.String())
	require.Equal(t, 2, strings.Count(out.String(), "\n"))
	require.Contains(t, out.String(), `"name":"calculator"`)

	errOut.Reset()
	code = runMain(context.Background(), []string{"tool"}, strings.NewReader(""), &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "--config is required")

	errOut.Reset()
	code = runMain(context.Background(), []string{"tool", "--config", cfg}, strings.NewReader("{bad\n"), &out, &errOut)
	require.Equal(t, 1, code)
	require.Contains(t, errOut.String(), "stdin line 1")
}
