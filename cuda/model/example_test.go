package model_test

import (
	"fmt"
	"os"

	"github.com/agentrl/agentrl/cuda/model"
)

// Example is the package doc's snippet: load a Hugging Face model
// directory (here a random tiny Qwen3 written first), then one forward
// pass over a prompt in a paged KV cache gives the next token's logits.
func Example() {
	dir, err := os.MkdirTemp("", "model-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 50, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositionEmbeddings: 64}
	if err := model.WriteDir(dir, cfg, model.RandomWeights(cfg, 3)); err != nil {
		fmt.Println(err)
		return
	}

	m, err := model.Load(dir, nil) // nil: all cores, best ISA
	if err != nil {
		fmt.Println(err)
		return
	}
	defer m.Close()
	kv := m.NewKVCache(8, 16) // 8 blocks of 16 positions
	prompt := []int32{1, 2, 3, 4, 5}
	logits, err := m.Forward(kv, []model.Seq{{Tokens: prompt, Blocks: []int32{0}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(logits), "sequence,", len(logits[0]), "logits (the vocabulary)")
	// Output: 1 sequence, 50 logits (the vocabulary)
}

// ExampleModel_NewKVCacheBF16: a bf16 KV cache holds twice the positions
// of an fp32 one in the same memory; the same prompt's greedy next token
// comes out the same on both here (the logits move by the keys' and
// values' bf16 rounding).
func ExampleModel_NewKVCacheBF16() {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 50, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 16, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositionEmbeddings: 64}
	m, err := model.NewRandom(cfg, 3, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	kv, err := m.NewKVCacheBF16(8, 16)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(kv.Type(), "cache:", cfg.BytesPerBlock(model.KVBF16, 16), "bytes a block, fp32:", cfg.BytesPerBlock(model.KVF32, 16))
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	var next [2]int
	for i, kv := range []*model.KVCache{kv, m.NewKVCache(8, 16)} {
		logits, err := m.Forward(kv, []model.Seq{{Tokens: prompt, Blocks: []int32{0}}})
		if err != nil {
			fmt.Println(err)
			return
		}
		for j, x := range logits[0] {
			if x > logits[0][next[i]] {
				next[i] = j
			}
		}
	}
	fmt.Println("same next token:", next[0] == next[1])
	// Output:
	// bf16 cache: 4096 bytes a block, fp32: 8192
	// same next token: true
}
