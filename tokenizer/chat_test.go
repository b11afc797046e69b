package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tokenizer/jinja"
)

type chatRecord struct {
	Name    string          `json:"name"`
	Context json.RawMessage `json:"context"`
	Text    string          `json:"text"`
	IDs     []int32         `json:"ids"`
	Error   string          `json:"error"`
}

// chatContextFromJSON reads a golden context into the typed ChatContext:
// messages and tools through the chat package, other keys as extras.
func chatContextFromJSON(t testing.TB, raw json.RawMessage) ChatContext {
	t.Helper()
	var fields map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(raw, &fields))
	var c ChatContext
	for k, v := range fields {
		switch k {
		case "messages":
			require.NoError(t, json.Unmarshal(v, &c.Messages))
		case "tools":
			require.NoError(t, json.Unmarshal(v, &c.Tools))
		case "add_generation_prompt":
			require.NoError(t, json.Unmarshal(v, &c.AddGenerationPrompt))
		default:
			var x any
			require.NoError(t, json.Unmarshal(v, &x))
			if c.Extra == nil {
				c.Extra = map[string]any{}
			}
			c.Extra[k] = x
		}
	}
	return c
}

func chatGoldens() []struct {
	file string
	tok  func(testing.TB) *Tokenizer
} {
	return []struct {
		file string
		tok  func(testing.TB) *Tokenizer
	}{
		{filepath.Join(sharedGolden, "chat_qwen3.jsonl"), qwen},
		{filepath.Join(sharedGolden, "chat_llama3_1.jsonl"), llama},
	}
}

func TestChatGolden(t *testing.T) {
	for _, g := range chatGoldens() {
		t.Run(filepath.Base(g.file), func(t *testing.T) {
			recs := readJSONL[chatRecord](t, g.file)
			tok := g.tok(t)
			for _, r := range recs {
				t.Run(r.Name, func(t *testing.T) {
					// Raw JSON path: the context reaches the template as written.
					text, err := tok.ApplyChatTemplateJSON(r.Context)
					if r.Error != "" {
						require.ErrorContains(t, err, r.Error)
						return
					}
					require.NoError(t, err)
					require.Equal(t, r.Text, text)
					require.Equal(t, r.IDs, tok.Encode(text))

					// Typed path: chat.Message / chat.ToolSchema values.
					c := chatContextFromJSON(t, r.Context)
					ids, err := tok.EncodeChat(c)
					require.NoError(t, err)
					require.Equal(t, r.IDs, ids)
				})
			}
		})
	}
}

func TestChatTemplateErrors(t *testing.T) {
	tok := qwen(t)
	_, err := tok.ApplyChatTemplateJSON([]byte(`{"messages": 3}`))
	require.ErrorContains(t, err, "messages")
	_, err = tok.ApplyChatTemplateJSON([]byte(`[1]`))
	require.ErrorContains(t, err, "JSON object")
	_, err = tok.ApplyChatTemplateJSON([]byte(`{"messages": [`))
	require.Error(t, err)
	_, err = tok.ApplyChatTemplateJSON([]byte(`{"messages": [], "add_generation_prompt": "yes"}`))
	require.ErrorContains(t, err, "add_generation_prompt")

	// raise_exception in a template is a *jinja.Exception carrying its message.
	raising, err := FromJSON(readGunzip(t, filepath.Join("testdata", "qwen3", "tokenizer.json.gz")))
	require.NoError(t, err)
	raising.chat.def, raising.chat.defErr = jinja.Parse(`{% if messages[0].role != 'system' %}{{ raise_exception('first message must be system, got ' + messages[0].role) }}{% endif %}ok`)
	require.NoError(t, raising.chat.defErr)
	_, err = raising.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	var exc *jinja.Exception
	require.ErrorAs(t, err, &exc)
	require.Equal(t, "first message must be system, got user", exc.Message)
	_, err = raising.EncodeChat(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	require.ErrorAs(t, err, &exc)
	out, err := raising.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "system", Content: "x"}}})
	require.NoError(t, err)
	require.Equal(t, "ok", out)

	bare, err := FromJSON(readGunzip(t, filepath.Join("testdata", "qwen3", "tokenizer.json.gz")))
	require.NoError(t, err)
	_, err = bare.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	require.ErrorIs(t, err, ErrNoChatTemplate)
}
