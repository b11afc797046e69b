package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/stretchr/testify/require"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := runMain(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestModelInit(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	args := []string{"model", "init", "--arch", "qwen2", "--layers", "2", "--hidden", "32", "--heads", "4", "--kv-heads", "2",
		"--vocab", "100", "--max-pos", "64", "--tie", "--seed", "5"}
	code, out, errOut := runCmd(t, append(args, "--out", a)...)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "qwen2, 2 layers, hidden 32, vocab 100")
	code, _, errOut = runCmd(t, append(args, "--out", b)...)
	require.Equal(t, 0, code, errOut)

	// Same flags and seed: byte-identical checkpoints.
	wa, err := os.ReadFile(filepath.Join(a, "model.safetensors"))
	require.NoError(t, err)
	wb, err := os.ReadFile(filepath.Join(b, "model.safetensors"))
	require.NoError(t, err)
	require.Equal(t, wa, wb)

	m, err := model.Load(a, nil)
	require.NoError(t, err)
	cfg := m.Config()
	require.Equal(t, model.Qwen2, cfg.ModelType)
	require.True(t, cfg.TieWordEmbeddings)
	require.Equal(t, 2, cfg.NumKeyValueHeads)
	require.Equal(t, 96, cfg.IntermediateSize)
	require.True(t, cfg.QKVBias())

	code, out, errOut = runCmd(t, "model", "info", "--model", a)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "heads 4/2 (head_dim 8)")
}

func TestModelInitTokenizer(t *testing.T) {
	tok := filepath.Join("..", "..", "..", "shared", "testdata", "tokenizers", "qwen3")
	if _, err := os.Stat(filepath.Join(tok, "tokenizer.json")); err != nil {
		t.Skip("shared Qwen3 tokenizer not present")
	}
	dir := filepath.Join(t.TempDir(), "m")
	code, _, errOut := runCmd(t, "model", "init", "--arch", "qwen3", "--layers", "1", "--hidden", "16", "--heads", "2",
		"--tokenizer", tok, "--out", dir)
	require.Equal(t, 0, code, errOut)
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.Equal(t, 151669, cfg.VocabSize) // largest added-token id + 1
	require.EqualValues(t, 151645, cfg.EOSTokenID)
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		require.FileExists(t, filepath.Join(dir, f))
	}
	code, _, errOut = runCmd(t, "model", "init", "--arch", "qwen3", "--vocab", "1000", "--tokenizer", tok, "--out", dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "smaller than the tokenizer's 151669 ids")
}

func TestModelInitErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"model"}, "usage"},
		{[]string{"model", "frob"}, `unknown model subcommand "frob"`},
		{[]string{"model", "init"}, "--out is required"},
		{[]string{"model", "init", "--arch", "gpt2", "--out", "x"}, `model_type "gpt2" not supported`},
		{[]string{"model", "init", "--heads", "3", "--kv-heads", "2", "--hidden", "24", "--out", "x"}, "not a multiple"},
		{[]string{"model", "init", "--arch", "qwen3", "--attention-bias", "--out", "x"}, "llama only"},
		{[]string{"model", "info"}, "--model is required"},
		{[]string{"model", "info", "--model", "does-not-exist"}, "no such file"},
	}
	for _, tt := range tests {
		code, _, errOut := runCmd(t, tt.args...)
		require.Equal(t, 1, code, tt.args)
		require.Contains(t, errOut, tt.want, tt.args)
	}
}

