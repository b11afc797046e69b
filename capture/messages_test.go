package capture_test

import (
	"context"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
)

// Claude Code speaks the Anthropic Messages API: a tool round trip through
// it, with the official Go client (non-streamed, then streamed), is one
// exact trajectory, and a call with another rollout's key or none is
// refused in Anthropic's error shape.
func TestMessagesClientConversationIsOneExactTrajectory(t *testing.T) {
	tok := qwen(t)
	r := newRig(t, tok, newScript(t, tok, weatherReplies[0], weatherReplies[2]))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	client := func(key string) anthropic.Client {
		return anthropic.NewClient(option.WithoutEnvironmentDefaults(), option.WithBaseURL(ro.AnthropicBaseURL+"/"),
			option.WithAPIKey(key), option.WithHTTPClient(r.model.Client()), option.WithMaxRetries(0))
	}
	c := client(ro.Key)
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "get_weather",
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}
	params := anthropic.MessageNewParams{Model: "agentrl", MaxTokens: 200, Tools: []anthropic.ToolUnionParam{tool},
		System:   []anthropic.TextBlockParam{{Text: "You are terse."}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Weather in Paris?"))}}
	msg, err := c.Messages.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, anthropic.StopReasonToolUse, msg.StopReason)
	var useID string
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			useID = b.ID
		}
	}
	require.NotEmpty(t, useID)
	params.Messages = append(params.Messages, msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock(useID, `{"temp": 21}`, false)))
	stream := c.Messages.NewStreaming(ctx, params)
	var final anthropic.Message
	for stream.Next() {
		require.NoError(t, final.Accumulate(stream.Current()))
	}
	require.NoError(t, stream.Err())
	require.Equal(t, anthropic.StopReasonEndTurn, final.StopReason)

	// Refused, recorded nowhere: no key, a wrong key.
	for _, key := range []string{"", "sk-not-a-rollout-key"} {
		bad := client(key)
		_, err := bad.Messages.New(ctx, params)
		var apiErr *anthropic.Error
		require.ErrorAs(t, err, &apiErr)
		require.Equal(t, 401, apiErr.StatusCode)
	}

	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	tr := trajs[0]
	require.Equal(t, len(r.eng.outs[0].TokenIDs)+len(r.eng.outs[1].TokenIDs), tr.MaskOnes())
	seq := append(append([]int32{}, r.eng.reqs[1].PromptIDs...), r.eng.outs[1].TokenIDs...)
	require.Equal(t, seq, append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...))
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	require.Equal(t, "messages", recs[len(recs)-1].Call.Dialect)
}
