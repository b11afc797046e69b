package tokenizertest

import (
	"fmt"
	"os"
	"sync"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/bpetrain"
)

// Qwen returns the small Qwen-format tokenizer (see the package doc). It
// is built once per process; the *tokenizer.Tokenizer is immutable and
// safe for concurrent use, so every caller shares it.
func Qwen() (*tokenizer.Tokenizer, error) { return qwen() }

var qwen = sync.OnceValues(func() (*tokenizer.Tokenizer, error) {
	t, err := build()
	if err != nil {
		return nil, fmt.Errorf("tokenizertest: %w", err)
	}
	return t, nil
})

// build trains the merge-free tokenizer and loads it through
// tokenizer.Load, the way a model directory is read (the files go through
// a temporary directory: Load reads a directory, and the config file
// carries the chat template).
func build() (*tokenizer.Tokenizer, error) {
	bpe, err := bpetrain.Train(nil, bpetrain.Options{VocabSize: 256})
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "tokenizertest-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := bpe.WriteDir(dir); err != nil {
		return nil, err
	}
	return tokenizer.Load(dir)
}
