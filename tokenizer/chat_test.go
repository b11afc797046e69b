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
	raising := *tok
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

	bare, err := FromJSON([]byte(`{"model":{"type":"BPE","vocab":{"x":0}}}`))
	require.NoError(t, err)
	_, err = bare.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	require.ErrorIs(t, err, ErrNoChatTemplate)
}

// FuzzApplyChatTemplateJSON renders arbitrary context JSON with the Qwen3
// template: a result or an error, never a panic.
func FuzzApplyChatTemplateJSON(f *testing.F) {
	for _, r := range []string{
		`{"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":true}`,
		`{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"<think>a</think>b","tool_calls":[{"function":{"name":"f","arguments":{"a":[1,2.5,null]}}}]},{"role":"tool","content":"r"}],"tools":[{"type":"function","function":{"name":"f"}}]}`,
		`{"messages":[{"role":"system","content":"s"}],"enable_thinking":false}`,
		`{"messages":[{"role":"user","content":[{"type":"text","text":"parts"}]}]}`,
		`{"messages":[]}`, `{"messages":[1,"x",null]}`, `{}`, `[]`, `{"messages":[{"role":"assistant","content":null}]}`,
	} {
		f.Add([]byte(r))
	}
	tok := qwen(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		text, err := tok.ApplyChatTemplateJSON(data)
		if err == nil {
			tok.Encode(text)
		}
	})
}

// TestMessageValueMatchesJSON checks the direct conversion of typed messages
// and tools against their JSON form read by jinja.FromJSON.
func TestMessageValueMatchesJSON(t *testing.T) {
	var msgs []chat.Message
	require.NoError(t, json.Unmarshal([]byte(`[
		{"role":"user","content":"hi"},
		{"role":"user","content":""},
		{"role":"user"},
		{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":{"b":1,"a":[2.5,null,"x"]}}}]},
		{"role":"assistant","content":"x","reasoning_content":"r","tool_calls":[{"function":{"name":"g","arguments":"{\"z\": 1}"}}]},
		{"role":"tool","content":"out","tool_call_id":"c1","name":"f"},
		{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"u"}}]}
	]`), &msgs))
	var tools []chat.ToolSchema
	require.NoError(t, json.Unmarshal([]byte(`[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"b":{"type":"integer"}}},"strict":true}},
		{"function":{"name":"g"}}]`), &tools))
	render := func(v any) string {
		tmpl, err := jinja.Parse(`{{ v | tojson }}`)
		require.NoError(t, err)
		s, err := tmpl.Render(map[string]any{"v": v})
		require.NoError(t, err)
		return s
	}
	for i, m := range msgs {
		direct, err := messageValue(m)
		require.NoError(t, err)
		b, err := json.Marshal(m)
		require.NoError(t, err)
		viaJSON, err := jinja.FromJSON(b)
		require.NoError(t, err)
		require.Equal(t, render(viaJSON), render(direct), "message %d", i)
	}
	for i, s := range tools {
		direct, err := toolValue(s)
		require.NoError(t, err)
		b, err := s.MarshalJSON()
		require.NoError(t, err)
		viaJSON, err := jinja.FromJSON(b)
		require.NoError(t, err)
		require.Equal(t, render(viaJSON), render(direct), "tool %d", i)
	}
}
