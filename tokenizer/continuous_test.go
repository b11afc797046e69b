package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentrl/agentrl/chat"
	"github.com/stretchr/testify/require"
)

// fakeVocab is verl's fake boundary tokenizers: the special tokens a case
// names, and what "\n" encodes to.
type fakeVocab struct {
	Tokens  map[string]int32 `json:"tokens"`
	Newline []int32          `json:"newline"`
}

func (v fakeVocab) TokenID(tok string) (int32, bool) { id, ok := v.Tokens[tok]; return id, ok }
func (v fakeVocab) Encode(text string) []int32 {
	if text == "\n" && v.Newline != nil {
		return v.Newline
	}
	out := make([]int32, 0, len(text))
	for _, r := range text { // verl's _TemplateTokenizer: one id per character
		out = append(out, r)
	}
	return out
}

type ctCase struct {
	Source string `json:"source"`
	Test   string `json:"test"`
	Commit string `json:"commit"`
	Why    string `json:"why"`
	Error  string `json:"error"`

	Want      json.RawMessage `json:"want"`
	ModelType string          `json:"model_type"`
	Known     bool            `json:"known"`
	Input     string          `json:"input"`

	Family    ContinuousFamily `json:"family"`
	Vocab     fakeVocab        `json:"vocab"`
	Runtime   []int32          `json:"runtime"`
	Appended  []int32          `json:"appended"`
	Assistant []int32          `json:"assistant"`
	ToolFirst bool             `json:"tool_first"`

	WantTokens   []int32 `json:"want_tokens"`
	WantInserted []int32 `json:"want_inserted"`
	WantRemoved  int     `json:"want_removed"`
	WantAppended int     `json:"want_appended"`

	Merge *struct {
		Tokens    []int32 `json:"tokens"`
		Appended  int     `json:"appended"`
		Assistant bool    `json:"assistant"`
		Inserted  []int32 `json:"inserted"`
		Removed   int     `json:"removed"`
	} `json:"merge"`
	Mask              []int8    `json:"mask"`
	Logprobs          []float32 `json:"logprobs"`
	AssistantLogprobs []float32 `json:"assistant_logprobs"`
	WantMask          []int8    `json:"want_mask"`
	WantLogprobs      []float32 `json:"want_logprobs"`
	WantLogprobsNil   bool      `json:"want_logprobs_nil"`
}

func (c ctCase) name() string { return c.Test }

func loadCTCases(t *testing.T) map[string][]ctCase {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "verl_continuous_token.json"))
	require.NoError(t, err)
	var raw map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &raw))
	out := map[string][]ctCase{}
	for k, v := range raw {
		if k == "note" {
			continue
		}
		var cs []ctCase
		require.NoError(t, json.Unmarshal(v, &cs), k)
		for _, c := range cs {
			// Every case names where it comes from.
			require.Equal(t, "verl-project/verl tests/utils/test_continuous_token_on_cpu.py", c.Source, k)
			require.Len(t, c.Commit, 40, k)
			require.NotEmpty(t, c.Test, k)
		}
		out[k] = cs
	}
	return out
}

