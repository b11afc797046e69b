package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/shared"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/tokenizer"
)

// These tests drive the server with the official OpenAI Go client
// (github.com/openai/openai-go): the requests are what the SDK sends and
// the responses must decode the way the SDK reads them.

const toolCallReply = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"

func openaiClient(s *httpapi.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(s.URL()+"/v1/"), option.WithAPIKey("unused"),
		option.WithHTTPClient(testClient), option.WithMaxRetries(0))
}

var weatherTool = openai.ChatCompletionToolParam{Function: shared.FunctionDefinitionParam{
	Name:        "get_weather",
	Description: openai.String("Weather in a city"),
	Parameters: openai.FunctionParameters{"type": "object",
		"properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}

// apiError unwraps the SDK's error and checks the status.
func apiError(t *testing.T, err error, status int) *openai.Error {
	t.Helper()
	var e *openai.Error
	require.True(t, errors.As(err, &e), "%v", err)
	require.Equal(t, status, e.StatusCode, e.RawJSON())
	return e
}

// askWeather asks model, through the SDK, for the weather in Paris with
// weatherTool offered, and checks that the one choice is a get_weather
// call for Paris. It returns the request and the response.
func askWeather(t *testing.T, ctx context.Context, c openai.Client, model string) (openai.ChatCompletionNewParams, *openai.ChatCompletion) {
	t.Helper()
	params := openai.ChatCompletionNewParams{
		Model:    model,
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
	return params, resp
}

// weatherAnsweredPrompt is tok's rendering of askWeather's conversation
// after the call (id callID, arguments as the model wrote them) and the
// tool's answer {"temp": 21}, with the generation prompt: the prompt the
// engine must see when the SDK sends the assistant turn back.
func weatherAnsweredPrompt(t *testing.T, tok *tokenizer.Tokenizer, callID, arguments string) []int32 {
	t.Helper()
	var tools []chat.ToolSchema
	// The SDK's FunctionParameters is a map: it sends the keys sorted.
	require.NoError(t, jsonUnmarshal(`[{"type":"function","function":{"name":"get_weather","description":"Weather in a city",
		"parameters":{"properties":{"city":{"type":"string"}},"required":["city"],"type":"object"}}}]`, &tools))
	want, err := tok.EncodeChat(tokenizer.ChatContext{Messages: []chat.Message{
		{Role: "user", Content: "Weather in Paris?"},
		{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: callID, Type: "function",
			Function: chat.FunctionCall{Name: "get_weather", Arguments: arguments, ArgumentsAsObject: true}}}},
		{Role: "tool", Content: `{"temp": 21}`, ToolCallID: callID},
	}, Tools: tools, AddGenerationPrompt: true})
	require.NoError(t, err)
	return want
}

func TestOpenAIClientToolCallRoundTrip(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := openaiClient(s)
	ctx := context.Background()

	params, resp := askWeather(t, ctx, c, "qwen3")
	msg := resp.Choices[0].Message
	require.Equal(t, "qwen3", resp.Model)

	// Echo the assistant turn back as the SDK returns it: content null with
	// tool_calls. Qwen3's template would fail on a null content ("argument
	// of type 'NoneType' is not iterable") without vLLM's normalization.
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage(`{"temp": 21}`, msg.ToolCalls[0].ID))
	_, err := c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, weatherAnsweredPrompt(t, tok, msg.ToolCalls[0].ID, `{"city": "Paris"}`), cp.last().PromptIDs)
	text, err := tok.Decode(cp.last().PromptIDs, false)
	require.NoError(t, err)
	require.Contains(t, text, "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	require.Contains(t, text, "<tool_response>\n{\"temp\": 21}\n</tool_response>")
}

func TestOpenAIClientStreamingToolCall(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "<think>\nhmm\n</think>\n\n"+toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	c := openaiClient(s)
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "qwen3",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:         []openai.ChatCompletionToolParam{weatherTool},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		acc.AddChunk(stream.Current())
		chunks++
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Greater(t, chunks, 2)
	require.Len(t, acc.Choices, 1)
	require.Equal(t, "tool_calls", acc.Choices[0].FinishReason)
	require.Len(t, acc.Choices[0].Message.ToolCalls, 1)
	require.Equal(t, "get_weather", acc.Choices[0].Message.ToolCalls[0].Function.Name)
	require.JSONEq(t, `{"city":"Paris"}`, acc.Choices[0].Message.ToolCalls[0].Function.Arguments)
	require.Positive(t, acc.Usage.CompletionTokens)
}

func TestOpenAIClientContentParts(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, "Hello.")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "qwen3",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage([]openai.ChatCompletionContentPartTextParam{{Text: "Be brief."}}),
			openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart("Hi"), openai.TextContentPart("there")}),
		},
	})
	require.NoError(t, err)
	require.Equal(t, "Hello.", resp.Choices[0].Message.Content)
	require.Equal(t, "stop", resp.Choices[0].FinishReason)
	// Text parts join with "\n", as vLLM's "string" content format does.
	want, err := tok.EncodeChat(tokenizer.ChatContext{Messages: []chat.Message{
		{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi\nthere"}}, AddGenerationPrompt: true})
	require.NoError(t, err)
	require.Equal(t, want, cp.last().PromptIDs)

	// A part the engine cannot read is refused, naming it.
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "qwen3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "https://example.com/a.png"})})},
	})
	e := apiError(t, err, 400)
	require.Equal(t, "messages[0].content[0].type", e.Param)
}

func TestOpenAIClientToolChoice(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := openaiClient(s)
	ctx := context.Background()
	base := openai.ChatCompletionNewParams{
		Model:    "qwen3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolParam{weatherTool},
	}
	for _, choice := range []openai.ChatCompletionToolChoiceOptionUnionParam{
		{OfAuto: openai.String("required")},
		openai.ChatCompletionToolChoiceOptionParamOfChatCompletionNamedToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"}),
	} {
		p := base
		p.ToolChoice = choice
		resp, err := c.Chat.Completions.New(ctx, p)
		require.NoError(t, err)
		require.Equal(t, "get_weather", resp.Choices[0].Message.ToolCalls[0].Function.Name)
	}
	p := base
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionParamOfChatCompletionNamedToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_time"})
	_, err := c.Chat.Completions.New(ctx, p)
	e := apiError(t, err, 400)
	require.Equal(t, "tool_choice", e.Param)
	require.Contains(t, e.Message, `"get_time" is not among "tools"`)

	p = base
	p.Tools = nil
	p.ToolChoice = openai.ChatCompletionToolChoiceOptionUnionParam{OfAuto: openai.String("required")}
	_, err = c.Chat.Completions.New(ctx, p)
	require.Equal(t, "tool_choice", apiError(t, err, 400).Param)
}

func TestOpenAIClientRejectsWhatItCannotHonour(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "ok")
	s := start(t, eng, httpapi.Config{Model: "qwen3", MaxModelLen: 4096, Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	ctx := context.Background()
	user := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}
	tests := []struct {
		name   string
		params openai.ChatCompletionNewParams
		status int
		param  string
		code   string
	}{
		{"top_logprobs past 20", openai.ChatCompletionNewParams{Model: "qwen3", Messages: user, Logprobs: openai.Bool(true), TopLogprobs: openai.Int(21)}, 400, "top_logprobs", "invalid_value"},
		{"presence_penalty past 2", openai.ChatCompletionNewParams{Model: "qwen3", Messages: user, PresencePenalty: openai.Float(2.5)}, 400, "presence_penalty", "invalid_value"},
		{"json mode", openai.ChatCompletionNewParams{Model: "qwen3", Messages: user,
			ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}}, 400, "response_format", "invalid_value"},
		{"unknown model", openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: user}, 404, "model", "model_not_found"},
		{"max_tokens past the context", openai.ChatCompletionNewParams{Model: "qwen3", Messages: user, MaxTokens: openai.Int(5000)}, 400, "max_tokens", "context_length_exceeded"},
		{"max_completion_tokens past the context", openai.ChatCompletionNewParams{Model: "qwen3", Messages: user, MaxCompletionTokens: openai.Int(4096)}, 400, "max_completion_tokens", "context_length_exceeded"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Chat.Completions.New(ctx, tc.params)
			e := apiError(t, err, tc.status)
			require.Equal(t, tc.param, e.Param, e.RawJSON())
			require.Equal(t, tc.code, e.Code, e.RawJSON())
			require.Equal(t, "invalid_request_error", e.Type)
		})
	}
	// Within the context, max_tokens is honoured; without it the budget is
	// what the context has left.
	_, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "qwen3", Messages: user, MaxTokens: openai.Int(100)})
	require.NoError(t, err)

	_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "qwen3",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")}, Logprobs: openai.Int(21)})
	require.Equal(t, "logprobs", apiError(t, err, 400).Param)
	_, err = c.Completions.New(ctx, openai.CompletionNewParams{Model: "davinci",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")}})
	require.Equal(t, "model_not_found", apiError(t, err, 404).Code)
}

func TestOpenAIClientModels(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "ok")
	s := start(t, eng, httpapi.Config{Model: "org/qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	ctx := context.Background()
	page, err := c.Models.List(ctx)
	require.NoError(t, err)
	require.Len(t, page.Data, 1)
	require.Equal(t, "org/qwen3", page.Data[0].ID)
	require.Equal(t, "model", string(page.Data[0].Object))
	require.Positive(t, page.Data[0].Created)
	m, err := c.Models.Get(ctx, "org/qwen3")
	require.NoError(t, err)
	require.Equal(t, "org/qwen3", m.ID)
	require.Equal(t, page.Data[0].Created, m.Created)
	_, err = c.Models.Get(ctx, "gpt-4o")
	e := apiError(t, err, 404)
	require.Equal(t, "model_not_found", e.Code)
}

func TestOpenAIClientCompletions(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, " world")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	ctx := context.Background()
	params := openai.CompletionNewParams{Model: "qwen3", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hello")},
		MaxTokens: openai.Int(20), Logprobs: openai.Int(1)}
	resp, err := c.Completions.New(ctx, params)
	require.NoError(t, err)
	require.Len(t, resp.Choices, 1)
	require.True(t, strings.HasPrefix(resp.Choices[0].Text, " world"), resp.Choices[0].Text)
	require.Equal(t, tok.Encode("Hello"), cp.last().PromptIDs)
	require.NotEmpty(t, resp.Choices[0].Logprobs.TokenLogprobs)
	require.Equal(t, int64(len(tok.Encode("Hello"))), resp.Usage.PromptTokens)

	stream := c.Completions.NewStreaming(ctx, params)
	var text strings.Builder
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			text.WriteString(ch.Text)
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, resp.Choices[0].Text, text.String())
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

func TestOpenAIClientStopStrings(t *testing.T) {
	tok := qwen(t)
	eng, _, ids := replyWith(t, tok, "Hello world. Goodbye now.")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	ctx := context.Background()

	resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "qwen3", Logprobs: openai.Bool(true),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		Stop:     openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"now", ". "}}})
	require.NoError(t, err)
	require.Equal(t, "Hello world", resp.Choices[0].Message.Content)
	require.Equal(t, "stop", resp.Choices[0].FinishReason)
	// The output ends at the token that completed the stop string.
	n := int(resp.Usage.CompletionTokens)
	require.Less(t, n, len(ids))
	require.Len(t, resp.Choices[0].Logprobs.Content, n)
	text, err := tok.Decode(ids[:n], false)
	require.NoError(t, err)
	require.Contains(t, text, ". ")
	prev, err := tok.Decode(ids[:n-1], false)
	require.NoError(t, err)
	require.NotContains(t, prev, ". ")

	// Streamed with logprobs: the same content, a logprob per token
	// kept, the same finish.
	stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "qwen3", Logprobs: openai.Bool(true),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		Stop:     openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"now", ". "}}})
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		require.True(t, acc.AddChunk(stream.Current()))
		chunks++
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Greater(t, chunks, 3, "a chunk per token, not one at the end")
	require.Equal(t, "Hello world", acc.Choices[0].Message.Content)
	require.Equal(t, "stop", acc.Choices[0].FinishReason)
	require.Len(t, acc.Choices[0].Logprobs.Content, n)

	stream = c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "qwen3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		Stop:     openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("Goodbye")}})
	acc = openai.ChatCompletionAccumulator{}
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, "Hello world. ", acc.Choices[0].Message.Content)

	// /v1/completions streamed with a stop string: the text before it and
	// the string as stop_reason in the last chunk.
	cstream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "qwen3",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")},
		Stop:   openai.CompletionNewParamsStopUnion{OfString: openai.String(" Goodbye")}, MaxTokens: openai.Int(50)})
	var ctext strings.Builder
	var last openai.CompletionChoice
	for cstream.Next() {
		for _, ch := range cstream.Current().Choices {
			ctext.WriteString(ch.Text)
			last = ch
		}
	}
	require.NoError(t, cstream.Err())
	require.NoError(t, cstream.Close())
	require.Equal(t, "Hello world.", ctext.String())
	require.Equal(t, openai.CompletionChoiceFinishReasonStop, last.FinishReason)
	require.Equal(t, `" Goodbye"`, last.JSON.ExtraFields["stop_reason"].Raw())

	cresp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "qwen3",
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hi")},
		Stop:   openai.CompletionNewParamsStopUnion{OfString: openai.String(" Goodbye")}, MaxTokens: openai.Int(50)})
	require.NoError(t, err)
	require.Equal(t, "Hello world.", cresp.Choices[0].Text)
	require.Equal(t, openai.CompletionChoiceFinishReasonStop, cresp.Choices[0].FinishReason)
	// vLLM reports the matched stop string as stop_reason.
	require.Equal(t, `" Goodbye"`, cresp.Choices[0].JSON.ExtraFields["stop_reason"].Raw())
}

