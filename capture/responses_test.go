package capture_test

import (
	"context"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/capture"
)

// codex speaks only the Responses API: the same conversation through it,
// with the official client, is one exact trajectory too.
func TestResponsesClientConversationIsOneExactTrajectory(t *testing.T) {
	tok := qwen(t)
	r := newRig(t, tok, newScript(t, tok, weatherReplies[0], weatherReplies[2]))
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	c := r.client(ro.OpenAIBaseURL, ro.Key)
	tool := responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{Name: "get_weather",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}
	params := responses.ResponseNewParams{Model: "agentrl", Tools: []responses.ToolUnionParam{tool},
		Instructions: openai.String("You are terse."),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")}}
	resp, err := c.Responses.New(ctx, params)
	require.NoError(t, err)
	var call responses.ResponseFunctionToolCall
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			call = it.AsFunctionCall()
		}
	}
	require.Equal(t, "get_weather", call.Name)
	fc := call.ToParam()
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp": 21}`)
	out.OfFunctionCallOutput.CallID = openai.String(call.CallID)
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
		{OfFunctionCall: &fc}, out}}
	stream := c.Responses.NewStreaming(ctx, params)
	completed := false
	for stream.Next() {
		completed = completed || stream.Current().Type == "response.completed"
	}
	require.NoError(t, stream.Err())
	require.True(t, completed)

	trajs, rep := rebuild(t, r, ro.ID)
	require.Len(t, trajs, 1, "%+v", rep)
	tr := trajs[0]
	require.Equal(t, 2, tr.NumTurns)
	require.Equal(t, len(r.eng.outs[0].TokenIDs)+len(r.eng.outs[1].TokenIDs), tr.MaskOnes())
	seq := append(append([]int32{}, r.eng.reqs[1].PromptIDs...), r.eng.outs[1].TokenIDs...)
	require.Equal(t, seq, append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...))
	recs, err := r.c.Records(ctx, ro.ID)
	require.NoError(t, err)
	require.Equal(t, "responses", recs[len(recs)-1].Call.Dialect)
}
