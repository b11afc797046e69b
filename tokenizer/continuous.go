package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrContinuous is wrapped by the continuous-token boundary errors: an
// unknown family, a tokenizer without a token the family's rule needs, or
// metadata that does not line up with a merge.
var ErrContinuous = errors.New("tokenizer: continuous token")

// ContinuousFamily names a continuous-token boundary rule, as verl's
// ContinuousTokenModelFamily does (verl/utils/tokenizer/continuous_token_wiring.py,
// verl-project/verl 1dda039b9c6311889a9c9a26040677e1254814f9). The values are
// verl's, so a family written in a verl config means the same here.
type ContinuousFamily string

// verl's families. The VL families share their text family's boundary rule
// (verl's VL builders subclass the text ones and keep their merge hook);
// agentrl renders no images through them.
const (
	FamilyDefault     ContinuousFamily = "default"
	FamilyQwen        ContinuousFamily = "qwen"
	FamilyQwen25      ContinuousFamily = "qwen25"
	FamilyQwen3       ContinuousFamily = "qwen3"
	FamilyQwen35      ContinuousFamily = "qwen35"
	FamilyMiniMax     ContinuousFamily = "minimax"
	FamilyMiniMaxM2   ContinuousFamily = "minimaxm2"
	FamilyMiniMaxM25  ContinuousFamily = "minimaxm25"
	FamilyMiniMaxM27  ContinuousFamily = "minimaxm27"
	FamilyGLM47       ContinuousFamily = "glm47"
	FamilyGLM5        ContinuousFamily = "glm5"
	FamilyGemma4      ContinuousFamily = "gemma4"
	FamilyGPTOSS      ContinuousFamily = "gptoss"
	FamilyDeepSeek    ContinuousFamily = "deepseek"
	FamilyVLDefault   ContinuousFamily = "vldefault"
	FamilyQwenVL      ContinuousFamily = "qwenvl"
	FamilyQwen25VL    ContinuousFamily = "qwen25vl"
	FamilyQwen3VL     ContinuousFamily = "qwen3vl"
	FamilyMiniMaxVL   ContinuousFamily = "minimaxvl"
	FamilyGemma4VL    ContinuousFamily = "gemma4vl"
	FamilyKimiVL      ContinuousFamily = "kimivl"
	FamilyGLM4V       ContinuousFamily = "glm4v"
	FamilyDeepSeekVL2 ContinuousFamily = "deepseekvl2"
	FamilyDeepSeekV4  ContinuousFamily = "deepseekv4"
)

// boundaryRule is what a family does at the junction between the runtime
// tokens and appended non-assistant tokens.
type boundaryRule uint8

const (
	ruleConcat        boundaryRule = iota // default, DeepSeek, GPT-OSS, Kimi-VL: plain concatenation
	ruleNewlineAfter                      // Qwen ("<|im_end|>"), MiniMax ("[e~["): insert "\n" after the end token
	ruleDropAmbiguous                     // GLM: drop a trailing "<|observation|>" or "<|user|>"
	ruleToolResponse                      // Gemma 4: re-insert "<|tool_response>" before a tool group
)

// continuousFamilies is verl's _CONTINUOUS_TOKEN_BUILDER_REGISTRY, in its
// order, reduced to the boundary rule each builder class applies.
var continuousFamilies = []struct {
	f    ContinuousFamily
	rule boundaryRule
	end  string // the token the rule looks for
}{
	{FamilyDefault, ruleConcat, ""},
	{FamilyQwen, ruleNewlineAfter, "<|im_end|>"},
	{FamilyQwen25, ruleNewlineAfter, "<|im_end|>"},
	{FamilyQwen3, ruleNewlineAfter, "<|im_end|>"},
	{FamilyQwen35, ruleNewlineAfter, "<|im_end|>"},
	{FamilyMiniMax, ruleNewlineAfter, "[e~["},
	{FamilyMiniMaxM2, ruleNewlineAfter, "[e~["},
	{FamilyMiniMaxM25, ruleNewlineAfter, "[e~["},
	{FamilyMiniMaxM27, ruleNewlineAfter, "[e~["},
	{FamilyGLM47, ruleDropAmbiguous, ""},
	{FamilyGLM5, ruleDropAmbiguous, ""},
	{FamilyGemma4, ruleToolResponse, "<|tool_response>"},
	{FamilyGPTOSS, ruleConcat, ""},
	{FamilyDeepSeek, ruleConcat, deepSeekEOS},
	{FamilyVLDefault, ruleConcat, ""},
	{FamilyQwenVL, ruleNewlineAfter, "<|im_end|>"},
	{FamilyQwen25VL, ruleNewlineAfter, "<|im_end|>"},
	{FamilyQwen3VL, ruleNewlineAfter, "<|im_end|>"},
	{FamilyMiniMaxVL, ruleNewlineAfter, "[e~["},
	{FamilyGemma4VL, ruleToolResponse, "<|tool_response>"},
	{FamilyKimiVL, ruleConcat, ""},
	{FamilyGLM4V, ruleDropAmbiguous, ""},
	{FamilyDeepSeekVL2, ruleConcat, deepSeekEOS},
	{FamilyDeepSeekV4, ruleConcat, deepSeekEOS},
}

