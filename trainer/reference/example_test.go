package reference_test

import (
	"fmt"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/cuda/train"
	"github.com/agentrl/agentrl/trainer/reference"
	"github.com/agentrl/agentrl/trajectory"
)

// SFT on one tool-use trajectory: the model's tokens (mask 1) are learned,
// the tool's output (mask 0) is only context.
func Example() {
	cfg := &model.Config{ModelType: model.Llama, VocabSize: 32, HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 2, HeadDim: 8,
		RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 64}
	m, err := train.New(cfg, model.RandomWeights(cfg, 1), train.Options{})
	if err != nil {
		panic(err)
	}
	tr, err := reference.New(m, reference.Config{
		AdamW:       reference.AdamWConfig{LR: 1e-2, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8},
		MaxGradNorm: 1,
	})
	if err != nil {
		panic(err)
	}
	b := trajectory.NewBuilder([]int32{1, 5, 6})
	_ = b.AppendModel([]int32{20, 21, 2}, nil) // the model's tool call
	_ = b.AppendObservation([]int32{7, 9, 9})  // the tool's answer
	_ = b.AppendModel([]int32{22, 2}, nil)     // the model's final answer
	batch, err := trajectory.Collate([]*trajectory.Trajectory{b.Build()},
		trajectory.CollateOptions{PromptLen: 4, ResponseLen: 8})
	if err != nil {
		panic(err)
	}
	first, _ := tr.SFTStep(batch)
	for range 20 {
		if _, err := tr.SFTStep(batch); err != nil {
			panic(err)
		}
	}
	last, _ := tr.EvalSFT(batch)
	fmt.Println("trained tokens:", first.Tokens)
	fmt.Println("loss decreased:", last < first.Loss/2)
	// Output:
	// trained tokens: 5
	// loss decreased: true
}
