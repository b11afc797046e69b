package dataset

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/agentloop"
	"github.com/agentrl/agentrl/chat"
)

func readJSONL(t testing.TB, text string, opts Options) ([]agentloop.Sample, error) {
	r := NewJSONL(strings.NewReader(text), "d.jsonl", opts)
	defer r.Close()
	var out []agentloop.Sample
	for {
		s, err := r.Next(context.Background())
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, s)
	}
}

func TestJSONL(t *testing.T) {
	text := `{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": "2+2?"}], "reward_model": {"ground_truth": "4"}, "extra_info": {"index": 7, "split": "test", "tools_kwargs": {"calc": {"create_kwargs": {"ground_truth": "4"}}, "other": {"execute_kwargs": {}}}, "interaction_kwargs": {"name": "gsm8k", "ground_truth": "4"}}, "uid": 12}

{"raw_prompt": "[{\"role\": \"user\", \"content\": \"hi\"}]", "agent_name": "tool_agent", "tool_selection": []}
{"messages": [{"role": "user", "content": [{"type": "text", "text": "parts"}]}, {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"a\": 1}"}}]}]}
`
	got, err := readJSONL(t, text, Options{})
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, agentloop.Sample{
		Index: 7, GroupID: "12", DataSource: "openai/gsm8k", GroundTruth: "4",
		Messages:          []chat.Message{{Role: "user", Content: "2+2?"}},
		ToolsKwargs:       map[string]map[string]any{"calc": {"ground_truth": "4"}},
		InteractionKwargs: map[string]any{"name": "gsm8k", "ground_truth": "4"},
		Extra:             map[string]any{"split": "test"},
	}, got[0])
	// Rows without an index are numbered by line (0-based, blank lines count).
	require.Equal(t, 2, got[1].Index)
	require.Equal(t, "tool_agent", got[1].AgentName)
	require.Equal(t, []string{}, got[1].Tools)
	require.Equal(t, "hi", got[1].Messages[0].Content)
	require.Equal(t, "parts", got[2].Messages[0].Text())
	require.Equal(t, "f", got[2].Messages[1].ToolCalls[0].Function.Name)

	// prompt_key picks another column.
	got, err = readJSONL(t, `{"question": [{"role": "user", "content": "q"}]}`, Options{PromptKey: "question"})
	require.NoError(t, err)
	require.Equal(t, "q", got[0].Messages[0].Content)

	got, err = readJSONL(t, text, Options{Limit: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
}

func TestJSONLErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{`{"prompt": 3}`, "d.jsonl: row 1: column prompt: dataset: bad file: must be a list of chat messages, got a number"},
		{"\n{\"prompt\": []}", "d.jsonl: row 2: column prompt: dataset: bad file: prompt has no messages"},
		{`{"prompt": [{"role": "user", "content": 5}]}`, "d.jsonl: row 1: column prompt[0].content: dataset: bad file: must be a string, got a number"},
		{`{"prompt": [{"content": "x"}]}`, "d.jsonl: row 1: column prompt[0].role: dataset: bad file: a chat message needs a role"},
		{`{"question": "x"}`, `d.jsonl: row 1: column prompt: dataset: bad file: no prompt column "prompt" (columns: [question])`},
		{`[1]`, "d.jsonl: row 1: dataset: bad file: not a JSON object"},
		{`null`, "d.jsonl: row 1: dataset: bad file: not a JSON object: null"},
		{`{"prompt": [{"role": "user", "content": "x"}], "extra_info": {"index": 1.5}}`, "column extra_info.index: dataset: bad file: index must be an integer, got 1.5"},
		{`{"prompt": [{"role": "user", "content": "x"}], "extra_info": {"tools_kwargs": {"t": {"create_kwargs": 3}}}}`, "column extra_info.tools_kwargs.t.create_kwargs"},
		{`{"prompt": [{"role": "user", "content": "x"}], "tool_selection": [1]}`, "column tool_selection[0]"},
		{`{"prompt": [{"role": "user", "content": "x"}], "extra_info": []}`, "column extra_info: dataset: bad file: must be an object, got a list"},
	} {
		_, err := readJSONL(t, c.text, Options{})
		require.ErrorIs(t, err, ErrFormat, c.text)
		require.ErrorContains(t, err, c.want, c.text)
	}
	// A line over the limit is an error, not an allocation.
	_, err := readJSONL(t, `{"prompt": "`+strings.Repeat("x", 1000)+`"}`, Options{MaxRowBytes: 100})
	require.ErrorContains(t, err, "d.jsonl: row 1: dataset: bad file: line longer than 100 bytes")
	// A cancelled context stops the reader.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = NewJSONL(strings.NewReader(`{"prompt": [{"role": "user", "content": "x"}]}`), "d", Options{}).Next(ctx)
	require.ErrorIs(t, err, context.Canceled)
}

func TestOpenAndEach(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	require.NoError(t, os.WriteFile(a, []byte(`{"prompt": [{"role": "user", "content": "a"}]}`+"\n"), 0o644))
	got, err := ReadAll(context.Background(), Options{Limit: 3}, a, "testdata/gsm8k_duckdb.parquet")
	require.NoError(t, err)
	require.Len(t, got, 3)
	require.Equal(t, "a", got[0].Messages[0].Content)
	_, err = Open(filepath.Join(dir, "x.csv"), Options{})
	require.ErrorContains(t, err, "want a .jsonl or .parquet file")
	_, err = Open(filepath.Join(dir, "missing.parquet"), Options{})
	require.ErrorIs(t, err, os.ErrNotExist)
	stop := errors.New("stop")
	n := 0
	err = Each(context.Background(), Options{}, func(agentloop.Sample) error { n++; return stop }, "testdata/gsm8k_duckdb.parquet")
	require.ErrorIs(t, err, stop)
	require.Equal(t, 1, n)
}

func FuzzJSONL(f *testing.F) {
	f.Add(`{"prompt": [{"role": "user", "content": "2+2?"}], "extra_info": {"index": 7, "tools_kwargs": {"calc": {"create_kwargs": {"ground_truth": "4"}}}}}`)
	f.Add(`{"raw_prompt": "[{\"role\": \"user\", \"content\": \"hi\"}]", "uid": 3}` + "\n{}")
	f.Add(`{"prompt": [{"role": "user", "content": "<image>x<image>"}], "images": [{"bytes": "iVBORw0K", "path": null}, {"path": "a.png"}]}`)
	f.Add(`{"prompt": [{"role": "user", "content": "<video>"}], "images": ["a.png", {"image": 3}]}`)
	f.Fuzz(func(t *testing.T, text string) {
		got, err := readJSONL(t, text, Options{MaxRowBytes: 1 << 16})
		if err != nil {
			require.True(t, errors.Is(err, ErrFormat), err.Error())
			return
		}
		for _, s := range got {
			require.NotEmpty(t, s.Messages)
		}
	})
}
