package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// continuousAddedCases are the messages appended after a model turn that
// called "search" (id c0) in the continuous-token agreement tests.
var continuousAddedCases = []struct {
	name  string
	added []chat.Message
}{
	{"one tool result", []chat.Message{{Role: chat.RoleTool, Content: "Go is a language.", ToolCallID: "c0", Name: "search"}}},
	{"two tool results", []chat.Message{{Role: chat.RoleTool, Content: "hit 1", Name: "search"}, {Role: chat.RoleTool, Content: "hit 2", Name: "search"}}},
	{"user turn", []chat.Message{{Role: chat.RoleUser, Content: "Please continue."}}},
	{"tool then user", []chat.Message{{Role: chat.RoleTool, Content: "r", Name: "search"}, {Role: chat.RoleUser, Content: "and?"}}},
}

// familyTokenizer is the Qwen3 vocabulary with the special tokens of a
// parser template added as single tokens, and that template as its chat
// template: enough to tokenize the family's conversations as its own
// tokenizer would at the boundaries, which is all a continuous-token rule
// looks at.
func familyTokenizer(t *testing.T, template string, eos ...string) *Tokenizer {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "parser", "testdata", "templates", template))
	require.NoError(t, err)
	var tj map[string]any
	require.NoError(t, json.Unmarshal(readGunzip(t, filepath.Join("testdata", "qwen3", "tokenizer.json.gz")), &tj))
	added := tj["added_tokens"].([]any)
	next := 0
	idOf := map[string]int{}
	for _, a := range added {
		m := a.(map[string]any)
		id := int(m["id"].(float64))
		next = max(next, id+1)
		idOf[m["content"].(string)] = id
	}
	specials := regexp.MustCompile(`<[|｜][^<>'"]{1,40}?[|｜]>|<\|[a-z_"]+>|<[a-z_]+\|>|\[e~\[|\]~!b\[|\]~b\]|\[gMASK\]|<sop>`)
	for _, s := range specials.FindAllString(string(src), -1) {
		if _, ok := idOf[s]; ok {
			continue
		}
		idOf[s] = next
		added = append(added, map[string]any{"id": next, "content": s, "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true})
		next++
	}
	tj["added_tokens"] = added
	dir := t.TempDir()
	b, err := json.Marshal(tj)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644))
	cfg, err := json.Marshal(map[string]any{"chat_template": string(src), "eos_token": eos[0], "bos_token": ""})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644))
	var ids []int
	for _, e := range eos {
		id, ok := idOf[e]
		require.True(t, ok, "end token %q is a special token of the template", e)
		ids = append(ids, id)
	}
	gen, err := json.Marshal(map[string]any{"eos_token_id": ids})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "generation_config.json"), gen, 0o644))
	tok, err := Load(dir)
	require.NoError(t, err)
	return tok
}

