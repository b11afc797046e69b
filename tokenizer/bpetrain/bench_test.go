package bpetrain_test

import (
	"testing"

	"github.com/agentrl/agentrl/tokenizer/bpetrain"
)

func BenchmarkTrain(b *testing.B) {
	docs := corpus()
	for i := 0; i < 5; i++ {
		docs = append(docs, docs...)
	}
	n := 0
	for _, d := range docs {
		n += len(d)
	}
	b.SetBytes(int64(n))
	for b.Loop() {
		if _, err := bpetrain.Train(docs, bpetrain.Options{VocabSize: 512}); err != nil {
			b.Fatal(err)
		}
	}
}