// deepSeekEOS is DeepSeek's end of sentence, with the fullwidth vertical
// line U+FF5C and the lower one-eighth block U+2581 verl checks for: it is
// the one token every DeepSeek tokenizer (V2, V3, R1, V4) defines.
const deepSeekEOS = "<\uff5cend\u2581of\u2581sentence\uff5c>"

// modelTypeFamily is verl's _MODEL_TYPE_TO_FAMILY: the exact root
// config.json model_type of a checkpoint to its family. verl does not
// guess from repository names or architectures, and neither does this.
var modelTypeFamily = map[string]ContinuousFamily{
	"qwen2":           FamilyQwen,
	"qwen3":           FamilyQwen3,
	"qwen3_moe":       FamilyQwen3,
	"qwen3_5":         FamilyQwen35,
	"qwen3_5_moe":     FamilyQwen35,
	"minimax":         FamilyMiniMax,
	"minimax_text_01": FamilyMiniMax,
	"minimax_m2":      FamilyMiniMaxM2,
	"glm4_moe":        FamilyGLM47,
	"glm_moe_dsa":     FamilyGLM5,
	"gemma4":          FamilyGemma4,
	"gpt_oss":         FamilyGPTOSS,
	"deepseek_v2":     FamilyDeepSeek,
	"deepseek_v3":     FamilyDeepSeek,
	"deepseek_v4":     FamilyDeepSeekV4,
	"qwen2_vl":        FamilyQwenVL,
	"qwen2_5_vl":      FamilyQwen25VL,
	"qwen3_vl":        FamilyQwen3VL,
	"qwen3_vl_moe":    FamilyQwen3VL,
	"minimax_vl_01":   FamilyMiniMaxVL,
	"kimi_vl":         FamilyKimiVL,
	"glm4v":           FamilyGLM4V,
	"glm4v_moe":       FamilyGLM4V,
	"deepseek_vl_v2":  FamilyDeepSeekVL2,
}

// ContinuousFamilies lists verl's families in verl's order.
func ContinuousFamilies() []ContinuousFamily {
	out := make([]ContinuousFamily, len(continuousFamilies))
	for i, f := range continuousFamilies {
		out[i] = f.f
	}
	return out
}

// ContinuousFamilyForModelType returns the family of a root config.json
// model_type (trimmed and lower-cased, as verl normalizes it). An
// unregistered model_type gets FamilyDefault and ok false, so a caller can
// say that no model-specific rule applies, as verl warns.
func ContinuousFamilyForModelType(modelType string) (f ContinuousFamily, ok bool) {
	f, ok = modelTypeFamily[strings.ToLower(strings.TrimSpace(modelType))]
	if !ok {
		return FamilyDefault, false
	}
	return f, true
}

// ParseContinuousFamily reads a family as verl's _normalize_model_family
// does: trimmed, lower-cased, every run of characters other than a-z and
// 0-9 removed ("qwen_3.5" is qwen35). "auto" is not a family here: resolve
// it with ContinuousFamilyForModelType.
func ParseContinuousFamily(s string) (ContinuousFamily, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return "", fmt.Errorf("%w: model_family must be a non-empty string", ErrContinuous)
	}
	var b strings.Builder
	for _, r := range t {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	for _, f := range continuousFamilies {
		if string(f.f) == b.String() {
			return f.f, nil
		}
	}
	return "", fmt.Errorf("%w: unknown model_family %q (supported: %v)", ErrContinuous, s, ContinuousFamilies())
}

