package httpapi_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// streamOf starts a gated engine behind a server with the Qwen3 tokenizer
// and posts body to path: each token is emitted only once the test has
// read the previous one's event, so a server that held events back would
// never finish (the context's deadline fails the test then).
func streamOf(t *testing.T, text, path, body string) (*gated, []int32, *sseReader) {
	t.Helper()
	tok := qwen(t)
	ids := tok.Encode(text)
	g := &gated{LLMServer: servertest.New(servertest.Config{}), tokens: ids, seen: make(chan struct{})}
	s := start(t, g, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	resp := streamPost(t, ctx, s.URL()+path, body)
	t.Cleanup(func() { resp.Body.Close() })
	return g, ids, &sseReader{t: t, r: resp.Body}
}

// pieces decodes each id alone.
func pieces(t *testing.T, ids []int32) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		var err error
		out[i], err = qwen(t).Decode([]int32{id}, true)
		require.NoError(t, err)
	}
	return out
}

type completionChunk struct {
	Choices []struct {
		Index    int    `json:"index"`
		Text     string `json:"text"`
		Logprobs *struct {
			Tokens        []string  `json:"tokens"`
			TokenLogprobs []float32 `json:"token_logprobs"`
			TextOffset    []int     `json:"text_offset"`
		} `json:"logprobs"`
		TokenIDs       []int32 `json:"token_ids"`
		PromptTokenIDs []int32 `json:"prompt_token_ids"`
		FinishReason   *string `json:"finish_reason"`
		StopReason     any     `json:"stop_reason"`
	} `json:"choices"`
}

// /v1/completions with a stop string, logprobs and token ids: each token's
// event (its text, logprob and id) arrives while the engine waits, except
// where the text may start the stop string; the token completing it ends
// the generation (the engine emits no more) with finish_reason "stop" and
// the string as stop_reason.
func TestCompletionsStreamStopLogprobsIDsIncremental(t *testing.T) {
	g, ids, rd := streamOf(t, "one two. three four five", "/v1/completions",
		`{"prompt":[1],"max_tokens":100,"stream":true,"stop":". th","logprobs":1,"return_token_ids":true}`)
	require.Equal(t, []string{"one", " two", ".", " three", " four", " five"}, pieces(t, ids), "the tokenization this test is written for")
	// The text of each event; "." is held back (it may start ". th").
	wantText := []string{"one", " two", ""}
	offset := 0
	for i, want := range wantText {
		var ev completionChunk
		require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
		ch := ev.Choices[0]
		require.Equal(t, want, ch.Text, "token %d", i)
		require.Nil(t, ch.FinishReason)
		require.Equal(t, ids[i:i+1], ch.TokenIDs)
		if i == 0 {
			require.Equal(t, []int32{1}, ch.PromptTokenIDs)
		} else {
			require.Nil(t, ch.PromptTokenIDs)
		}
		require.Equal(t, []float32{-float32(i+1) / 4}, ch.Logprobs.TokenLogprobs)
		require.Equal(t, []int{offset}, ch.Logprobs.TextOffset)
		offset += len(ch.Logprobs.Tokens[0])
		g.seen <- struct{}{}
	}
	// " three" completes ". th": its event is the last, with the text up
	// to the stop string.
	var last completionChunk
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &last))
	ch := last.Choices[0]
	require.Equal(t, "", ch.Text)
	require.Equal(t, ids[3:4], ch.TokenIDs)
	var fin completionChunk
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &fin))
	require.Equal(t, "stop", *fin.Choices[0].FinishReason)
	require.Equal(t, ". th", fin.Choices[0].StopReason)
	require.Empty(t, fin.Choices[0].TokenIDs)
	require.Equal(t, "[DONE]", rd.next())
	require.Equal(t, int32(4), g.emitted.Load(), "the engine stopped at the token that completed the stop string")
}

// With include_stop_str_in_output nothing is held back and the text ends
// after the stop string.
func TestCompletionsStreamStopIncluded(t *testing.T) {
	g, _, rd := streamOf(t, "one two. three four five", "/v1/completions",
		`{"prompt":[1],"max_tokens":100,"stream":true,"stop":[". th"],"include_stop_str_in_output":true}`)
	var text []string
	for i := 0; ; i++ {
		var ev completionChunk
		require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
		text = append(text, ev.Choices[0].Text)
		if ev.Choices[0].FinishReason != nil {
			require.Equal(t, "stop", *ev.Choices[0].FinishReason)
			break
		}
		if i < 3 { // the fourth token completes the stop string
			g.seen <- struct{}{}
		}
	}
	require.Equal(t, []string{"one", " two", ".", " th", ""}, text)
	require.Equal(t, "[DONE]", rd.next())
}

