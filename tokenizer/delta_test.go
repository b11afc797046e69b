package tokenizer

import (
	"bytes"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

// TestDeltaGolden rebuilds every multi-turn golden conversation the way an
// agent loop does: the prompt up to the first assistant turn, then for each
// assistant turn the model's tokens (its text in the full render up to and
// including the end-of-turn token, encoded on its own as the model samples
// it) followed by EncodeDelta of the messages after it. The text must equal
// the full render and the ids must equal the full render's ids, except where
// a full render merges tokens across the boundary between the generation
// prompt and the model's output (listed in boundaryMerges).
func TestDeltaGolden(t *testing.T) {
	boundaryMerges := map[string]string{
		"chat_qwen3.jsonl/whitespace_edges": "the assistant content starts with \n, which a full render merges with the prompt's \n into one token",
	}
	for _, g := range chatGoldens() {
		t.Run(filepath.Base(g.file), func(t *testing.T) {
			recs := readJSONL[chatRecord](t, g.file)
			tok := g.tok(t)
			var eos []string
			for _, id := range tok.EOSTokenIDs() {
				s, _ := tok.Token(id)
				eos = append(eos, s)
			}
			n := 0
			for _, r := range recs {
				c := chatContextFromJSON(t, r.Context)
				msgs := c.Messages
				first := slices.IndexFunc(msgs, func(m chat.Message) bool { return m.Role == chat.RoleAssistant })
				if first < 0 {
					continue
				}
				n++
				t.Run(r.Name, func(t *testing.T) {
					built, err := tok.EncodeChat(ChatContext{Messages: msgs[:first], Tools: c.Tools, Extra: c.Extra, AddGenerationPrompt: true})
					require.NoError(t, err)
					for ai := first; ai < len(msgs); {
						text, err := tok.Decode(built, false)
						require.NoError(t, err)
						require.True(t, strings.HasPrefix(r.Text, text), "before assistant message %d: %q", ai, text)
						rest := r.Text[len(text):]
						end := -1
						for _, e := range eos {
							if i := strings.Index(rest, e); i >= 0 && (end < 0 || i+len(e) < end) {
								end = i + len(e)
							}
						}
						require.Positive(t, end, "no end-of-turn token for assistant message %d", ai)
						built = append(built, tok.Encode(rest[:end])...)
						next := ai + 1
						for next < len(msgs) && msgs[next].Role != chat.RoleAssistant {
							next++
						}
						gen := c.AddGenerationPrompt
						if next < len(msgs) {
							gen = true
						}
						delta, err := tok.EncodeDelta(ChatContext{Messages: msgs[:ai+1], Tools: c.Tools, Extra: c.Extra, AddGenerationPrompt: gen}, msgs[ai+1:next])
						require.NoError(t, err)
						built = append(built, delta...)
						ai = next
					}
					text, err := tok.Decode(built, false)
					require.NoError(t, err)
					require.Equal(t, r.Text, text)
					if why, ok := boundaryMerges[filepath.Base(g.file)+"/"+r.Name]; ok {
						require.NotEqual(t, r.IDs, built, why)
					} else {
						require.Equal(t, r.IDs, built)
					}
				})
			}
			require.Positive(t, n)
		})
	}
}

// TestDeltaNotAppendOnly covers Qwen3's non-append-only rendering: a turn
// whose reasoning the model sampled is rendered without it once a new user
// query follows. The trajectory keeps the sampled tokens; the delta appends
// only the new turn, so prompt + turn + delta differs from the full render
// of the final conversation exactly by the dropped <think> block.
func TestDeltaNotAppendOnly(t *testing.T) {
	tok := qwen(t)
	user := chat.Message{Role: "user", Content: "What is 6*7?"}
	asst := chat.Message{Role: "assistant", Content: "42", ReasoningContent: "6*7 is 42."}
	user2 := chat.Message{Role: "user", Content: "And 6*8?"}

	prompt, err := tok.EncodeChat(ChatContext{Messages: []chat.Message{user}, AddGenerationPrompt: true})
	require.NoError(t, err)
	sampled := tok.Encode("<think>\n6*7 is 42.\n</think>\n\n42<|im_end|>")
	delta, err := tok.EncodeDelta(ChatContext{Messages: []chat.Message{user, asst}, AddGenerationPrompt: true}, []chat.Message{user2})
	require.NoError(t, err)
	built := slices.Concat(prompt, sampled, delta)

	got, err := tok.Decode(built, false)
	require.NoError(t, err)
	require.Equal(t, "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n<think>\n6*7 is 42.\n</think>\n\n42<|im_end|>\n"+
		"<|im_start|>user\nAnd 6*8?<|im_end|>\n<|im_start|>assistant\n", got)

	full, err := tok.ApplyChatTemplate(ChatContext{Messages: []chat.Message{user, asst, user2}, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.NotEqual(t, full, got, "Qwen3 drops the earlier <think> block in a full render")
	require.Equal(t, full, strings.Replace(got, "<think>\n6*7 is 42.\n</think>\n\n", "", 1))

	// The same holds when the sampled turn is followed by a tool result: the
	// full render keeps reasoning after the last query, so there it matches.
	call := chat.Message{Role: "assistant", Content: "", ReasoningContent: "need tool",
		ToolCalls: []chat.ToolCall{{Type: "function", Function: chat.FunctionCall{Name: "calc", Arguments: `{"x": 1}`}}}}
	res := chat.Message{Role: "tool", Content: "1"}
	prompt, err = tok.EncodeChat(ChatContext{Messages: []chat.Message{user}, AddGenerationPrompt: true})
	require.NoError(t, err)
	sampled = tok.Encode("<think>\nneed tool\n</think>\n\n<tool_call>\n{\"name\": \"calc\", \"arguments\": {\"x\": 1}}\n</tool_call><|im_end|>")
	delta, err = tok.EncodeDelta(ChatContext{Messages: []chat.Message{user, call}, AddGenerationPrompt: true}, []chat.Message{res})
	require.NoError(t, err)
	fullIDs, err := tok.EncodeChat(ChatContext{Messages: []chat.Message{user, call, res}, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, fullIDs, slices.Concat(prompt, sampled, delta))
}

func TestDeltaCases(t *testing.T) {
	tok := qwen(t)
	user := chat.Message{Role: "user", Content: "hi"}
	asst := chat.Message{Role: "assistant", Content: "hello"}
	tool := chat.Message{Role: "tool", Content: "r1"}

	cases := []struct {
		name    string
		ctx     ChatContext
		added   []chat.Message
		want    string
		wantErr string
	}{
		{name: "glue only", ctx: ChatContext{Messages: []chat.Message{user, asst}}, want: "\n"},
		{name: "generation prompt", ctx: ChatContext{Messages: []chat.Message{user, asst}, AddGenerationPrompt: true}, want: "\n<|im_start|>assistant\n"},
		{name: "user turn", ctx: ChatContext{Messages: []chat.Message{user, asst}, AddGenerationPrompt: true}, added: []chat.Message{user},
			want: "\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{name: "two tool results", ctx: ChatContext{Messages: []chat.Message{user, asst}}, added: []chat.Message{tool, tool},
			want: "\n<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr1\n</tool_response><|im_end|>\n"},
		{name: "after a user turn", ctx: ChatContext{Messages: []chat.Message{user}, AddGenerationPrompt: true}, want: "<|im_start|>assistant\n"},
		{name: "tool after tool is not append-only", ctx: ChatContext{Messages: []chat.Message{user, asst, tool}}, added: []chat.Message{tool},
			wantErr: "renders the tool message differently"},
		{name: "empty conversation", ctx: ChatContext{}, wantErr: "empty"},
		{name: "bad arguments in an added message", ctx: ChatContext{Messages: []chat.Message{user, asst}},
			added:   []chat.Message{{Role: "assistant", ToolCalls: []chat.ToolCall{{Function: chat.FunctionCall{Name: "f", Arguments: `{"x":`, ArgumentsAsObject: true}}}}},
			wantErr: `added[0]: tool_calls[0] "f": arguments are not valid JSON`},
		{name: "bad tool schema", ctx: ChatContext{Messages: []chat.Message{user, asst},
			Tools: []chat.ToolSchema{{Function: chat.FunctionSchema{Name: "g", Parameters: []byte(`{"type"`)}}}},
			wantErr: `tools[0] "g": parameters`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tok.DeltaText(c.ctx, c.added)
			if c.wantErr != "" {
				require.ErrorIs(t, err, ErrTemplateDelta)
				require.ErrorContains(t, err, c.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, c.want, got)
			ids, err := tok.EncodeDelta(c.ctx, c.added)
			require.NoError(t, err)
			require.Equal(t, tok.Encode(c.want), ids)
		})
	}
}

// TestLastIndex: the forward search returns what bytes.LastIndex returns,
// overlapping occurrences included.
func TestLastIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 2000; i++ {
		s := make([]byte, rng.IntN(40))
		for j := range s {
			s[j] = "ab"[rng.IntN(2)]
		}
		sep := make([]byte, rng.IntN(4))
		for j := range sep {
			sep[j] = "ab"[rng.IntN(2)]
		}
		require.Equal(t, bytes.LastIndex(s, sep), lastIndex(s, sep), "%q in %q", sep, s)
	}
}
