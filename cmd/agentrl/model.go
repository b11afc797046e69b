package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/agentrl/agentrl/cuda/gguf"
	"github.com/agentrl/agentrl/cuda/model"
)

func init() {
	register("model", "create (init) or describe (info) an in-process engine model directory", runModel)
}

func runModel(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: agentrl model init|info|gguf [flags]")
	}
	switch args[0] {
	case "init":
		return runModelInit(args[1:], stdout, stderr)
	case "info":
		return runModelInfo(args[1:], stdout, stderr)
	case "gguf":
		return runModelGGUF(args[1:], stdout, stderr)
	}
	return fmt.Errorf("unknown model subcommand %q (want init, info or gguf)", args[0])
}

func runModelInit(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model init", flag.ContinueOnError)
	fs.SetOutput(stderr)
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("--out is required")
	}
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
	if err := model.WriteDir(*out, cfg, model.RandomWeights(cfg, *seed)); err != nil {
		return err
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(*tok, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(*out, f), b, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "wrote %s: %s, %d layers, hidden %d, vocab %d, %.2fM parameters\n",
		*out, cfg.ModelType, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.VocabSize, float64(cfg.NumParams())/1e6)
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
	fs := flag.NewFlagSet("model info", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("model", "", "model directory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" {
		return errors.New("--model is required")
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

// runModelGGUF exports a Llama model directory to GGUF (F32) for
// side-by-side measurements with llama.cpp.
func runModelGGUF(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("model gguf", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("model", "", "Llama model directory (required)")
	out := fs.String("out", "", "output .gguf file (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *out == "" {
		return errors.New("--model and --out are required")
	}
	if err := gguf.WriteFile(*out, *dir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