// ReadModelType returns the root model_type of dir/config.json ("" when the
// file has none). Nested configs (text_config) are not read, as verl does not.
func ReadModelType(dir string) (string, error) {
	p := filepath.Join(dir, "config.json")
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("tokenizer: reading model_type: %w", err)
	}
	defer f.Close()
	var cfg struct {
		ModelType *string `json:"model_type"`
	}
	// config.json files are a few KB; the limit keeps a hostile one from
	// using unbounded memory.
	if err := json.NewDecoder(io.LimitReader(f, 4<<20)).Decode(&cfg); err != nil {
		return "", fmt.Errorf("tokenizer: reading model_type: %s: %w", p, err)
	}
	if cfg.ModelType == nil {
		return "", nil
	}
	return *cfg.ModelType, nil
}

// Vocab is what a Boundary needs from a tokenizer; *Tokenizer implements it.
type Vocab interface {
	TokenID(token string) (int32, bool)
	Encode(text string) []int32
}

// Boundary applies one family's continuous-token rule where appended
// non-assistant tokens (a tool result, a user turn, template glue) meet
// the runtime tokens, as verl's builders' _merge_non_assistant_token_ids
// do. It never re-tokenizes the runtime tokens.
type Boundary struct {
	family  ContinuousFamily
	rule    boundaryRule
	end     int32    // Qwen/MiniMax end token, Gemma's <|tool_response>
	newline int32    // the single "\n" token of ruleNewlineAfter
	drop    [2]int32 // GLM's <|observation|> and <|user|>
}