func TestBenchEngine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	code, _, errOut := runCmd(t, "model", "init", "--arch", "llama", "--layers", "1", "--hidden", "32", "--heads", "2",
		"--vocab", "64", "--max-pos", "512", "--out", dir)
	require.Equal(t, 0, code, errOut)
	code, out, errOut := runCmd(t, "bench", "engine", "--model", dir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576")
	require.Equal(t, 0, code, errOut)
	for _, row := range []string{"memory bandwidth", "FMA peak", "GEMM kernel", "batch-1 decode", "prefill 16 tokens", "aggregate decode, 2 sequences", "multi-turn prefix cache", "model load", "peak RSS after load"} {
		require.Contains(t, out, row)
	}
	require.Contains(t, out, "fp32 weights")
	// No rate or ratio is negative: on a model this small the decode rows
	// used to subtract the times of two runs whose noise outweighed their
	// difference ("-13953.4 tok/s", "-10.32×").
	require.NotRegexp(t, `[\s(]-[0-9]`, out)
	code, out, errOut = runCmd(t, "bench", "engine", "--model", dir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576", "--weights", "bf16", "--kv-memory", "1048576")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "bf16 weights")
	require.Contains(t, out, "batch-1 decode")
	code, out, errOut = runCmd(t, "bench", "engine", "--model", dir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576", "--weights", "int8", "--kv-memory", "1048576")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "int8 weights")
	require.Contains(t, out, "batch-1 decode")
	// Decode over a long context, on a bf16 cache, the aggregate decode's
	// sequences sampling one prompt.
	code, out, errOut = runCmd(t, "bench", "engine", "--model", dir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "3", "--bandwidth-bytes", "1048576", "--kv-cache", "bf16",
		"--context", "100", "--shared-context")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "aggregate decode, 3 sequences, samples of one 100-token prompt")
	code, _, errOut = runCmd(t, "bench", "engine", "--model", dir, "--kv-cache", "fp16")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--kv-cache: model: bad input: unknown KV cache type "fp16" (want fp32 or bf16)`)
	// A bf16 checkpoint is served from its mapping by default, copied
	// with --copy.
	bfDir := filepath.Join(t.TempDir(), "bf")
	code, _, errOut = runCmd(t, "model", "init", "--arch", "qwen3", "--layers", "1", "--hidden", "32", "--heads", "2",
		"--vocab", "64", "--max-pos", "512", "--dtype", "bf16", "--out", bfDir)
	require.Equal(t, 0, code, errOut)
	code, out, errOut = runCmd(t, "bench", "engine", "--model", bfDir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576", "--kv-memory", "1048576")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "bf16 weights mapped from the checkpoint")
	require.Contains(t, out, "batch-1 decode")
	code, out, errOut = runCmd(t, "bench", "engine", "--model", bfDir, "--reps", "1", "--decode-tokens", "4",
		"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576", "--copy", "--kv-memory", "1048576")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "bf16 weights), ")
	require.NotContains(t, out, "mapped")
	code, _, errOut = runCmd(t, "bench", "engine", "--model", dir, "--weights", "int2")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--weights")
	// The probe alone, in the line bench engine prints (the peer harness
	// measures it around llama.cpp's runs).
	code, out, errOut = runCmd(t, "bench", "bandwidth", "--bytes", "1048576", "--reps", "1", "--threads", "2")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^memory bandwidth \(read, all threads\)\t[1-9][\d.]* GB/s\t2 threads, 1 MB, median of 1\n$`, out)
	code, _, errOut = runCmd(t, "bench", "bandwidth", "--bytes", "1000")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--bytes")
	code, _, errOut = runCmd(t, "bench", "engine")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--model is required")

	// bench batch1 answers each request line with one measurement, for
	// interleave.mjs; it stops at quit, and an unknown request is an error.
	batch1 := func(in string, args ...string) (int, string, string) {
		var o, e bytes.Buffer
		c := runMain(context.Background(), append([]string{"bench", "batch1", "--model", bfDir, "--decode-tokens", "4",
			"--kv-memory", "1048576"}, args...), strings.NewReader(in), &o, &e)
		return c, o.String(), e.String()
	}
	code, out, errOut = batch1("decode\n\nquit\ndecode\n")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^ready\nbatch1 [1-9][\d.]* tok/s\nbatch1 [1-9][\d.]* tok/s\n$`, out)
	code, out, errOut = batch1("decode", "--weights", "bf16z")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^ready\nbatch1 [1-9][\d.]* tok/s\n$`, out)
	// After a long prompt, computed once, on a bf16 cache.
	code, out, errOut = batch1("decode\ndecode\n", "--context", "300", "--reuse-prompt", "--kv-cache", "bf16")
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `^ready\nbatch1 [1-9][\d.]* tok/s\nbatch1 [1-9][\d.]* tok/s\n$`, out)
	code, out, errOut = batch1("decode\nprefill\n")
	require.Equal(t, 1, code)
	require.Regexp(t, `^ready\nbatch1 [\d.]+ tok/s\n$`, out)
	require.Contains(t, errOut, `input line 2: unknown command "prefill"`)
	code, _, errOut = batch1("", "--decode-tokens", "1")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--decode-tokens")

	// A driver that gives up (SIGTERM: the context ends) ends it while it
	// waits for its next line.
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var e bytes.Buffer
	res := make(chan int, 1)
	go func() {
		res <- runMain(ctx, []string{"bench", "batch1", "--model", bfDir, "--kv-memory", "1048576"}, inR, outW, &e)
		outW.Close()
	}()
	ready, err := bufio.NewReader(outR).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", ready)
	cancel()
	require.Equal(t, 1, <-res)
	require.Contains(t, e.String(), "context canceled")
	require.NoError(t, inW.Close()) // the input's reader ends with it
}