// TestContinuousVerlCases runs verl's continuous-token tests, ported as
// data (testdata/verl_continuous_token.json), against the Go rules.
func TestContinuousVerlCases(t *testing.T) {
	all := loadCTCases(t)
	for _, k := range []string{"families", "model_types", "parse_family", "merges", "assistant_merges", "aligns", "boundary_errors", "not_ported"} {
		require.NotEmpty(t, all[k], k)
	}
	for _, c := range all["families"] {
		var want []ContinuousFamily
		require.NoError(t, json.Unmarshal(c.Want, &want))
		require.Equal(t, want, ContinuousFamilies(), c.name())
	}
	for _, c := range all["model_types"] {
		var want ContinuousFamily
		require.NoError(t, json.Unmarshal(c.Want, &want))
		got, ok := ContinuousFamilyForModelType(c.ModelType)
		require.Equal(t, want, got, "%s %q", c.name(), c.ModelType)
		require.Equal(t, c.Known, ok, "%s %q", c.name(), c.ModelType)
	}
	for _, c := range all["parse_family"] {
		got, err := ParseContinuousFamily(c.Input)
		if c.Error != "" {
			require.ErrorIs(t, err, ErrContinuous, c.name())
			require.ErrorContains(t, err, c.Error, c.name())
			continue
		}
		require.NoError(t, err, c.name())
		var want ContinuousFamily
		require.NoError(t, json.Unmarshal(c.Want, &want))
		require.Equal(t, want, got, c.name())
	}
	for _, c := range all["merges"] {
		b, err := NewBoundary(c.Family, c.Vocab)
		require.NoError(t, err, c.name())
		m := b.MergeNonAssistant(c.Runtime, c.Appended, c.ToolFirst)
		require.Equal(t, c.WantTokens, m.Tokens, c.name())
		require.Equal(t, len(c.WantInserted), len(m.Inserted), c.name())
		if len(c.WantInserted) > 0 {
			require.Equal(t, c.WantInserted, m.Inserted, c.name())
		}
		require.Equal(t, c.WantRemoved, m.Removed, c.name())
		require.Equal(t, c.WantAppended, m.Appended, c.name())
		require.False(t, m.Assistant, c.name())
		// verl's align_response_metadata: mask/logprobs of the response
		// that ends where runtime ends.
		if c.WantMask != nil {
			mask, lp, err := AlignMetadata(m, c.Mask, c.Logprobs, nil)
			require.NoError(t, err, c.name())
			require.Equal(t, c.WantMask, mask, c.name())
			require.InDeltaSlice(t, c.WantLogprobs, lp, 0, c.name())
		}
	}
	for _, c := range all["assistant_merges"] {
		m := MergeAssistant(c.Runtime, c.Assistant)
		require.Equal(t, c.WantTokens, m.Tokens, c.name())
		require.Equal(t, len(c.Assistant), m.Appended, c.name())
		mask, lp, err := AlignMetadata(m, c.Mask, c.Logprobs, c.AssistantLogprobs)
		require.NoError(t, err, c.name())
		require.Equal(t, c.WantMask, mask, c.name())
		require.InDeltaSlice(t, c.WantLogprobs, lp, 1e-9, c.name())
	}
	for _, c := range all["aligns"] {
		m := Merge{Tokens: c.Merge.Tokens, Appended: c.Merge.Appended, Assistant: c.Merge.Assistant, Inserted: c.Merge.Inserted, Removed: c.Merge.Removed}
		mask, lp, err := AlignMetadata(m, c.Mask, c.Logprobs, c.AssistantLogprobs)
		if c.Error != "" {
			require.ErrorIs(t, err, ErrContinuous, c.name())
			require.ErrorContains(t, err, c.Error, c.name())
			continue
		}
		require.NoError(t, err, c.name())
		require.Equal(t, c.WantMask, mask, c.name())
		if c.WantLogprobsNil {
			require.Nil(t, lp, c.name())
		} else {
			require.InDeltaSlice(t, c.WantLogprobs, lp, 0, c.name())
		}
	}
	for _, c := range all["boundary_errors"] {
		_, err := NewBoundary(c.Family, c.Vocab)
		require.ErrorIs(t, err, ErrContinuous, c.name())
		require.ErrorContains(t, err, c.Error, c.name())
	}
	for _, c := range all["not_ported"] {
		require.NotEmpty(t, c.Why, "%s: a case not ported says why", c.name())
	}
}

// TestContinuousBoundaryBadInput: unknown families and removals longer
// than the response are errors, not panics.
func TestContinuousBoundaryBadInput(t *testing.T) {
	_, err := NewBoundary("nope", fakeVocab{})
	require.ErrorIs(t, err, ErrContinuous)
	_, _, err = AlignMetadata(Merge{Removed: 2}, []int8{1}, nil, nil)
	require.ErrorIs(t, err, ErrContinuous)
	// Empty runtime: nothing to insert after or drop.
	for _, f := range []ContinuousFamily{FamilyQwen3, FamilyGLM47, FamilyMiniMax} {
		b, err := NewBoundary(f, fakeVocab{Tokens: map[string]int32{"<|im_end|>": 1, "[e~[": 1, "<|observation|>": 1, "<|user|>": 2}, Newline: []int32{9}})
		require.NoError(t, err)
		m := b.MergeNonAssistant(nil, []int32{5}, false)
		require.Equal(t, []int32{5}, m.Tokens, f)
	}
}

// TestReadModelType reads the root model_type only, as verl does.
func TestReadModelType(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":"qwen3_5_moe","text_config":{"model_type":"qwen3"}}`), 0o600))
	mt, err := ReadModelType(dir)
	require.NoError(t, err)
	require.Equal(t, "qwen3_5_moe", mt)
	f, ok := ContinuousFamilyForModelType(mt)
	require.True(t, ok)
	require.Equal(t, FamilyQwen35, f)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type":`), 0o600))
	_, err = ReadModelType(dir)
	require.ErrorContains(t, err, "config.json")
	_, err = ReadModelType(filepath.Join(dir, "missing"))
	require.Error(t, err)
}