// /inference/v1/generate streams an event per token, in vLLM's shape,
// while the engine waits; then the finish and, on include_usage, the usage.
func TestVLLMGenerateStreamIsIncremental(t *testing.T) {
	g, ids, rd := streamOf(t, "one two three", "/inference/v1/generate",
		`{"request_id":"r1","token_ids":[1,2],"sampling_params":{"max_tokens":10,"logprobs":1},"stream":true,"stream_options":{"include_usage":true}}`)
	type choice struct {
		Index    int `json:"index"`
		Logprobs *struct {
			Content []struct {
				TokenID int32   `json:"token_id"`
				Logprob float32 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		FinishReason *string `json:"finish_reason"`
		TokenIDs     []int32 `json:"token_ids"`
	}
	type event struct {
		RequestID string   `json:"request_id"`
		Choices   []choice `json:"choices"`
		Usage     *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	for i := range ids {
		var ev event
		raw := rd.next()
		require.NoError(t, json.Unmarshal([]byte(raw), &ev))
		require.Contains(t, raw, `"finish_reason":null`)
		require.Equal(t, "r1", ev.RequestID)
		require.Equal(t, ids[i:i+1], ev.Choices[0].TokenIDs)
		require.Equal(t, ids[i], ev.Choices[0].Logprobs.Content[0].TokenID)
		require.Equal(t, -float32(i+1)/4, ev.Choices[0].Logprobs.Content[0].Logprob)
		if i+1 < len(ids) {
			g.seen <- struct{}{}
		}
	}
	var fin event
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &fin))
	require.Equal(t, "length", *fin.Choices[0].FinishReason)
	require.Empty(t, fin.Choices[0].TokenIDs)
	var u event
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &u))
	require.Empty(t, u.Choices)
	require.Equal(t, 2, u.Usage.PromptTokens)
	require.Equal(t, len(ids), u.Usage.CompletionTokens)
	require.Equal(t, "[DONE]", rd.next())
}

type chatChunk struct {
	PromptTokenIDs []int32 `json:"prompt_token_ids"`
	Choices        []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int `json:"index"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float32 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
		TokenIDs     []int32 `json:"token_ids"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// Chat with a stop string, logprobs and token ids streams a delta per
// token while the engine waits; the stop string ends the turn.
func TestChatStreamStopLogprobsIDsIncremental(t *testing.T) {
	g, ids, rd := streamOf(t, "one two. three four five", "/v1/chat/completions",
		`{"messages":[{"role":"user","content":"count"}],"stream":true,"stop":". th","logprobs":true,"return_token_ids":true}`)
	var role chatChunk
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &role))
	require.Equal(t, "assistant", role.Choices[0].Delta.Role)
	require.NotEmpty(t, role.PromptTokenIDs)
	for i, want := range []string{"one", " two", ""} {
		var ev chatChunk
		require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
		ch := ev.Choices[0]
		if want == "" {
			require.Nil(t, ch.Delta.Content)
		} else {
			require.Equal(t, want, *ch.Delta.Content)
		}
		require.Equal(t, ids[i:i+1], ch.TokenIDs)
		require.Len(t, ch.Logprobs.Content, 1)
		require.Equal(t, -float32(i+1)/4, ch.Logprobs.Content[0].Logprob)
		g.seen <- struct{}{}
	}
	var ev chatChunk
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
	require.Equal(t, ids[3:4], ev.Choices[0].TokenIDs)
	var fin chatChunk
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &fin))
	require.Equal(t, "stop", *fin.Choices[0].FinishReason)
	require.Equal(t, "[DONE]", rd.next())
	require.Equal(t, int32(4), g.emitted.Load())
}

// A tool call's delta leaves as soon as the call is closed: the engine
// emits the tokens up to the end of the first call, then waits, and the
// client gets the content and that call before it lets the engine go on.
func TestChatStreamToolCallIncremental(t *testing.T) {
	tok := qwen(t)
	first := tok.Encode("Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>")
	second := tok.Encode("\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}\n</tool_call>")
	ids := append(append([]int32{}, first...), second...)
	g := &gated{LLMServer: servertest.New(servertest.Config{}), tokens: ids, free: len(first), seen: make(chan struct{})}
	s := start(t, g, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := streamPost(t, ctx, s.URL()+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"weather?"}],"stream":true,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	var content string
	var calls []string
	read := func() *string {
		var ev chatChunk
		require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
		ch := ev.Choices[0]
		if ch.Delta.Content != nil {
			content += *ch.Delta.Content
		}
		for _, tc := range ch.Delta.ToolCalls {
			require.Equal(t, len(calls), tc.Index)
			require.Equal(t, "get_weather", tc.Function.Name)
			calls = append(calls, tc.Function.Arguments)
		}
		return ch.FinishReason
	}
	for len(calls) == 0 {
		require.Nil(t, read())
	}
	require.Equal(t, "Let me check.", content)
	require.Equal(t, int32(len(first)), g.emitted.Load(), "the call left while the engine waited")
	// Let the engine finish: the second call and the finish follow.
	go func() {
		for range second {
			select {
			case g.seen <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
	}()
	for {
		if f := read(); f != nil {
			require.Equal(t, "length", *f, "gated ends at its last token, not an end-of-turn token")
			break
		}
	}
	require.Equal(t, "[DONE]", rd.next())
	require.Equal(t, []string{`{"city": "Paris"}`, `{"city": "Rome"}`}, calls)
}
