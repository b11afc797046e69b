package httpapi_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// llamaDir is the Llama-3.1 tokenizer shared next to the repository. It is
// under Meta's licence: it is read from there, never copied into the repo.
var llamaDir = filepath.Join("..", "..", "..", "shared", "testdata", "tokenizers", "llama3_1")

var (
	llamaOnce sync.Once
	llamaTok  *tokenizer.Tokenizer
	llamaErr  error
)

func llama(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(llamaDir, "tokenizer.json")); err != nil {
		t.Skip("Llama-3.1 tokenizer not present in ../shared/testdata/tokenizers/llama3_1 (Meta licence: it is not shipped with the repository)")
	}
	llamaOnce.Do(func() { llamaTok, llamaErr = tokenizer.Load(llamaDir) })
	require.NoError(t, llamaErr)
	return llamaTok
}

// TestOpenAIClientLlamaAssistantRoundTrip echoes an assistant tool-call
// turn back as the SDK returns it (content null, tool_calls) through the
// Llama-3.1 tokenizer's own chat template, which concatenates
// message['content'] | trim: without vLLM's normalization a null content
// renders as the text "None".
func TestOpenAIClientLlamaAssistantRoundTrip(t *testing.T) {
	tok := llama(t)
	eot, ok := tok.TokenID("<|eot_id|>")
	require.True(t, ok)
	reply := append(tok.Encode(`{"name": "get_weather", "parameters": {"city": "Paris"}}`), eot)
	cp := &capture{rule: servertest.Constant(reply...)}
	eng := servertest.New(servertest.Config{Rule: cp.Rule})
	s := start(t, eng, httpapi.Config{Model: "llama", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "llama3_json"}})
	c := openaiClient(s)
	ctx := context.Background()

	params := openai.ChatCompletionNewParams{
		Model:    "llama",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolParam{weatherTool},
	}
	resp, err := c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	msg := resp.Choices[0].Message
	require.Equal(t, "tool_calls", resp.Choices[0].FinishReason)
	require.Len(t, msg.ToolCalls, 1)
	require.Equal(t, "get_weather", msg.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"city":"Paris"}`, msg.ToolCalls[0].Function.Arguments)
	require.Empty(t, msg.Content)
	for _, e := range tok.EOSTokenIDs() {
		require.Contains(t, cp.last().Params.StopTokenIDs, e)
	}

	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temp": 21}`, msg.ToolCalls[0].ID))
	resp, err = c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "tool_calls", resp.Choices[0].FinishReason)

	var tools []chat.ToolSchema
	require.NoError(t, jsonUnmarshal(`[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
		"parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}}}]`, &tools))
	want, err := tok.EncodeChat(tokenizer.ChatContext{Messages: []chat.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: msg.ToolCalls[0].ID, Type: "function",
			Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Paris"}`, ArgumentsAsObject: true}}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: msg.ToolCalls[0].ID},
	}, Tools: tools, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, want, cp.last().PromptIDs)
	text, err := tok.Decode(cp.last().PromptIDs, false)
	require.NoError(t, err)
	// The template as shipped with the tokenizer: every turn is a header,
	// the trimmed content and <|eot_id|>; the assistant turn's null content
	// is the empty string, not "None".
	require.Equal(t, "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>"+
		"<|start_header_id|>assistant<|end_header_id|>\n\n<|eot_id|>"+
		"<|start_header_id|>tool<|end_header_id|>\n\n{\"temp\": 21}<|eot_id|>"+
		"<|start_header_id|>assistant<|end_header_id|>\n\n", text)
}
