package httpapi_test

import (
	"context"
	"encoding/base64"
	"os"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/vision"
)

// TestClientsSendToolResultImages: a tool result holding an image, as the
// official SDKs write it — openai-go's function_call_output with an
// input_image item, anthropic-sdk-go's tool_result with an image block —
// reaches the engine with the image and the same ids as the other.
func TestClientsSendToolResultImages(t *testing.T) {
	tok, err := vlTok()
	require.NoError(t, err)
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	png, err := os.ReadFile("../../vision/testdata/images/rgb_640x480_checker.png")
	require.NoError(t, err)
	b64 := base64.StdEncoding.EncodeToString(png)
	eng, cp, _ := replyWith(t, tok, "A checkerboard.")
	s := start(t, eng, httpapi.Config{Model: "qwen2vl", Chat: &httpapi.Chat{Tokenizer: tok, Images: qwenImages(proc)}})
	ctx := context.Background()

	fc := responses.ResponseInputItemParamOfFunctionCall("{}", "call_1", "screenshot")
	out := responses.ResponseInputItemParamOfFunctionCallOutput(responses.ResponseFunctionCallOutputItemListParam{
		{OfInputImage: &responses.ResponseInputImageContentParam{ImageURL: openai.String("data:image/png;base64," + b64)}},
		{OfInputText: &responses.ResponseInputTextContentParam{Text: "done"}},
	})
	out.OfFunctionCallOutput.CallID = openai.String("call_1")
	oc := openaiV3(s)
	_, err = oc.Responses.New(ctx, responses.ResponseNewParams{Model: "qwen2vl", MaxOutputTokens: openai.Int(20),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Take a screenshot.", responses.EasyInputMessageRoleUser), fc, out}}})
	require.NoError(t, err)
	viaResponses := cp.last()
	require.NotNil(t, viaResponses.Vision)
	require.Len(t, viaResponses.Vision.Images, 1)
	require.Equal(t, png, viaResponses.Vision.Images[0].Data)

	result := anthropic.ToolResultBlockParam{ToolUseID: "call_1", Content: []anthropic.ToolResultBlockParamContentUnion{
		{OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
			OfBase64: &anthropic.Base64ImageSourceParam{Data: b64, MediaType: anthropic.Base64ImageSourceMediaTypeImagePNG}}}},
		{OfText: &anthropic.TextBlockParam{Text: "done"}},
	}}
	ac := anthropicClient(s)
	_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "qwen2vl", MaxTokens: 20, Messages: []anthropic.MessageParam{
		anthropic.NewUserMessage(anthropic.NewTextBlock("Take a screenshot.")),
		anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("call_1", map[string]any{}, "screenshot")),
		anthropic.NewUserMessage(anthropic.ContentBlockParamUnion{OfToolResult: &result}),
	}})
	require.NoError(t, err)
	viaMessages := cp.last()
	require.NotNil(t, viaMessages.Vision)
	require.Equal(t, png, viaMessages.Vision.Images[0].Data)
	require.Equal(t, viaResponses.PromptIDs, viaMessages.PromptIDs, "the same ids through both SDKs")
}
