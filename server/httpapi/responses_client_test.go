package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
)

// These tests drive /v1/responses with the official OpenAI Go client
// (github.com/openai/openai-go/v3): the requests are what the SDK sends,
// and the replies and events must decode as the SDK reads them.

func openaiV3(s *httpapi.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(testClient), option.WithMaxRetries(0))
}

// weatherResponsesTool is weatherTool as a Responses function tool.
var weatherResponsesTool = responses.ToolUnionParam{OfFunction: &responses.FunctionToolParam{
	Name:        "get_weather",
	Description: openai.String("Weather in a city"),
	Parameters: map[string]any{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}

func weatherResponsesParams() responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "qwen3",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Weather in Paris?")},
		Tools: []responses.ToolUnionParam{weatherResponsesTool},
	}
}

// functionCalls are the function_call items of resp.
func functionCalls(resp *responses.Response) []responses.ResponseFunctionToolCall {
	var calls []responses.ResponseFunctionToolCall
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			calls = append(calls, it.AsFunctionCall())
		}
	}
	return calls
}

func TestResponsesClientToolCallRoundTrip(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := openaiV3(s)
	ctx := context.Background()

	params := weatherResponsesParams()
	resp, err := c.Responses.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, responses.ResponseStatusCompleted, resp.Status)
	require.Equal(t, "qwen3", resp.Model)
	calls := functionCalls(resp)
	require.Len(t, calls, 1)
	require.Equal(t, "get_weather", calls[0].Name)
	require.JSONEq(t, `{"city":"Paris"}`, calls[0].Arguments)
	require.Regexp(t, `^call_`, calls[0].CallID)
	require.Regexp(t, `^resp_`, resp.ID)
	require.Positive(t, resp.Usage.InputTokens)
	require.Positive(t, resp.Usage.OutputTokens)

	// The second turn as a harness sends it: the whole conversation, the
	// call echoed back as an input item and its output.
	fc := calls[0].ToParam()
	out := responses.ResponseInputItemParamOfFunctionCallOutput(`{"temp": 21}`)
	out.OfFunctionCallOutput.CallID = openai.String(calls[0].CallID)
	params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Weather in Paris?", responses.EasyInputMessageRoleUser),
		{OfFunctionCall: &fc},
		out,
	}}
	_, err = c.Responses.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, weatherAnsweredPrompt(t, tok, calls[0].CallID, calls[0].Arguments), cp.last().PromptIDs)
}

func TestResponsesClientStreamingToolCall(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "<think>\nhmm\n</think>\n\nLet me check.\n"+toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	c := openaiV3(s)
	ctx := context.Background()

	whole, err := c.Responses.New(ctx, weatherResponsesParams())
	require.NoError(t, err)

	stream := c.Responses.NewStreaming(ctx, weatherResponsesParams())
	var (
		seq                   []int64
		types                 []string
		text, reasoning, args string
		completed             *responses.Response
	)
	for stream.Next() {
		ev := stream.Current()
		seq = append(seq, ev.SequenceNumber)
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			text += ev.Delta
		case "response.reasoning_text.delta":
			reasoning += ev.Delta
		case "response.function_call_arguments.delta":
			args += ev.Delta
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			completed = &r
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	for i, n := range seq {
		require.Equal(t, int64(i), n, "sequence numbers count from 0")
	}
	require.Equal(t, []string{"response.created", "response.in_progress"}, types[:2])
	require.Equal(t, "response.completed", types[len(types)-1])
	require.Equal(t, "hmm", reasoning)
	require.Equal(t, "Let me check.", text)
	require.JSONEq(t, `{"city":"Paris"}`, args)
	require.NotNil(t, completed)
	require.JSONEq(t, normalizedResponse(t, whole.RawJSON()), normalizedResponse(t, completed.RawJSON()))
}

// normalizedResponse is a Responses reply with its ids and clock pinned.
func normalizedResponse(t *testing.T, raw string) string {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw), &v))
	v["id"], v["created_at"] = "resp", 0
	for _, it := range v["output"].([]any) {
		item := it.(map[string]any)
		item["id"] = item["type"]
		if _, ok := item["call_id"]; ok {
			item["call_id"] = "call"
		}
	}
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

func TestResponsesClientErrors(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "hi")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := openaiV3(s)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		edit   func(*responses.ResponseNewParams)
		status int
		param  string
	}{
		"previous_response_id": {func(p *responses.ResponseNewParams) { p.PreviousResponseID = openai.String("resp_x") }, 400, "previous_response_id"},
		"store":                {func(p *responses.ResponseNewParams) { p.Store = openai.Bool(true) }, 400, "store"},
		"built-in tool": {func(p *responses.ResponseNewParams) {
			p.Tools = []responses.ToolUnionParam{{OfWebSearch: &responses.WebSearchToolParam{Type: responses.WebSearchToolTypeWebSearch}}}
		}, 400, "tools[0].type"},
		"model": {func(p *responses.ResponseNewParams) { p.Model = "other" }, 404, "model"},
	} {
		t.Run(name, func(t *testing.T) {
			p := weatherResponsesParams()
			tc.edit(&p)
			_, err := c.Responses.New(ctx, p)
			e := apiErrorV3(t, err, tc.status)
			require.Equal(t, tc.param, e.Param)
		})
	}
}

func apiErrorV3(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var e *openai.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, status, e.StatusCode, e.RawJSON())
	return e
}
