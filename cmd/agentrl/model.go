package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/cuda/gguf"
	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/safetensors"
)

func init() {
	register("model", "create (init), describe (info), export (gguf) or pack (pack) an in-process engine model directory", runModel)
}

var modelSubcommands = []subcommand{
	{"init", "write a random-initialized model directory in HF format", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runModelInit(args, stdout, stderr)
	}},
	{"info", "describe a model directory's config", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runModelInfo(args, stdout, stderr)
	}},
	{"gguf", "export a llama, qwen2 or qwen3 model directory to GGUF (F32, BF16 or Q8_0)", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runModelGGUF(args, stdout, stderr)
	}},
	{"pack", "convert a model directory once into the CPU engine's own layout (int8, fp32, bf16 or bf16z), so it loads without converting", func(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) error {
		return runModelPack(args, stdout, stderr)
	}},
}

func runModel(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return runSubcommands(ctx, "model", modelSubcommands, args, stdin, stdout, stderr)
}

func runModelInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model init", stderr,
		"usage: agentrl model init --out DIR [--arch qwen3|qwen2|llama] [--layers L] [--hidden H] [--seed S] [--tokenizer DIR] [--force] [flags]",
		"Writes config.json and model.safetensors (and the tokenizer files of --tokenizer) to a new directory.",
		"An existing non-empty --out is refused; with --force a model directory there is replaced as a whole.")
	arch := fs.String("arch", "qwen3", "architecture: qwen3, qwen2 or llama")
	layers := fs.Int("layers", 2, "number of decoder layers")
	hidden := fs.Int("hidden", 64, "hidden size")
	inter := fs.Int("intermediate", 0, "MLP intermediate size (default 3×hidden)")
	heads := fs.Int("heads", 4, "attention heads")
	kvHeads := fs.Int("kv-heads", 0, "key/value heads (default = heads)")
	headDim := fs.Int("head-dim", 0, "head dimension (default hidden/heads)")
	vocab := fs.Int("vocab", 0, "vocabulary size (default: from --tokenizer, else 256)")
	maxPos := fs.Int("max-pos", 4096, "max_position_embeddings (context length)")
	theta := fs.Float64("rope-theta", 1e6, "rope_theta")
	eps := fs.Float64("rms-eps", 1e-6, "rms_norm_eps")
	tie := fs.Bool("tie", false, "tie the output projection to the embedding")
	bias := fs.Bool("attention-bias", false, "llama only: bias on q, k, v and o projections")
	llama3Rope := fs.Float64("llama3-rope-factor", 0, "if > 0: Llama-3.1 rope_scaling with this factor (low 1, high 4, original context 8192)")
	seed := fs.Uint64("seed", 0, "random seed: the same flags and seed give the same weights")
	out := fs.String("out", "", "output directory (required)")
	tok := fs.String("tokenizer", "", "directory with tokenizer.json (and tokenizer_config.json) to copy into the model")
	force := fs.Bool("force", false, "replace an existing model directory at --out as a whole (old weights and tokenizer files go)")
	dtype := fs.String("dtype", "f32", "checkpoint element type: f32 or bf16 (rounded to nearest even, like torch)")
	shard := fs.Int64("shard-size", 0, "if > 0: write shards of at most this many bytes plus model.safetensors.index.json")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
	var opts model.WriteOptions
	switch strings.ToLower(*dtype) {
	case "f32", "fp32", "float32":
		opts.DType = safetensors.F32
	case "bf16", "bfloat16":
		opts.DType = safetensors.BF16
	default:
		return fmt.Errorf("--dtype %q: want f32 or bf16", *dtype)
	}
	opts.ShardBytes = *shard
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg := &model.Config{
		ModelType: *arch, NumHiddenLayers: *layers, HiddenSize: *hidden, IntermediateSize: *inter,
		NumAttentionHeads: *heads, NumKeyValueHeads: *kvHeads, HeadDim: *headDim, VocabSize: *vocab,
		MaxPositionEmbeddings: *maxPos, RopeTheta: *theta, RMSNormEps: *eps, TieWordEmbeddings: *tie,
		AttentionBias: *bias,
	}
	if *llama3Rope > 0 {
		cfg.RopeScaling = &model.RopeScaling{RopeType: "llama3", Factor: *llama3Rope, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 8192}
	}
	if *bias && *arch != model.Llama {
		return fmt.Errorf("--attention-bias applies to llama only (qwen2 always has q/k/v bias, qwen3 none)")
	}
	if cfg.IntermediateSize == 0 {
		cfg.IntermediateSize = 3 * cfg.HiddenSize
	}
	if cfg.NumKeyValueHeads == 0 {
		cfg.NumKeyValueHeads = cfg.NumAttentionHeads
	}
	if cfg.HeadDim == 0 && cfg.NumAttentionHeads > 0 {
		cfg.HeadDim = cfg.HiddenSize / cfg.NumAttentionHeads
	}
	var files []string
	if *tok != "" {
		n, bos, eos, fs, err := readTokenizerInfo(*tok)
		if err != nil {
			return err
		}
		files = fs
		if cfg.VocabSize == 0 {
			cfg.VocabSize = n
		} else if cfg.VocabSize < n {
			return fmt.Errorf("--vocab %d is smaller than the tokenizer's %d ids", cfg.VocabSize, n)
		}
		if bos >= 0 {
			cfg.BOSTokenID = bos
		}
		if eos >= 0 {
			cfg.EOSTokenID = eos
		}
	}
	if cfg.VocabSize == 0 {
		cfg.VocabSize = 256
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := replaceDir(*out, *force, func(dir string) error {
		if err := model.WriteRandomDir(dir, cfg, *seed, opts); err != nil {
			return err
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(*tok, f))
			if err != nil {
				return fmt.Errorf("--tokenizer: %w", err)
			}
			if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d layers, hidden %d, vocab %d, %.2fM parameters, %s\n",
		*out, cfg.ModelType, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.VocabSize, float64(cfg.NumParams())/1e6, opts.DType)
	return nil
}

// readTokenizerInfo returns the number of token ids a tokenizer.json
// defines (largest id + 1), the bos/eos ids named by tokenizer_config.json
// (-1 if none), and the tokenizer files present to copy.
func readTokenizerInfo(dir string) (n, bos, eos int, files []string, err error) {
	b, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return 0, -1, -1, nil, fmt.Errorf("--tokenizer: %w", err)
	}
	var tj struct {
		Model struct {
			Vocab json.RawMessage `json:"vocab"`
		} `json:"model"`
		AddedTokens []struct {
			ID      int    `json:"id"`
			Content string `json:"content"`
		} `json:"added_tokens"`
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		return 0, -1, -1, nil, fmt.Errorf("--tokenizer: tokenizer.json: %w", err)
	}
	ids := map[string]int{}
	var vocab map[string]int
	if err := json.Unmarshal(tj.Model.Vocab, &vocab); err != nil {
		return 0, -1, -1, nil, fmt.Errorf("--tokenizer: tokenizer.json model.vocab is not a BPE/WordPiece token→id map: %w", err)
	}
	for tok, id := range vocab {
		ids[tok] = id
		n = max(n, id+1)
	}
	for _, a := range tj.AddedTokens {
		ids[a.Content] = a.ID
		n = max(n, a.ID+1)
	}
	files = []string{"tokenizer.json"}
	bos, eos = -1, -1
	for _, extra := range []string{"tokenizer_config.json", "special_tokens_map.json", "generation_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, extra)); err == nil {
			files = append(files, extra)
		}
	}
	if cb, err := os.ReadFile(filepath.Join(dir, "tokenizer_config.json")); err == nil {
		var tc map[string]any
		if json.Unmarshal(cb, &tc) == nil {
			lookup := func(key string) int {
				switch v := tc[key].(type) {
				case string:
					if id, ok := ids[v]; ok {
						return id
					}
				case map[string]any:
					if s, ok := v["content"].(string); ok {
						if id, ok := ids[s]; ok {
							return id
						}
					}
				}
				return -1
			}
			bos, eos = lookup("bos_token"), lookup("eos_token")
		}
	}
	return n, bos, eos, files, nil
}

