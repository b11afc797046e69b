package tokenizertest_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/parser"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/bpetrain"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
)

func TestQwen(t *testing.T) {
	tok, err := tokenizertest.Qwen()
	require.NoError(t, err)
	// 256 byte tokens, then Qwen's added tokens in bpetrain's order.
	require.Equal(t, 256+len(bpetrain.SpecialTokens), tok.VocabSize())
	for i, at := range bpetrain.SpecialTokens {
		id, ok := tok.TokenID(at.Content)
		require.True(t, ok, at.Content)
		require.Equal(t, int32(256+i), id, at.Content)
		require.Equal(t, at.Special, tok.IsSpecial(id), at.Content)
	}
	imEnd, _ := tok.TokenID("<|im_end|>")
	require.Contains(t, tok.EOSTokenIDs(), imEnd)

	// One token per byte; markers written in text are their ids.
	for _, text := range []string{"hello", "héllo, 世界", "6*7 = 42.\n"} {
		ids := tok.Encode(text)
		require.Len(t, ids, len(text), text)
		back, err := tok.Decode(ids, false)
		require.NoError(t, err)
		require.Equal(t, text, back)
	}
	require.Equal(t, append(tok.Encode("42"), imEnd), tok.Encode("42<|im_end|>"))

	// Qwen's chat format, and tool calls the hermes parser reads.
	prompt, err := tok.ApplyChatTemplate(tokenizer.ChatContext{Messages: []chat.Message{
		{Role: chat.RoleSystem, Content: "Be brief."},
		{Role: chat.RoleUser, Content: "6*7?"},
	}, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\n6*7?<|im_end|>\n<|im_start|>assistant\n", prompt)
	p, err := parser.New("hermes", parser.Options{})
	require.NoError(t, err)
	reply := "<tool_call>\n{\"name\": \"calculator\", \"arguments\": {\"expression\": \"6*7\"}}\n</tool_call><|im_end|>"
	text, err := tok.Decode(tok.Encode(reply), false)
	require.NoError(t, err)
	res := p.Parse(text, nil)
	require.Empty(t, res.Errors)
	require.Len(t, res.Calls, 1)
	require.Equal(t, "calculator", res.Calls[0].Function.Name)

	// Built once, shared by concurrent callers.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			again, err := tokenizertest.Qwen()
			if err == nil && again != tok {
				t.Error("Qwen built a second tokenizer")
			}
		}()
	}
	wg.Wait()
}
