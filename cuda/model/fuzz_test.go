package model

import (
	"math"
	"testing"
)

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8}`))
	f.Add([]byte(`{"model_type":"qwen3","vocab_size":10,"hidden_size":8,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":2,"num_key_value_heads":1,"head_dim":16,"max_position_embeddings":8,"tie_word_embeddings":true}`))
	f.Add([]byte(`{"model_type":"llama","vocab_size":10,"hidden_size":8,"intermediate_size":4,"num_hidden_layers":1,"num_attention_heads":2,"max_position_embeddings":8,"rope_scaling":{"rope_type":"llama3","factor":8,"low_freq_factor":1,"high_freq_factor":4,"original_max_position_embeddings":8192}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseConfig(b)
		if err != nil {
			return
		}
		// An accepted config yields a consistent model description.
		if c.NumAttentionHeads%c.NumKeyValueHeads != 0 || c.HeadDim%2 != 0 {
			t.Fatalf("invalid config accepted: %+v", c)
		}
		for _, v := range c.InvFreq() {
			if math.IsNaN(float64(v)) {
				t.Fatalf("NaN inverse frequency for %+v", c)
			}
		}
		if len(c.TensorShapes()) != len(c.TensorNames()) {
			t.Fatal("shape table inconsistent")
		}
	})
}