// NewBoundary returns f's rule over v's ids. It checks what verl's builder
// constructors check: the tokens the rule needs exist (a tokenizer of
// another family fails here, not at the first merge), and "\n" is one token.
func NewBoundary(f ContinuousFamily, v Vocab) (*Boundary, error) {
	for _, e := range continuousFamilies {
		if e.f != f {
			continue
		}
		b := &Boundary{family: f, rule: e.rule}
		need := func(tok string) (int32, error) {
			id, ok := v.TokenID(tok)
			if !ok || id < 0 {
				return 0, fmt.Errorf("%w: family %s: the tokenizer does not define required token %q", ErrContinuous, f, tok)
			}
			return id, nil
		}
		var err error
		if e.end != "" {
			if b.end, err = need(e.end); err != nil {
				return nil, err
			}
		}
		switch e.rule {
		case ruleNewlineAfter:
			nl := v.Encode("\n")
			if len(nl) != 1 {
				return nil, fmt.Errorf("%w: family %s: expected \"\\n\" to be one token, got %v", ErrContinuous, f, nl)
			}
			b.newline = nl[0]
		case ruleDropAmbiguous:
			for i, tok := range []string{"<|observation|>", "<|user|>"} {
				if b.drop[i], err = need(tok); err != nil {
					return nil, err
				}
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("%w: unknown family %q (supported: %v)", ErrContinuous, f, ContinuousFamilies())
}

// Family is the family b applies.
func (b *Boundary) Family() ContinuousFamily { return b.family }

// Merge is verl's MergeResult: the runtime tokens after a merge and the
// edits a caller applies to its response metadata (AlignMetadata).
type Merge struct {
	Tokens []int32
	// Appended counts the appended tokens, not the Inserted ones.
	Appended int
	// Assistant is true for a model turn (mask 1, its logprobs); false for
	// non-assistant tokens (mask 0, logprob 0).
	Assistant bool
	// Inserted are boundary tokens the rule added between the runtime
	// tokens and the appended ones. No model sampled them: mask 0, logprob 0.
	Inserted []int32
	// Removed counts runtime tokens the rule dropped from the end.
	Removed int
}

// MergeAssistant appends a model turn as sampled.
func MergeAssistant(runtime, assistant []int32) Merge {
	return Merge{Tokens: concat(runtime, nil, assistant), Appended: len(assistant), Assistant: true}
}

// MergeNonAssistant joins appended non-assistant ids to the runtime ids.
// toolFirst says the first appended message is a tool result (Gemma 4's
// rule applies only then).
//
//   - Qwen 2.5/3/3.5: the template writes "<|im_end|>\n" after a turn but
//     generation stops at "<|im_end|>": when runtime ends there, "\n" is
//     inserted.
//   - MiniMax: the same with "[e~[".
//   - GLM-4.7/5: "<|observation|>" and "<|user|>" both stop the model and
//     open the next message: a trailing one is removed from runtime.
//   - Gemma 4: the suffix diff leaves "<|tool_response>" with the
//     synthetic assistant turn: it is re-inserted before a tool group,
//     unless runtime already ends with it or appended starts with it.
//   - DeepSeek, GPT-OSS and the default: plain concatenation.
func (b *Boundary) MergeNonAssistant(runtime, appended []int32, toolFirst bool) Merge {
	n := len(runtime)
	var ins []int32
	removed := 0
	switch b.rule {
	case ruleNewlineAfter:
		if n > 0 && runtime[n-1] == b.end {
			ins = []int32{b.newline}
		}
	case ruleDropAmbiguous:
		if n > 0 && (runtime[n-1] == b.drop[0] || runtime[n-1] == b.drop[1]) {
			removed = 1
		}
	case ruleToolResponse:
		if toolFirst && (n == 0 || runtime[n-1] != b.end) && (len(appended) == 0 || appended[0] != b.end) {
			ins = []int32{b.end}
		}
	}
	return Merge{Tokens: concat(runtime[:n-removed], ins, appended), Appended: len(appended), Inserted: ins, Removed: removed}
}

func concat(a, b, c []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b)+len(c))
	return append(append(append(out, a...), b...), c...)
}

// AlignMetadata applies m to the response mask and logprobs that end where
// m's runtime tokens ended, as verl's align_response_metadata does: the
// removed tokens' entries are dropped, inserted tokens get mask 0 and
// logprob 0, appended assistant tokens mask 1 and assistantLogprobs,
// appended non-assistant tokens mask 0 and logprob 0. logprobs may be nil
// (then assistantLogprobs must be too); it stays nil.
func AlignMetadata(m Merge, mask []int8, logprobs, assistantLogprobs []float32) ([]int8, []float32, error) {
	if logprobs == nil && assistantLogprobs != nil {
		return nil, nil, fmt.Errorf("%w: response logprobs are required when assistant logprobs are given", ErrContinuous)
	}
	if m.Removed > len(mask) || (logprobs != nil && m.Removed > len(logprobs)) {
		return nil, nil, fmt.Errorf("%w: the merge removed %d tokens but the response has %d", ErrContinuous, m.Removed, len(mask))
	}
	if m.Assistant && logprobs != nil && len(assistantLogprobs) != m.Appended {
		if assistantLogprobs == nil {
			return nil, nil, fmt.Errorf("%w: assistant logprobs are required for an assistant merge", ErrContinuous)
		}
		return nil, nil, fmt.Errorf("%w: assistant logprobs length must match the appended assistant tokens, got %d and %d", ErrContinuous, len(assistantLogprobs), m.Appended)
	}
	outMask := append([]int8(nil), mask[:len(mask)-m.Removed]...)
	for range m.Inserted {
		outMask = append(outMask, 0)
	}
	var fill int8
	if m.Assistant {
		fill = 1
	}
	for range m.Appended {
		outMask = append(outMask, fill)
	}
	if logprobs == nil {
		return outMask, nil, nil
	}
	outLP := append([]float32(nil), logprobs[:len(logprobs)-m.Removed]...)
	for range m.Inserted {
		outLP = append(outLP, 0)
	}
	if m.Assistant {
		outLP = append(outLP, assistantLogprobs...)
	} else {
		for range m.Appended {
			outLP = append(outLP, 0)
		}
	}
	return outMask, outLP, nil
}

// Check reports whether runtime followed by delta — agentrl's stream, where
// EncodeDelta's delta already carries the template glue after the model's
// turn — is the stream verl's rule builds from the same turn: a delta that
// would make verl insert or drop a token differently is an error naming
// the family and the token. It is the guard agentloop applies per
// observation (Env.Boundary).
//
// GLM's rule drops a trailing "<|observation|>"/"<|user|>" and appends the
// next message with its opener; agentrl keeps the sampled token and
// appends the rest. The tokens are the same; the masks differ at that one
// token (1 here, the model sampled it; 0 in verl).
func (b *Boundary) Check(runtime, delta []int32, toolFirst bool) error {
	n := len(runtime)
	if n == 0 {
		return nil
	}
	last := runtime[n-1]
	switch b.rule {
	case ruleNewlineAfter:
		if last == b.end && (len(delta) == 0 || delta[0] != b.newline) {
			return fmt.Errorf("%w: family %s: the turn ended at its end token but the delta does not start with the \"\\n\" verl inserts", ErrContinuous, b.family)
		}
	case ruleDropAmbiguous:
		if (last == b.drop[0] || last == b.drop[1]) && len(delta) > 0 && delta[0] == last {
			return fmt.Errorf("%w: family %s: the delta repeats the turn's final token %d, which verl keeps once", ErrContinuous, b.family, last)
		}
	case ruleToolResponse:
		if toolFirst && last != b.end && (len(delta) == 0 || delta[0] != b.end) {
			return fmt.Errorf("%w: family %s: a tool result's delta does not start with the <|tool_response> verl inserts", ErrContinuous, b.family)
		}
	}
	return nil
}