// TestModelInitBF16 writes a sharded bf16 checkpoint and exports it to a
// BF16 GGUF.
func TestModelInitBF16(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	code, out, errOut := runCmd(t, "model", "init", "--arch", "qwen3", "--layers", "2", "--hidden", "32", "--heads", "4",
		"--head-dim", "16", "--vocab", "100", "--tie", "--dtype", "bf16", "--shard-size", "20000", "--out", dir)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "BF16")
	require.FileExists(t, filepath.Join(dir, "model.safetensors.index.json"))
	shards, err := filepath.Glob(filepath.Join(dir, "model-0000*-of-0000*.safetensors"))
	require.NoError(t, err)
	require.Greater(t, len(shards), 1)
	cfg, err := model.LoadConfig(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	require.Equal(t, "bfloat16", cfg.TorchDType)

	g := filepath.Join(t.TempDir(), "m.gguf")
	code, out, errOut = runCmd(t, "model", "gguf", "--model", dir, "--dtype", "bf16", "--out", g)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "wrote")
	b, err := os.ReadFile(g)
	require.NoError(t, err)
	require.Equal(t, "GGUF", string(b[:4]))
	require.Contains(t, string(b[:4096]), "qwen3.attention.key_length")
	q8 := filepath.Join(t.TempDir(), "m-q8_0.gguf")
	code, _, errOut = runCmd(t, "model", "gguf", "--model", dir, "--dtype", "q8_0", "--out", q8)
	require.Equal(t, 0, code, errOut)
	st, err := os.Stat(q8)
	require.NoError(t, err)
	require.Less(t, st.Size(), int64(len(b))) // 34/32 bytes a matrix weight against bf16's 2

	code, _, errOut = runCmd(t, "model", "init", "--dtype", "f16", "--out", dir)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--dtype "f16": want f32 or bf16`)
	code, _, errOut = runCmd(t, "model", "gguf", "--model", dir, "--dtype", "q4", "--out", g)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--dtype "q4"`)
}

// TestModelPack packs a bf16 checkpoint as int8, fp32 and bf16z; the packed
// directories keep the config and tokenizer files and load, mapped, with
// nothing converted.
func TestModelPack(t *testing.T) {
	src := filepath.Join(t.TempDir(), "m")
	code, _, errOut := runCmd(t, "model", "init", "--arch", "qwen3", "--layers", "1", "--hidden", "32", "--heads", "2",
		"--vocab", "64", "--max-pos", "512", "--dtype", "bf16", "--shard-size", "20000", "--out", src)
	require.Equal(t, 0, code, errOut)
	require.NoError(t, os.WriteFile(filepath.Join(src, "tokenizer_config.json"), []byte(`{}`), 0o644))
	for _, wt := range []string{"int8", "fp32", "bf16z"} {
		out := filepath.Join(t.TempDir(), "packed")
		code, stdout, errOut := runCmd(t, "model", "pack", "--model", src, "--weights", wt, "--out", out)
		require.Equal(t, 0, code, errOut)
		require.Contains(t, stdout, wt+" weights packed for the CPU engine")
		require.FileExists(t, filepath.Join(out, "config.json"))
		require.FileExists(t, filepath.Join(out, "tokenizer_config.json"))
		require.NoFileExists(t, filepath.Join(out, safetensors.IndexFile))
		code, stdout, errOut = runCmd(t, "bench", "engine", "--model", out, "--reps", "1", "--decode-tokens", "4",
			"--prefill-tokens", "16", "--concurrency", "2", "--bandwidth-bytes", "1048576", "--kv-memory", "1048576")
		require.Equal(t, 0, code, errOut)
		require.Contains(t, stdout, wt+" weights mapped from the checkpoint")
		// An existing model directory is replaced only with --force.
		code, _, errOut = runCmd(t, "model", "pack", "--model", src, "--weights", wt, "--out", out)
		require.Equal(t, 1, code)
		require.Contains(t, errOut, "--force")
		code, _, errOut = runCmd(t, "model", "pack", "--model", src, "--weights", wt, "--out", out, "--force")
		require.Equal(t, 0, code, errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"model", "pack", "--out", "x"}, "--model and --out are required"},
		{[]string{"model", "pack", "--model", src, "--out", src}, "--out must differ"},
		{[]string{"model", "pack", "--model", src, "--out", "x", "--weights", "auto"}, "want int8, fp32, bf16 or bf16z"},
		{[]string{"model", "pack", "--model", "does-not-exist", "--out", filepath.Join(t.TempDir(), "x")}, "no such file"},
	} {
		code, _, errOut := runCmd(t, tt.args...)
		require.Equal(t, 1, code, tt.args)
		require.Contains(t, errOut, tt.want, tt.args)
	}
}
