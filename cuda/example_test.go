package cuda_test

import (
	"context"
	"fmt"

	"github.com/agentrl/agentrl/cuda"
	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/server"
)

func Example() {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 100, HiddenSize: 32, IntermediateSize: 64,
		NumHiddenLayers: 2, NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 8, RMSNormEps: 1e-6,
		RopeTheta: 1e6, MaxPositionEmbeddings: 128}
	m, err := model.NewRandom(cfg, 1, nil) // or cuda.Open(dir, ...) for a HF directory
	if err != nil {
		panic(err)
	}
	e, err := cuda.New(m, cuda.Options{})
	if err != nil {
		panic(err)
	}
	defer e.Close()
	seed := uint64(7)
	out, err := e.Generate(context.Background(), server.GenerateRequest{
		PromptIDs: []int32{1, 2, 3},
		Params:    server.SamplingParams{Temperature: 1, MaxNewTokens: 5, Seed: &seed, Logprobs: true},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(out.TokenIDs), len(out.Logprobs), out.StopReason)
	// Output: 5 5 length
}
