package tokenizer

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
)

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

const configTokenizerJSON = `{"added_tokens":[
  {"id":3,"content":"<s>","special":true,"normalized":false,"single_word":false,"lstrip":false,"rstrip":false},
  {"id":4,"content":"</s>","special":true,"normalized":false,"single_word":false,"lstrip":false,"rstrip":false},
  {"id":5,"content":"<eot>","special":true,"normalized":false,"single_word":false,"lstrip":false,"rstrip":false}],
  "pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"use_regex":true},"decoder":{"type":"ByteLevel"},
  "model":{"type":"BPE","vocab":{"a":0,"b":1,"Ġ":2},"merges":[]}}`

func TestConfigNamedTemplatesAndSpecialTokens(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"tokenizer.json": configTokenizerJSON,
		"tokenizer_config.json": `{
  "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false},
  "eos_token": "</s>", "pad_token": null, "add_bos_token": true,
  "additional_special_tokens": ["<eot>", {"content": "<s>"}],
  "chat_template": [
    {"name": "default", "template": "{{ bos_token }}default:{% for m in messages %}{{ m.content }}{% endfor %}{{ eos_token }}"},
    {"name": "tool_use", "template": "tools:{{ tools | length }}:{{ additional_special_tokens | join(',') }}"}]}`,
		"generation_config.json": `{"eos_token_id": [5, 4]}`,
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"default", "tool_use"}, tok.ChatTemplateNames())
	bos, ok := tok.SpecialToken("bos_token")
	require.True(t, ok)
	require.Equal(t, "<s>", bos)
	_, ok = tok.SpecialToken("pad_token")
	require.False(t, ok)
	require.True(t, tok.AddBOSToken())
	require.False(t, tok.AddEOSToken())
	require.Equal(t, []int32{4, 5}, tok.EOSTokenIDs(), "eos_token first, then generation_config's")

	msgs := []chat.Message{{Role: "user", Content: "ab"}}
	out, err := tok.ApplyChatTemplate(ChatContext{Messages: msgs})
	require.NoError(t, err)
	require.Equal(t, "<s>default:ab</s>", out)
	out, err = tok.ApplyChatTemplate(ChatContext{Messages: msgs, Tools: []chat.ToolSchema{{Function: chat.FunctionSchema{Name: "f"}}}})
	require.NoError(t, err)
	require.Equal(t, "tools:1:<eot>,<s>", out, "transformers picks tool_use when tools are given")
	ids, err := tok.EncodeChat(ChatContext{Messages: msgs})
	require.NoError(t, err)
	require.Equal(t, []int32{3, 0, 0, 1, 4}, ids, "<s>, the a of default, ab, </s> (other letters are not in the vocab)")
}

func TestConfigChatTemplateFile(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"tokenizer.json":        configTokenizerJSON,
		"tokenizer_config.json": `{"chat_template": "from config", "eos_token": "<eot>"}`,
		"chat_template.jinja":   "from file {{ messages | length }}",
	})
	tok, err := Load(dir)
	require.NoError(t, err)
	out, err := tok.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	require.NoError(t, err)
	require.Equal(t, "from file 1", out)
	require.Equal(t, []int32{5, 4}, tok.EOSTokenIDs(), "<eot> (eos_token), then </s> as a known end-of-sequence token")
}

func TestConfigErrors(t *testing.T) {
	cases := []struct {
		name   string
		config string
		gen    string
		want   string
	}{
		{"bad json", `{`, "", "tokenizer_config.json"},
		{"bad special token", `{"eos_token": 5}`, "", "eos_token"},
		{"bad chat_template", `{"chat_template": 5}`, "", "chat_template"},
		{"bad add_bos", `{"add_bos_token": "yes"}`, "", "add_bos_token"},
		{"bad generation config", `{}`, `{"eos_token_id": "x"}`, "eos_token_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"tokenizer.json": configTokenizerJSON, "tokenizer_config.json": c.config}
			if c.gen != "" {
				files["generation_config.json"] = c.gen
			}
			_, err := Load(writeFiles(t, files))
			require.ErrorContains(t, err, c.want)
		})
	}
	// A template that does not parse fails rendering, not loading.
	tok, err := Load(writeFiles(t, map[string]string{"tokenizer.json": configTokenizerJSON, "tokenizer_config.json": `{"chat_template": "{% if %}"}`}))
	require.NoError(t, err)
	_, err = tok.ApplyChatTemplate(ChatContext{Messages: []chat.Message{{Role: "user", Content: "x"}}})
	require.ErrorContains(t, err, "chat template")
}
