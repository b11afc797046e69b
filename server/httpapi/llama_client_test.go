package httpapi_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// llamaTokenizer is the Llama-3.1 tokenizer shared next to the repository.
// It is under Meta's licence: it is read from there, never copied into the
// repo.
var llamaTokenizer = &sharedTokenizer{name: "llama3_1",
	missing: "Llama-3.1 tokenizer not present in ../shared/testdata/tokenizers/llama3_1 (Meta licence: it is not shipped with the repository)"}

func llama(t *testing.T) *tokenizer.Tokenizer {
	t.Helper()
	return llamaTokenizer.load(t)
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

	params, resp := askWeather(t, ctx, c, "llama")
	msg := resp.Choices[0].Message
	require.Empty(t, msg.Content)
	for _, e := range tok.EOSTokenIDs() {
		require.Contains(t, cp.last().Params.StopTokenIDs, e)
	}

	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temp": 21}`, msg.ToolCalls[0].ID))
	resp, err := c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, "tool_calls", resp.Choices[0].FinishReason)

	require.Equal(t, weatherAnsweredPrompt(t, tok, msg.ToolCalls[0].ID, `{"city":"Paris"}`), cp.last().PromptIDs)
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
