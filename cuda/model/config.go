package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
)

// ErrConfig is wrapped by every error about an invalid or unsupported
// config.json.
var ErrConfig = errors.New("model: invalid config")

// Architectures this package implements (HF model_type values).
const (
	Llama = "llama"
	Qwen2 = "qwen2"
	Qwen3 = "qwen3"
)

// RopeScaling is the Llama-3 "llama3" frequency scaling (rope_scaling in
// config.json). A nil *RopeScaling means plain RoPE.
type RopeScaling struct {
	Factor                        float64 `json:"factor"`
	LowFreqFactor                 float64 `json:"low_freq_factor"`
	HighFreqFactor                float64 `json:"high_freq_factor"`
	OriginalMaxPositionEmbeddings int     `json:"original_max_position_embeddings"`
	RopeType                      string  `json:"rope_type"`
}

// Config is the subset of a Hugging Face config.json that defines a
// Llama-family decoder.
type Config struct {
	ModelType             string       `json:"model_type"`
	Architectures         []string     `json:"architectures,omitempty"`
	VocabSize             int          `json:"vocab_size"`
	HiddenSize            int          `json:"hidden_size"`
	IntermediateSize      int          `json:"intermediate_size"`
	NumHiddenLayers       int          `json:"num_hidden_layers"`
	NumAttentionHeads     int          `json:"num_attention_heads"`
	NumKeyValueHeads      int          `json:"num_key_value_heads"`
	HeadDim               int          `json:"head_dim,omitempty"`
	RMSNormEps            float64      `json:"rms_norm_eps"`
	RopeTheta             float64      `json:"rope_theta"`
	RopeScaling           *RopeScaling `json:"rope_scaling,omitempty"`
	MaxPositionEmbeddings int          `json:"max_position_embeddings"`
	TieWordEmbeddings     bool         `json:"tie_word_embeddings"`
	AttentionBias         bool         `json:"attention_bias"` // llama: bias on q,k,v and o
	HiddenAct             string       `json:"hidden_act,omitempty"`
	UseSlidingWindow      bool         `json:"use_sliding_window,omitempty"`
	BOSTokenID            any          `json:"bos_token_id,omitempty"`
	EOSTokenID            any          `json:"eos_token_id,omitempty"`
	TorchDType            string       `json:"torch_dtype,omitempty"`
}

// QKVBias reports whether q, k and v projections carry a bias.
func (c *Config) QKVBias() bool { return c.ModelType == Qwen2 || c.AttentionBias }

// OBias reports whether the output projection carries a bias.
func (c *Config) OBias() bool { return c.ModelType == Llama && c.AttentionBias }

// QKNorm reports whether q and k are RMS-normalized per head (Qwen3).
func (c *Config) QKNorm() bool { return c.ModelType == Qwen3 }

// LoadConfig reads and validates a config.json.
func LoadConfig(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// ParseConfig parses a config.json, fills HF defaults (head_dim =
// hidden/heads, num_key_value_heads = heads, rope_theta 10000) and
// validates it.
func ParseConfig(b []byte) (*Config, error) {
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.RopeTheta == 0 {
		c.RopeTheta = 10000
	}
	if c.RMSNormEps == 0 {
		c.RMSNormEps = 1e-6
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// Validate checks that the config describes a model this package runs.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, a...)...)
	}
	switch c.ModelType {
	case Llama, Qwen2, Qwen3:
	default:
		return bad("model_type %q not supported (want %s, %s or %s)", c.ModelType, Llama, Qwen2, Qwen3)
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"vocab_size", c.VocabSize}, {"hidden_size", c.HiddenSize}, {"intermediate_size", c.IntermediateSize},
		{"num_hidden_layers", c.NumHiddenLayers}, {"num_attention_heads", c.NumAttentionHeads},
		{"num_key_value_heads", c.NumKeyValueHeads}, {"head_dim", c.HeadDim},
		{"max_position_embeddings", c.MaxPositionEmbeddings},
	} {
		if f.v <= 0 {
			return bad("%s must be positive, got %d", f.name, f.v)
		}
		if f.v > 1<<24 {
			return bad("%s = %d is implausibly large", f.name, f.v)
		}
	}
	if c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		return bad("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if c.HeadDim%2 != 0 {
		return bad("head_dim %d must be even for rotary embeddings", c.HeadDim)
	}
	if c.HeadDim > 1024 {
		return bad("head_dim %d larger than the supported 1024", c.HeadDim)
	}
	if !(c.RMSNormEps > 0) || !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return bad("rms_norm_eps and rope_theta must be positive")
	}
	if c.HiddenAct != "" && c.HiddenAct != "silu" {
		return bad("hidden_act %q not supported (want silu)", c.HiddenAct)
	}
	if c.UseSlidingWindow {
		return bad("use_sliding_window is not supported")
	}
	if rs := c.RopeScaling; rs != nil {
		switch rs.RopeType {
		case "llama3":
			if !(rs.Factor > 0) || !(rs.HighFreqFactor > rs.LowFreqFactor) || rs.OriginalMaxPositionEmbeddings <= 0 {
				return bad("rope_scaling llama3 needs factor > 0, high_freq_factor > low_freq_factor and original_max_position_embeddings > 0")
			}
		case "default", "":
			c.RopeScaling = nil
		default:
			return bad("rope_scaling type %q not supported (want llama3)", rs.RopeType)
		}
	}
	return nil
}

// InvFreq returns the rotary inverse frequencies (head_dim/2 values) the
// way transformers computes them in float32, including llama3 scaling.
func (c *Config) InvFreq() []float32 {
	half := c.HeadDim / 2
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(c.HeadDim)
		inv[i] = 1 / float32(math.Pow(c.RopeTheta, float64(e)))
	}
	rs := c.RopeScaling
	if rs == nil {
		return inv
	}
	old := float64(rs.OriginalMaxPositionEmbeddings)
	lowWave := old / rs.LowFreqFactor
	highWave := old / rs.HighFreqFactor
	for i, f := range inv {
		wave := 2 * math.Pi / float64(f)
		switch {
		case wave < highWave:
			// high frequency: unchanged
		case wave > lowWave:
			inv[i] = f / float32(rs.Factor)
		default:
			smooth := (old/wave - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
			inv[i] = float32((1-smooth)*float64(f)/rs.Factor + smooth*float64(f))
		}
	}
	return inv
}

// NumParams is the number of weights in the model.
func (c *Config) NumParams() int64 {
	h, hd := int64(c.HiddenSize), int64(c.HeadDim)
	qd, kvd := int64(c.NumAttentionHeads)*hd, int64(c.NumKeyValueHeads)*hd
	layer := 2*h + h*qd + 2*h*kvd + qd*h + 3*h*int64(c.IntermediateSize)
	if c.QKVBias() {
		layer += qd + 2*kvd
	}
	if c.OBias() {
		layer += h
	}
	if c.QKNorm() {
		layer += 2 * hd
	}
	n := int64(c.NumHiddenLayers)*layer + int64(c.VocabSize)*h + h
	if !c.TieWordEmbeddings {
		n += int64(c.VocabSize) * h
	}
	return n
}