// verlNonAssistant is verl's ContinuousTokenBuilder.tokenize_non_assistant_incremental_messages
// (verl/utils/tokenizer/continuous_token.py, verl-project/verl
// 1dda039b9c6311889a9c9a26040677e1254814f9) over this package's chat
// template: each tool group is the suffix of a synthetic
// [system, user, assistant with those tool calls] prefix, each user or
// system message the suffix of a synthetic [system, user] prefix, then the
// generation prompt's suffix over the whole conversation.
func verlNonAssistant(t *testing.T, tok *Tokenizer, previous, updated []chat.Message, tools []chat.ToolSchema) []int32 {
	t.Helper()
	sys := chat.Message{Role: chat.RoleSystem, Content: "continuous token synthetic system"}
	usr := chat.Message{Role: chat.RoleUser, Content: "continuous token synthetic user"}
	delta := func(prefix, appended []chat.Message, gen bool) []int32 {
		p, err := tok.EncodeChat(ChatContext{Messages: prefix, Tools: tools})
		require.NoError(t, err)
		full, err := tok.EncodeChat(ChatContext{Messages: append(slices.Clone(prefix), appended...), Tools: tools, AddGenerationPrompt: gen})
		require.NoError(t, err)
		require.Equal(t, p, full[:len(p)], "verl: token-id suffix diff failed")
		return full[len(p):]
	}
	added := updated[len(previous):]
	var out []int32
	for i := 0; i < len(added); {
		if added[i].Role != chat.RoleTool {
			out = append(out, delta([]chat.Message{sys, usr}, added[i:i+1], false)...)
			i++
			continue
		}
		j := i
		var calls []chat.ToolCall
		for j < len(added) && added[j].Role == chat.RoleTool {
			name := added[j].Name
			if name == "" {
				name = "continuous_token_tool"
			}
			id := added[j].ToolCallID
			if id == "" {
				id = "continuous_token_call_" + string(rune('0'+j-i))
			}
			calls = append(calls, chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: "{}", ArgumentsAsObject: true}})
			j++
		}
		asst := chat.Message{Role: chat.RoleAssistant, ReasoningContent: "reasoning", ToolCalls: calls}
		out = append(out, delta([]chat.Message{sys, usr, asst}, added[i:j], false)...)
		i = j
	}
	return append(out, delta(updated, nil, true)...)
}

// TestContinuousQwen3DeltaAgreesWithVerl checks that agentrl's per-turn
// delta (EncodeDelta) after a sampled Qwen3 turn that stopped at
// <|im_end|> gives the same tokens as verl's Qwen rule: verl's
// non-assistant ids with "\n" inserted after <|im_end|>. The inserted "\n"
// is part of agentrl's delta (template glue, mask 0), so the two streams
// and masks agree.
func TestContinuousQwen3DeltaAgreesWithVerl(t *testing.T) {
	tok := qwen(t)
	b, err := NewBoundary(FamilyQwen3, tok)
	require.NoError(t, err)
	imEnd, _ := tok.TokenID("<|im_end|>")
	tools := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "search", Description: "web search", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}}
	sampled := tok.Encode("<think>\nlook it up\n</think>\n\n<tool_call>\n{\"name\": \"search\", \"arguments\": {\"q\": \"go\"}}\n</tool_call>")
	sampled = append(sampled, imEnd)
	asst := chat.Message{Role: chat.RoleAssistant, Content: "", ReasoningContent: "look it up",
		ToolCalls: []chat.ToolCall{{ID: "c0", Type: "function", Function: chat.FunctionCall{Name: "search", Arguments: `{"q": "go"}`, ArgumentsAsObject: true}}}}
	base := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are helpful."},
		{Role: chat.RoleUser, Content: "What is Go?"},
		asst,
	}
	for _, c := range continuousAddedCases {
		t.Run(c.name, func(t *testing.T) {
			prompt, err := tok.EncodeChat(ChatContext{Messages: base[:2], Tools: tools, AddGenerationPrompt: true})
			require.NoError(t, err)
			runtime := append(slices.Clone(prompt), sampled...)
			updated := append(slices.Clone(base), c.added...)

			verlIDs := verlNonAssistant(t, tok, base, updated, tools)
			m := b.MergeNonAssistant(runtime, verlIDs, c.added[0].Role == chat.RoleTool)
			require.Equal(t, []int32{tok.Encode("\n")[0]}, m.Inserted)

			delta, err := tok.EncodeDelta(ChatContext{Messages: base, Tools: tools, AddGenerationPrompt: true}, c.added)
			require.NoError(t, err)
			require.NoError(t, b.Check(runtime, delta, c.added[0].Role == chat.RoleTool))
			ours := append(slices.Clone(runtime), delta...)
			if !slices.Equal(m.Tokens, ours) {
				a, _ := tok.Decode(m.Tokens[len(runtime):], false)
				o, _ := tok.Decode(delta, false)
				t.Fatalf("verl appends %q, agentrl %q", a, o)
			}
			// Masks: verl gives the inserted and appended tokens 0; so does
			// agentrl to a whole observation delta.
			mask := make([]int8, len(runtime))
			got, _, err := AlignMetadata(m, mask, nil, nil)
			require.NoError(t, err)
			require.Equal(t, len(ours), len(got))
			require.Equal(t, int8(0), slices.Max(got[len(runtime):]))
		})
	}
}

