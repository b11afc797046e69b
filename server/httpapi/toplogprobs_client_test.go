package httpapi_test

import (
	"context"
	"testing"

	openai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestOpenAIV3ChatTopLogprobs: the official client (openai-go/v3) asks
// for top_logprobs with logprobs and reads, per token, the engine's
// alternatives in OpenAI's shape (token, logprob, bytes), streamed and
// not alike; presence and frequency penalties reach the engine as sent.
func TestOpenAIV3ChatTopLogprobs(t *testing.T) {
	tok := qwen(t)
	eng, cp, ids := replyWith(t, tok, "Hello there, world.")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiV3(s)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "qwen3", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")},
		Logprobs: openai.Bool(true), TopLogprobs: openai.Int(4), PresencePenalty: openai.Float(0.5), FrequencyPenalty: openai.Float(-0.5)}
	resp, err := c.Chat.Completions.New(ctx, params)
	require.NoError(t, err)
	p := cp.last().Params
	require.Equal(t, 4, p.TopLogprobs)
	require.Equal(t, 0.5, p.PresencePenalty)
	require.Equal(t, -0.5, p.FrequencyPenalty)
	content := resp.Choices[0].Logprobs.Content
	require.Len(t, content, len(ids))
	for i, e := range content {
		want := servertest.DefaultTopLogprobs(ids[i], servertest.DefaultLogprob(ids[i], i), 4, 0)
		require.Len(t, e.TopLogprobs, 4, "token %d", i)
		for j, alt := range e.TopLogprobs {
			text, err := tok.Decode([]int32{want[j].TokenID}, false)
			require.NoError(t, err)
			require.Equal(t, text, alt.Token)
			require.InDelta(t, want[j].Logprob, alt.Logprob, 1e-6)
			require.Len(t, alt.Bytes, len(text))
		}
		require.Equal(t, e.Token, e.TopLogprobs[0].Token, "the scripted model samples its most probable token")
		require.Equal(t, e.Logprob, e.TopLogprobs[0].Logprob)
	}

	stream := c.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		require.True(t, acc.AddChunk(stream.Current()))
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	got := acc.Choices[0].Logprobs.Content
	require.Len(t, got, len(content))
	for i := range content {
		require.Equal(t, content[i].Token, got[i].Token)
		require.Len(t, got[i].TopLogprobs, len(content[i].TopLogprobs))
		for j := range content[i].TopLogprobs {
			require.Equal(t, content[i].TopLogprobs[j].Token, got[i].TopLogprobs[j].Token)
			require.Equal(t, content[i].TopLogprobs[j].Logprob, got[i].TopLogprobs[j].Logprob)
		}
	}

	// Without logprobs, top_logprobs asks the engine for nothing.
	_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "qwen3",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hi")}, TopLogprobs: openai.Int(4)})
	require.NoError(t, err)
	require.Zero(t, cp.last().Params.TopLogprobs)
}

// TestTopLogprobsEngineWithout: an engine that returns no alternatives
// when asked is a 501 naming what it lacks, not a response without them.
func TestTopLogprobsEngineWithout(t *testing.T) {
	tok := qwen(t)
	s := start(t, noTops{servertest.New(servertest.Config{Rule: servertest.Constant(tok.Encode("ok")...)})},
		httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	code, body := post(t, s.URL()+"/v1/chat/completions", `{"model":"qwen3","messages":[{"role":"user","content":"Hi"}],"logprobs":true,"top_logprobs":2}`)
	require.Equal(t, 501, code, body)
	require.Contains(t, body, "top logprobs")
}

// noTops is an engine that drops the alternatives it was asked for.
type noTops struct{ server.LLMServer }

func (n noTops) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	out, err := n.LLMServer.Generate(ctx, req)
	out.TopLogprobs = nil
	return out, err
}

// TestOpenAIV3ResponsesLogprobs: with include message.output_text.logprobs
// and top_logprobs, the official client reads each token's logprob and
// alternatives off the output_text part, and the streamed deltas carry
// the same entries, in order, that response.completed holds whole.
func TestOpenAIV3ResponsesLogprobs(t *testing.T) {
	tok := qwen(t)
	eng, cp, ids := replyWith(t, tok, "Hello there, world.")
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	c := openaiV3(s)
	ctx := context.Background()
	params := responses.ResponseNewParams{Model: "qwen3", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Hi")},
		Include: []responses.ResponseIncludable{responses.ResponseIncludableMessageOutputTextLogprobs}, TopLogprobs: openai.Int(3)}
	resp, err := c.Responses.New(ctx, params)
	require.NoError(t, err)
	require.Equal(t, 3, cp.last().Params.TopLogprobs)
	require.Len(t, resp.Output, 1)
	text := resp.Output[0].Content[0]
	require.Len(t, text.Logprobs, len(ids))
	for i, e := range text.Logprobs {
		want := servertest.DefaultTopLogprobs(ids[i], servertest.DefaultLogprob(ids[i], i), 3, 0)
		require.InDelta(t, want[0].Logprob, e.Logprob, 1e-6)
		require.Len(t, e.TopLogprobs, 3)
		for j, alt := range e.TopLogprobs {
			tokText, err := tok.Decode([]int32{want[j].TokenID}, false)
			require.NoError(t, err)
			require.Equal(t, tokText, alt.Token)
			require.InDelta(t, want[j].Logprob, alt.Logprob, 1e-6)
		}
	}

	stream := c.Responses.NewStreaming(ctx, params)
	var deltas []string
	var completed *responses.Response
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta":
			for _, l := range ev.AsResponseOutputTextDelta().Logprobs {
				deltas = append(deltas, l.Token)
			}
		case "response.completed":
			r := ev.AsResponseCompleted().Response
			completed = &r
		}
	}
	require.NoError(t, stream.Err())
	require.NoError(t, stream.Close())
	require.NotNil(t, completed)
	got := completed.Output[0].Content[0].Logprobs
	require.Len(t, got, len(text.Logprobs))
	for i := range got {
		require.Equal(t, text.Logprobs[i].Token, got[i].Token)
		require.Equal(t, text.Logprobs[i].Logprob, got[i].Logprob)
		require.Len(t, got[i].TopLogprobs, 3)
	}
	require.NotEmpty(t, deltas)
	for i, tk := range deltas {
		require.Equal(t, text.Logprobs[i].Token, tk, "delta entries follow the tokens")
	}
}