func runModelInfo(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model info", stderr, "usage: agentrl model info --model DIR",
		"Prints the architecture, sizes and parameter count from DIR/config.json.")
	dir := fs.String("model", "", "model directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--model is required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg, err := model.LoadConfig(filepath.Join(*dir, "config.json"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %s, %d layers, hidden %d, heads %d/%d (head_dim %d), intermediate %d, vocab %d, context %d, tied %v, %.2fM parameters\n",
		*dir, cfg.ModelType, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim,
		cfg.IntermediateSize, cfg.VocabSize, cfg.MaxPositionEmbeddings, cfg.TieWordEmbeddings, float64(cfg.NumParams())/1e6)
	return nil
}

// runModelGGUF exports a model directory (llama, qwen2, qwen3) to GGUF,
// F32, BF16 or Q8_0, for side-by-side measurements with llama.cpp.
func runModelGGUF(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model gguf", stderr, "usage: agentrl model gguf --model DIR --out FILE.gguf [--dtype f32|bf16|q8_0]",
		"Exports a llama, qwen2 or qwen3 model directory as GGUF, matrices F32, BF16 or Q8_0 (for llama.cpp comparisons).",
		"The file appears only when the export succeeded.")
	dir := fs.String("model", "", "model directory: llama, qwen2 or qwen3 (required)")
	out := fs.String("out", "", "output .gguf file (required)")
	dtype := fs.String("dtype", "f32", "matrix element type: f32, bf16 or q8_0 (the values of the engine's --weights int8; vectors stay F32, as llama.cpp's converter writes them)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *out == "" {
		return errors.New("--model and --out are required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var dt gguf.DType
	switch strings.ToLower(*dtype) {
	case "f32", "fp32", "float32":
		dt = gguf.F32
	case "bf16", "bfloat16":
		dt = gguf.BF16
	case "q8_0", "int8":
		dt = gguf.Q8_0
	default:
		return fmt.Errorf("--dtype %q: want f32, bf16 or q8_0", *dtype)
	}
	// Write next to the target and rename: a failed export (an unsupported
	// model, a full disk) must not leave a truncated or empty .gguf that a
	// later llama.cpp run would pick up.
	tmp, err := os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".*.tmp")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	tmpName := tmp.Name()
	tmp.Close()
	if err := gguf.WriteFile(tmpName, *dir, dt); err != nil {
		os.Remove(tmpName)
		return err
	}
	if err := os.Rename(tmpName, *out); err != nil {
		os.Remove(tmpName)
		return fmt.Errorf("--out: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

// replaceDir builds a directory with write in a temporary directory next
// to out and then moves it to out, so out never holds a mix of an old and
// a new model (new weights beside an old tokenizer) and a failed write
// leaves nothing behind. An existing empty out is replaced; a non-empty one
// only with force, and only if it is a model directory (has config.json),
// so --force cannot wipe an unrelated directory given by mistake.
func replaceDir(out string, force bool, write func(dir string) error) error {
	out = filepath.Clean(out)
	existing, err := os.ReadDir(out)
	exists := err == nil
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return fmt.Errorf("--out: %w", err)
	}
	replace := len(existing) > 0
	if replace {
		if !force {
			return fmt.Errorf("--out %s already exists and is not empty; pass --force to replace the model there (weights, config and tokenizer files)", out)
		}
		if _, err := os.Stat(filepath.Join(out, "config.json")); err != nil {
			return fmt.Errorf("--out %s is not empty and has no config.json: not a model directory, refusing to replace it even with --force", out)
		}
	}
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".new-*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; cleans up after a failure
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := write(tmp); err != nil {
		return err
	}
	if !replace {
		if exists { // empty: os.Rename does not replace directories
			if err := os.Remove(out); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
		}
		if err := os.Rename(tmp, out); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
		return nil
	}
	old, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".old-*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	oldDir := filepath.Join(old, "model")
	if err := os.Rename(out, oldDir); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		// Put the old model back rather than leave nothing.
		if rerr := os.Rename(oldDir, out); rerr != nil {
			return fmt.Errorf("--out: %w (and restoring the old model from %s failed: %v)", err, oldDir, rerr)
		}
		os.Remove(old)
		return fmt.Errorf("--out: %w", err)
	}
	if err := os.RemoveAll(old); err != nil {
		return fmt.Errorf("--out: removing the replaced model: %w", err)
	}
	return nil
}

func runModelPack(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("model pack", stderr, "usage: agentrl model pack --model DIR --out DIR [--weights int8|fp32|bf16|bf16z] [--force]",
		"Loads a model directory as the CPU engine stores it (int8: llama.cpp's Q8_0 values, quantized here;",
		"fp32: packed panels, of bf16 values in half the bytes when the checkpoint is bf16; bf16; bf16z: bf16 values compressed losslessly, compressed here) and writes it in that layout, with the directory's config and tokenizer,",
		"so that loading it converts nothing (bench engine, serve and cuda.Open use it in place unless told to copy).")
	dir := fs.String("model", "", "source model directory: a Hugging Face checkpoint (required)")
	out := fs.String("out", "", "output model directory (required)")
	weights := fs.String("weights", "int8", "how the engine stores the matrices: int8, fp32, bf16 or bf16z")
	force := fs.Bool("force", false, "replace an existing model directory at --out")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *out == "" {
		return errors.New("--model and --out are required")
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	wt, err := model.ParseWeightType(*weights)
	if err != nil || wt == model.WeightsAuto {
		return fmt.Errorf("--weights %q: want int8, fp32, bf16 or bf16z", *weights)
	}
	if filepath.Clean(*dir) == filepath.Clean(*out) {
		return errors.New("--out must differ from --model")
	}
	m, err := model.LoadWith(*dir, kernels.NewCPU(0), model.LoadOptions{Weights: wt})
	if err != nil {
		return err
	}
	err = replaceDir(*out, *force, func(tmp string) error {
		if err := copyModelFiles(*dir, tmp); err != nil {
			return err
		}
		return m.WritePacked(filepath.Join(tmp, safetensors.SingleFile))
	})
	if err != nil {
		return err
	}
	st, err := os.Stat(filepath.Join(*out, safetensors.SingleFile))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %s weights packed for the CPU engine (%.0f MB)\n", *out, wt, float64(st.Size())/1e6)
	return nil
}

// copyModelFiles copies the files of model directory src other than its
// weights (config.json, tokenizer and generation files) into dst.
func copyModelFiles(src, dst string) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || strings.HasSuffix(name, ".safetensors") || name == safetensors.IndexFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			return fmt.Errorf("--model: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), b, 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	return nil
}