// TestContinuousFamiliesDeltaAgreeWithVerl extends
// TestContinuousQwen3DeltaAgreesWithVerl to the other families whose chat
// templates agentrl renders byte-identically to jinja2 (the parser
// package's template goldens): for each, the stream agentrl builds
// (runtime, then EncodeDelta of the new messages) equals the one verl's
// continuous-token builder builds (runtime merged with the token-level
// suffix behind verl's synthetic prefix, by the family's rule), and passes
// Boundary.Check.
//
// Not checked here: Gemma 4 (this template renders a tool message as a
// "<|turn>tool" turn and drops the model's thought from history, so no
// sampled turn extends the generation prompt; verl's Gemma 4 rule is ported
// as data in TestContinuousVerlMergeCases) and DeepSeek V3.1 (its template
// adds a call's arguments to a string, and verl's synthetic prefix passes
// them as a dict: jinja2 fails on it too).
func TestContinuousFamiliesDeltaAgreeWithVerl(t *testing.T) {
	for _, fc := range []struct {
		template string
		eos      []string // eos_token, then generation_config.json's others
		family   ContinuousFamily
		implicit bool // the turn has no end token: the model samples the next message's opener
	}{
		{"qwen3_coder.jinja", []string{"<|im_end|>"}, FamilyQwen35, false},
		{"minimax_m2.jinja", []string{"[e~["}, FamilyMiniMaxM2, false},
		{"glm45.jinja", []string{"<|user|>", "<|observation|>"}, FamilyGLM47, true},
	} {
		t.Run(string(fc.family), func(t *testing.T) {
			tok := familyTokenizer(t, fc.template, fc.eos...)
			b, err := NewBoundary(fc.family, tok)
			require.NoError(t, err)
			tools := []chat.ToolSchema{{Type: "function", Function: chat.FunctionSchema{Name: "search", Description: "web search", Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)}}}
			asst := chat.Message{Role: chat.RoleAssistant, ReasoningContent: "look it up", ToolCalls: []chat.ToolCall{{ID: "c0", Type: "function",
				Function: chat.FunctionCall{Name: "search", Arguments: `{"q": "go"}`, ArgumentsAsObject: true}}}}
			base := []chat.Message{{Role: chat.RoleSystem, Content: "You are helpful."}, {Role: chat.RoleUser, Content: "What is Go?"}, asst}
			prompt, err := tok.EncodeChat(ChatContext{Messages: base[:2], Tools: tools, AddGenerationPrompt: true})
			require.NoError(t, err)
			whole, err := tok.EncodeChat(ChatContext{Messages: base, Tools: tools})
			require.NoError(t, err)
			require.Equal(t, prompt, whole[:len(prompt)], "the model's turn extends the generation prompt")
			// What the model sampled: its turn up to its end token (the
			// template's glue after it is not sampled).
			turn := slices.Clone(whole[len(prompt):])
			if !fc.implicit {
				end, _ := tok.TokenID(fc.eos[0])
				i := slices.Index(turn, end)
				require.GreaterOrEqual(t, i, 0)
				turn = turn[:i+1]
			}
			for _, c := range continuousAddedCases {
				t.Run(c.name, func(t *testing.T) {
					toolFirst := c.added[0].Role == chat.RoleTool
					sampled := slices.Clone(turn)
					if fc.implicit {
						stop := "<|user|>"
						if toolFirst {
							stop = "<|observation|>"
						}
						id, _ := tok.TokenID(stop)
						sampled = append(sampled, id)
					}
					runtime := append(slices.Clone(prompt), sampled...)
					verlIDs := verlNonAssistant(t, tok, base, append(slices.Clone(base), c.added...), tools)
					m := b.MergeNonAssistant(runtime, verlIDs, toolFirst)
					delta, err := tok.EncodeDelta(ChatContext{Messages: base, Tools: tools, AddGenerationPrompt: true}, c.added)
					require.NoError(t, err)
					require.NoError(t, b.Check(runtime, delta, toolFirst))
					ours := append(slices.Clone(runtime), delta...)
					if !slices.Equal(m.Tokens, ours) {
						a, _ := tok.Decode(verlIDs, false)
						o, _ := tok.Decode(delta, false)
						t.Fatalf("verl appends %q (%d inserted, %d removed), agentrl %q", a, len(m.Inserted), m.Removed, o)
					}
				})
			}
		})
	}
}

// TestImplicitTurnEndNeedsAnEndToken: with a template whose model turn has
// no end token (GLM), the delta starts after the next message's opener only
// when that opener is an end-of-turn token the model samples; otherwise
// the delta is refused, not guessed.
func TestImplicitTurnEndNeedsAnEndToken(t *testing.T) {
	tok := familyTokenizer(t, "glm45.jinja", "<|user|>") // <|observation|> is not an end token here
	base := []chat.Message{{Role: chat.RoleUser, Content: "hi"}, {Role: chat.RoleAssistant, Content: "hello"}}
	_, err := tok.EncodeDelta(ChatContext{Messages: base, AddGenerationPrompt: true}, []chat.Message{{Role: chat.RoleTool, Content: "r"}})
	require.ErrorIs(t, err, ErrTemplateDelta)
	require.ErrorContains(t, err, "no end-of-turn token after the assistant turn")
	delta, err := tok.DeltaText(ChatContext{Messages: base, AddGenerationPrompt: true}, []chat.Message{{Role: chat.RoleUser, Content: "more"}})
	require.NoError(t, err)
	require.Equal(t, "more<|assistant|>", delta, "starts after the <|user|> the model sampled")
}