func TestOpenAIClientCompletionsN(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, " world")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiClient(s)
	ctx := context.Background()
	resp, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "qwen3", N: openai.Int(3), Seed: openai.Int(7),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hello")}, MaxTokens: openai.Int(20)})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 3)
	seeds := map[uint64]bool{}
	for i, ch := range resp.Choices {
		require.Equal(t, int64(i), ch.Index)
		require.True(t, strings.HasPrefix(ch.Text, " world"), ch.Text)
	}
	cp.mu.Lock()
	reqs := cp.reqs[len(cp.reqs)-3:]
	cp.mu.Unlock()
	ids := map[string]bool{}
	for _, r := range reqs {
		ids[r.RequestID] = true
		seeds[*r.Params.Seed] = true
	}
	require.Len(t, ids, 3)
	require.Equal(t, map[uint64]bool{7: true, 8: true, 9: true}, seeds)
	require.Equal(t, 3*int64(len(tok.Encode(" world"))+1), resp.Usage.CompletionTokens)

	// Streamed, the samples' chunks interleave, each naming its index;
	// each index's text is its non-streamed text.
	stream := c.Completions.NewStreaming(ctx, openai.CompletionNewParams{Model: "qwen3", N: openai.Int(2), Seed: openai.Int(7),
		Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Hello")}, MaxTokens: openai.Int(20),
		Logprobs: openai.Int(1), StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
	texts := map[int64]string{}
	lps := map[int64]int{}
	finished := map[int64]string{}
	var streamedUsage int64
	for stream.Next() {
		cur := stream.Current()
		if cur.Usage.CompletionTokens > 0 {
			streamedUsage = cur.Usage.CompletionTokens
		}
		for _, ch := range cur.Choices {
			texts[ch.Index] += ch.Text
			lps[ch.Index] += len(ch.Logprobs.TokenLogprobs)
			if ch.FinishReason != "" {
				finished[ch.Index] = string(ch.FinishReason)
			}
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, map[int64]string{0: resp.Choices[0].Text, 1: resp.Choices[1].Text}, texts)
	n := len(tok.Encode(" world")) + 1
	require.Equal(t, map[int64]int{0: n, 1: n}, lps)
	require.Equal(t, map[int64]string{0: "stop", 1: "stop"}, finished)
	require.Equal(t, int64(2*n), streamedUsage)
}

func TestOpenAIClientChatN(t *testing.T) {
	tok := qwen(t)
	eng, _, ids := replyWith(t, tok, toolCallReply)
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	c := openaiClient(s)
	resp, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "qwen3", N: openai.Int(2),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolParam{weatherTool}, Logprobs: openai.Bool(true)})
	require.NoError(t, err)
	require.Len(t, resp.Choices, 2)
	for i, ch := range resp.Choices {
		require.Equal(t, int64(i), ch.Index)
		require.Equal(t, "tool_calls", ch.FinishReason)
		require.Equal(t, "get_weather", ch.Message.ToolCalls[0].Function.Name)
		require.Len(t, ch.Logprobs.Content, len(ids))
	}
	require.Equal(t, int64(2*len(ids)), resp.Usage.CompletionTokens)

	// Streamed: the SDK's accumulator puts each index's deltas together.
	stream := c.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "qwen3", N: openai.Int(2),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Weather in Paris?")},
		Tools:    []openai.ChatCompletionToolParam{weatherTool}, Logprobs: openai.Bool(true)})
	var acc openai.ChatCompletionAccumulator
	indexes := map[int64]bool{}
	for stream.Next() {
		cur := stream.Current()
		for _, ch := range cur.Choices {
			indexes[ch.Index] = true
		}
		require.True(t, acc.AddChunk(cur))
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.Equal(t, map[int64]bool{0: true, 1: true}, indexes)
	require.Len(t, acc.Choices, 2)
	for i, ch := range acc.Choices {
		require.Equal(t, int64(i), ch.Index)
		require.Equal(t, "tool_calls", ch.FinishReason)
		require.Len(t, ch.Message.ToolCalls, 1)
		require.Equal(t, "get_weather", ch.Message.ToolCalls[0].Function.Name)
		require.JSONEq(t, `{"city":"Paris"}`, ch.Message.ToolCalls[0].Function.Arguments)
		require.Len(t, ch.Logprobs.Content, len(ids))
	}
}
