package train_test

import (
	"fmt"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/agentrl/agentrl/cuda/train"
)

// One step of gradient descent on the negative log-likelihood of a
// sequence raises its log-probability.
func Example() {
	cfg := &model.Config{ModelType: model.Qwen3, VocabSize: 32, HiddenSize: 16, IntermediateSize: 32,
		NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, HeadDim: 8,
		RMSNormEps: 1e-6, RopeTheta: 10000, MaxPositionEmbeddings: 64}
	m, err := train.New(cfg, model.RandomWeights(cfg, 1), train.Options{})
	if err != nil {
		panic(err)
	}
	ids := [][]int32{{1, 5, 9, 2, 7}}
	nll := func() float64 {
		lp, err := m.Forward(ids)
		if err != nil {
			panic(err)
		}
		var s float64
		for _, v := range lp[0] {
			s -= float64(v)
		}
		return s
	}
	before := nll()
	// dL/dlogp = -1 for every token of L = -Σ logp.
	if err := m.Backward([][]float32{{-1, -1, -1, -1}}); err != nil {
		panic(err)
	}
	for _, p := range m.Params() {
		for i := range p.Data {
			p.Data[i] -= 0.05 * p.Grad[i]
		}
	}
	fmt.Println(nll() < before)
	// Output: true
}