// TestContinuousFamilyErrorsName: errors name the family and the token.
func TestContinuousFamilyErrorsName(t *testing.T) {
	_, err := NewBoundary(FamilyGLM5, qwen(t))
	require.True(t, errors.Is(err, ErrContinuous))
	require.True(t, strings.Contains(err.Error(), "glm5") && strings.Contains(err.Error(), "<|observation|>"), err.Error())
}

// TestContinuousLlamaDeltaAgreesWithVerl: Llama 3.1's config.json
// model_type "llama" has no verl builder, so verl uses the default rule
// (plain concatenation). agentrl's delta after a turn that stopped at
// <|eot_id|> must then equal verl's non-assistant ids exactly.
func TestContinuousLlamaDeltaAgreesWithVerl(t *testing.T) {
	tok := llama(t)
	f, known := ContinuousFamilyForModelType("llama")
	require.False(t, known)
	b, err := NewBoundary(f, tok)
	require.NoError(t, err)
	eot, ok := tok.TokenID("<|eot_id|>")
	require.True(t, ok)
	base := []chat.Message{
		{Role: chat.RoleSystem, Content: "You are helpful."},
		{Role: chat.RoleUser, Content: "What is Go?"},
		{Role: chat.RoleAssistant, Content: "It is a language."},
	}
	added := []chat.Message{{Role: chat.RoleUser, Content: "Tell me more."}}
	runtime := append(tok.Encode("It is a language."), eot)
	verlIDs := verlNonAssistant(t, tok, base, append(slices.Clone(base), added...), nil)
	m := b.MergeNonAssistant(runtime, verlIDs, false)
	require.Empty(t, m.Inserted)
	delta, err := tok.EncodeDelta(ChatContext{Messages: base, AddGenerationPrompt: true}, added)
	require.NoError(t, err)
	if got := append(slices.Clone(runtime), delta...); !slices.Equal(m.Tokens, got) {
		a, _ := tok.Decode(verlIDs, false)
		o, _ := tok.Decode(delta, false)
		t.Fatalf("verl appends %q, agentrl %q", a, o)
	}
}

// TestContinuousCheck: Check accepts agentrl's stream exactly when verl's
// rule builds the same tokens.
func TestContinuousCheck(t *testing.T) {
	v := fakeVocab{Tokens: map[string]int32{"<|im_end|>": 7, "<|observation|>": 8, "<|user|>": 9, "<|tool_response>": 6}, Newline: []int32{3}}
	for _, c := range []struct {
		f              ContinuousFamily
		runtime, delta []int32
		tool, ok       bool
	}{
		{FamilyQwen3, []int32{1, 7}, []int32{3, 4}, false, true},
		{FamilyQwen3, []int32{1, 7}, []int32{4}, false, false},
		{FamilyQwen3, []int32{1, 2}, []int32{4}, false, true}, // stopped by length: nothing to insert
		{FamilyGLM47, []int32{1, 8}, []int32{4}, true, true},
		{FamilyGLM47, []int32{1, 8}, []int32{8, 4}, true, false},
		{FamilyGemma4, []int32{1}, []int32{6, 4}, true, true},
		{FamilyGemma4, []int32{1}, []int32{4}, true, false},
		{FamilyGemma4, []int32{1}, []int32{4}, false, true},
		{FamilyDefault, []int32{1}, nil, false, true},
	} {
		b, err := NewBoundary(c.f, v)
		require.NoError(t, err)
		err = b.Check(c.runtime, c.delta, c.tool)
		if c.ok {
			require.NoError(t, err, "%+v", c)
		} else {
			require.ErrorIs(t, err, ErrContinuous, "%+v", c)
			require.ErrorContains(t, err, string(c.f))
		}
	}
}
