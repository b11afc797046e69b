package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/trajectory"
)

// The view command turns a demo rollout into a report: one row and one
// section per trajectory, tokens decoded with the model's tokenizer.
func TestViewReport(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	in, out := filepath.Join(dir, "demo.jsonl"), filepath.Join(dir, "report.html")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"demo", "-n", "3", "-out", in}, nil, &stdout, &stderr), stderr.String())
	stderr.Reset()
	tok := filepath.Join("..", "..", "internal", "arith", "checkpoint")
	require.Equal(t, 0, runMain(context.Background(), []string{"view", in, "--tokenizer", tok, "--out", out}, nil, &stdout, &stderr), stderr.String())
	require.Contains(t, stderr.String(), "(3 trajectories)")
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	html := string(b)
	require.Equal(t, 3, strings.Count(html, `<section class="traj"`))
	require.Equal(t, 3, strings.Count(html, `<tr class="row"`))
	require.Contains(t, html, "&lt;tool_call&gt;", "decoded text, escaped")
	require.Contains(t, html, `class="tok policy`)
	require.Contains(t, html, `class="tok observation`)

	// Flags before the file, and stdout.
	stdout.Reset()
	require.Equal(t, 0, runMain(context.Background(), []string{"view", "--out", "-", in}, nil, &stdout, &stderr), stderr.String())
	require.Contains(t, stdout.String(), "⟨")
}

func TestViewErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "t.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(`{"prompt_ids":[1],"response_ids":[2,3],"response_mask":[1]}`+"\n"), 0o644))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"view"}, "want exactly one trajectories JSONL file"},
		{[]string{"view", in, "extra.jsonl"}, "want exactly one"},
		{[]string{"view", in, "--out", filepath.Join(dir, "r.html")}, "line 1: response_mask: length 1, response_ids has 2"},
		{[]string{"view", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"view", in, "--serve", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"view", in, "--serve", ":8080"}, "not a loopback address"},
		{[]string{"view", in, "--serve", "nonsense"}, "--serve"},
		{[]string{"view", in, "--batch", filepath.Join(dir, "none.safetensors")}, "none.safetensors"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 1, runMain(context.Background(), c.args, nil, &stdout, &stderr), "%v", c.args)
		require.Contains(t, stderr.String(), c.want, "%v", c.args)
	}
}

// --batch: the collated batch agrees with the trajectories, so nothing is
// flagged; a batch whose mask was corrupted gets its positions marked.
func TestViewBatch(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "demo.jsonl")
	var stdout, stderr bytes.Buffer
	require.Equal(t, 0, runMain(context.Background(), []string{"demo", "-n", "2", "-out", in}, nil, &stdout, &stderr), stderr.String())
	f, err := os.Open(in)
	require.NoError(t, err)
	trajs, err := trajectory.ReadJSONL(f)
	f.Close()
	require.NoError(t, err)
	b, err := trajectory.Collate(trajs, trajectory.CollateOptions{PromptLen: 256, ResponseLen: 128})
	require.NoError(t, err)
	for _, c := range []struct {
		corrupt bool
		want    string
	}{{false, ""}, {true, "disagrees with the trajectory at 1 response positions"}} {
		if c.corrupt {
			b.ResponseMask[1*b.ResponseLen+0] ^= 1 // row 1, first response token
		}
		batch := filepath.Join(dir, "batch.safetensors")
		bf, err := os.Create(batch)
		require.NoError(t, err)
		require.NoError(t, b.WriteSafetensors(bf))
		require.NoError(t, bf.Close())
		stdout.Reset()
		require.Equal(t, 0, runMain(context.Background(), []string{"view", in, "--batch", batch, "--out", "-"}, nil, &stdout, &stderr), stderr.String())
		html := stdout.String()
		require.True(t, strings.Contains(html, "reward 1 @ response token"), "the reward's column from the batch")
		if c.want == "" {
			require.False(t, strings.Contains(html, "disagrees with the trajectory"), "a consistent batch is flagged")
			require.False(t, strings.Contains(html, ` mm" data-pos=`), "a consistent batch is flagged")
		} else {
			require.True(t, strings.Contains(html, c.want), "no finding %q", c.want)
			require.Equal(t, 1, strings.Count(html, ` mm" data-pos="0"`))
		}
	}
}

// view --serve: the file is served page by page on loopback until the
// context ends.
func TestViewServe(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	in, err := filepath.Abs(filepath.Join("..", "..", "view", "testdata", "demo.jsonl"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncbuf.Buffer
	code := make(chan int, 1)
	go func() {
		code <- runMain(ctx, []string{"view", in, "--serve", "127.0.0.1:0", "--tokenizer", arithCheckpoint}, nil, &stdout, &stderr)
	}()
	base := waitURL(t, &stderr, regexp.MustCompile(`serving 12 trajectories on (http://127\.0\.0\.1:\d+/)`), &stderr)
	rows := scrapeText(t, base+"api/rows?limit=5&sort=length&desc=1")
	require.Contains(t, rows, `"total":12`)
	detail := scrapeText(t, base+"api/detail?n=3")
	require.Contains(t, detail, "&lt;tool_call&gt;")
	cancel()
	require.Equal(t, 0, <-code, stderr.String())
}
