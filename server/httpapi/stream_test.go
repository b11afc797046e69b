package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// gated is a streaming engine that emits one token, then waits for the
// test to say it saw it: a stream that held its bytes back until the end
// would never let it go on (the request's deadline ends the test then).
type gated struct {
	server.LLMServer
	tokens []int32
	free   int // tokens emitted before the first wait (at least 1)
	seen   chan struct{}
	// emitted counts the tokens handed to emit: a generation ended early
	// (a stop string) emits fewer than tokens.
	emitted atomic.Int32
}

// gatedLogprob is the logprob gated gives its i-th token.
func gatedLogprob(i int) float32 { return -float32(i+1) / 4 }

func (g *gated) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	out := server.TokenOutput{StopReason: server.StopLength, PromptTokens: len(req.PromptIDs)}
	for i, t := range g.tokens {
		if i >= max(g.free, 1) {
			select {
			case <-g.seen:
			case <-ctx.Done():
				return out, ctx.Err()
			}
		}
		out.TokenIDs = append(out.TokenIDs, t)
		c := server.Chunk{TokenIDs: []int32{t}}
		if req.Params.Logprobs {
			c.Logprobs = []float32{gatedLogprob(i)}
			out.Logprobs = append(out.Logprobs, c.Logprobs[0])
		}
		g.emitted.Add(1)
		if err := emit(c); err != nil {
			return out, err
		}
	}
	return out, nil
}

// sseReader reads one event at a time.
type sseReader struct {
	t   *testing.T
	buf []byte
	r   io.Reader
}

func (s *sseReader) next() string {
	s.t.Helper()
	for {
		if i := strings.Index(string(s.buf), "\n\n"); i >= 0 {
			ev := string(s.buf[:i])
			s.buf = s.buf[i+2:]
			require.True(s.t, strings.HasPrefix(ev, "data: "), ev)
			return strings.TrimPrefix(ev, "data: ")
		}
		b := make([]byte, 4096)
		n, err := s.r.Read(b)
		s.buf = append(s.buf, b[:n]...)
		if err != nil && n == 0 {
			require.NoError(s.t, err, "stream ended before an event")
		}
	}
}

func streamPost(t *testing.T, ctx context.Context, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, err := testClient.Do(req)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	return resp
}

// Each token's event reaches the client before the engine samples the next.
func TestSGLangStreamIsIncremental(t *testing.T) {
	g := &gated{LLMServer: servertest.New(servertest.Config{}), tokens: []int32{5, 6, 7}, seen: make(chan struct{})}
	s := start(t, g, httpapi.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := streamPost(t, ctx, s.URL()+"/generate", `{"input_ids":[1],"stream":true}`)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	for i := range g.tokens {
		ev := rd.next()
		require.Contains(t, ev, fmt.Sprintf(`"output_ids":%s`, idsJSON(g.tokens[:i+1])))
		require.Contains(t, ev, `"finish_reason":null`)
		require.Regexp(t, `"weight_version":"[^"]+"`, ev, "SGLang writes the weight version into every event")
		if i+1 < len(g.tokens) {
			g.seen <- struct{}{}
		}
	}
	require.Contains(t, rd.next(), `"finish_reason":{"type":"length","length":3}`)
	require.Equal(t, "[DONE]", rd.next())
}

func idsJSON(ids []int32) string {
	b, _ := json.Marshal(ids)
	return string(b)
}

// With a slow scripted engine the first event leaves long before the last,
// and the last event is the non-streamed response (text and all).
func TestSGLangStreamSlowEngine(t *testing.T) {
	tok := qwen(t)
	ids := tok.Encode("Streaming sends tokens as they are sampled, ünïcode and all.")
	const delay = 20 * time.Millisecond
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(ids...), TokenLatency: servertest.Fixed(delay)})
	s := start(t, eng, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	body := fmt.Sprintf(`{"input_ids":[1],"sampling_params":{"max_new_tokens":%d,"temperature":0},"return_logprob":true,"stream":true}`, len(ids))

	resp := streamPost(t, context.Background(), s.URL()+"/generate", body)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	var events []string
	var at []time.Time
	for {
		ev := rd.next()
		if ev == "[DONE]" {
			break
		}
		events = append(events, ev)
		at = append(at, time.Now())
	}
	require.Len(t, events, len(ids)+1, "one event per token, then the final one")
	// The engine waits delay before each token after the first, so the
	// last event leaves (len(ids)-1)*delay after the first: a stream sent
	// at the end would deliver every event at once. Half of that leaves
	// room for a loaded machine reading the first event late.
	require.GreaterOrEqual(t, at[len(at)-1].Sub(at[0]), time.Duration(len(ids)-1)*delay/2)

	type ev struct {
		Text      string         `json:"text"`
		OutputIDs []int32        `json:"output_ids"`
		Meta      map[string]any `json:"meta_info"`
	}
	var prev ev
	for i, e := range events {
		var cur ev
		require.NoError(t, json.Unmarshal([]byte(e), &cur), e)
		require.True(t, strings.HasPrefix(cur.Text, prev.Text), "event %d: text %q does not extend %q", i, cur.Text, prev.Text)
		require.Len(t, cur.OutputIDs, min(i+1, len(ids)), "event %d", i)
		require.Equal(t, ids[:len(cur.OutputIDs)], cur.OutputIDs, "event %d", i)
		prev = cur
	}
	code, plain := post(t, s.URL()+"/generate", strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	require.Equal(t, 200, code, plain)
	var want ev
	require.NoError(t, json.Unmarshal([]byte(plain), &want))
	require.Equal(t, want.Text, prev.Text)
	require.Equal(t, want.OutputIDs, prev.OutputIDs)
	for _, k := range []string{"e2e_latency", "id"} { // per call
		delete(want.Meta, k)
		delete(prev.Meta, k)
	}
	delete(want.Meta, "cached_tokens") // the second call finds the first's prefix
	delete(prev.Meta, "cached_tokens")
	require.Equal(t, want.Meta, prev.Meta)
}

// An engine error before the first token is a plain HTTP error, not a
// half-open stream.
func TestSGLangStreamErrorBeforeFirstToken(t *testing.T) {
	eng := servertest.New(servertest.Config{})
	eng.SetFault(servertest.ErrorFault(server.ErrOverloaded))
	s := start(t, eng, httpapi.Config{})
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1],"stream":true}`)
	require.Equal(t, http.StatusTooManyRequests, code, body)
}

type completionEvent struct {
	Choices []struct {
		Text         string  `json:"text"`
		FinishReason *string `json:"finish_reason"`
		StopReason   any     `json:"stop_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Each token's text reaches the client before the engine samples the
// next one; the last event has the finish reason.
func TestCompletionsStreamIsIncremental(t *testing.T) {
	tok := qwen(t)
	ids := tok.Encode("one two three four")
	g := &gated{LLMServer: servertest.New(servertest.Config{}), tokens: ids, seen: make(chan struct{})}
	s := start(t, g, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := streamPost(t, ctx, s.URL()+"/v1/completions", `{"prompt":[1],"max_tokens":100,"stream":true}`)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	for i := range ids {
		var ev completionEvent
		require.NoError(t, json.Unmarshal([]byte(rd.next()), &ev))
		require.Len(t, ev.Choices, 1)
		want, err := tok.Decode(ids[i:i+1], true)
		require.NoError(t, err)
		require.Equal(t, want, ev.Choices[0].Text, "token %d", i)
		require.Nil(t, ev.Choices[0].FinishReason)
		if i+1 < len(ids) {
			g.seen <- struct{}{}
		}
	}
	var last completionEvent
	require.NoError(t, json.Unmarshal([]byte(rd.next()), &last))
	require.Equal(t, "", last.Choices[0].Text)
	require.Equal(t, "length", *last.Choices[0].FinishReason)
	require.Equal(t, "[DONE]", rd.next())
}

// With a slow scripted engine the first chunk leaves long before the last,
// and the streamed text, finish reason and usage are the non-streamed ones.
func TestCompletionsStreamSlowEngine(t *testing.T) {
	tok := qwen(t)
	eos := tok.EOSTokenIDs()
	require.NotEmpty(t, eos)
	ids := append(tok.Encode("Streaming sends tokens as they are sampled, ünïcode and all."), eos[0])
	const delay = 20 * time.Millisecond
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(ids...), TokenLatency: servertest.Fixed(delay)})
	s := start(t, eng, httpapi.Config{Chat: &httpapi.Chat{Tokenizer: tok}})
	body := `{"prompt":[1],"max_tokens":100,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`

	resp := streamPost(t, context.Background(), s.URL()+"/v1/completions", body)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	var text strings.Builder
	var at []time.Time
	var final completionEvent
	for {
		e := rd.next()
		if e == "[DONE]" {
			break
		}
		at = append(at, time.Now())
		var ev completionEvent
		require.NoError(t, json.Unmarshal([]byte(e), &ev), e)
		if ev.Usage != nil {
			final.Usage = ev.Usage
			continue
		}
		require.Len(t, ev.Choices, 1)
		text.WriteString(ev.Choices[0].Text)
		if ev.Choices[0].FinishReason != nil {
			final.Choices = ev.Choices
		}
	}
	require.Greater(t, len(at), len(ids)/2, "about one event per token")
	// The engine waits delay before each token after the first; half of
	// the whole wait leaves room for a loaded machine reading late.
	require.GreaterOrEqual(t, at[len(at)-1].Sub(at[0]), time.Duration(len(ids)-1)*delay/2)

	code, plain := post(t, s.URL()+"/v1/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	require.Equal(t, 200, code, plain)
	var want completionEvent
	require.NoError(t, json.Unmarshal([]byte(plain), &want))
	require.Equal(t, want.Choices[0].Text, text.String())
	require.NotContains(t, text.String(), "<|im_end|>")
	require.Equal(t, "stop", *final.Choices[0].FinishReason)
	require.Equal(t, want.Choices[0].StopReason, final.Choices[0].StopReason)
	require.NotNil(t, final.Usage)
	require.Equal(t, want.Usage.CompletionTokens, final.Usage.CompletionTokens)
	require.Equal(t, len(ids), final.Usage.CompletionTokens)
}

type chatEvent struct {
	Choices []struct {
		Delta struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Chat without tools or reasoning streams a content delta per token: the
// first delta leaves long before the last, and the deltas concatenated are
// the non-streamed message.
func TestChatStreamSlowEngine(t *testing.T) {
	tok := qwen(t)
	eos := tok.EOSTokenIDs()
	require.NotEmpty(t, eos)
	ids := append(tok.Encode("Streaming sends tokens as they are sampled, ünïcode and all."), eos[0])
	const delay = 20 * time.Millisecond
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(ids...), TokenLatency: servertest.Fixed(delay)})
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}})
	body := `{"model":"qwen3","messages":[{"role":"user","content":"Hi"}],"max_tokens":100,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`

	resp := streamPost(t, context.Background(), s.URL()+"/v1/chat/completions", body)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	var text strings.Builder
	var at []time.Time
	var finish *string
	var usage int
	for {
		e := rd.next()
		if e == "[DONE]" {
			break
		}
		var ev chatEvent
		require.NoError(t, json.Unmarshal([]byte(e), &ev), e)
		if ev.Usage != nil {
			usage = ev.Usage.CompletionTokens
			continue
		}
		require.Len(t, ev.Choices, 1)
		if c := ev.Choices[0].Delta.Content; c != nil && *c != "" {
			at = append(at, time.Now())
			text.WriteString(*c)
		}
		if ev.Choices[0].FinishReason != nil {
			finish = ev.Choices[0].FinishReason
		}
	}
	require.Greater(t, len(at), len(ids)/2, "about one delta per token")
	// Half of the engine's whole wait: room for a loaded machine.
	require.GreaterOrEqual(t, at[len(at)-1].Sub(at[0]), time.Duration(len(ids)-2)*delay/2)

	code, plain := post(t, s.URL()+"/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	require.Equal(t, 200, code, plain)
	var want chatEvent
	require.NoError(t, json.Unmarshal([]byte(plain), &want))
	require.Equal(t, want.Choices[0].Message.Content, text.String())
	require.NotNil(t, finish)
	require.Equal(t, "stop", *finish)
	require.Equal(t, len(ids), usage)
}

type chatToolEvent struct {
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning_content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		Message struct {
			Content   *string `json:"content"`
			Reasoning *string `json:"reasoning_content"`
			ToolCalls []struct {
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
}

// With reasoning and a tool parser, the reasoning and the content stream
// as they are sampled (the call is held back, then sent whole), and the
// streamed turn equals the non-streamed one.
func TestChatStreamReasoningAndToolCall(t *testing.T) {
	tok := qwen(t)
	text := "<think>\nI need the weather in Paris, so I will call the tool.\n</think>\n\nLet me check that for you.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
	ids := append(tok.Encode(text), tok.EOSTokenIDs()[0])
	const delay = 10 * time.Millisecond
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(ids...), TokenLatency: servertest.Fixed(delay)})
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes", Reasoning: true}})
	body := `{"model":"qwen3","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools + `,"max_tokens":200,"stream":true}`

	resp := streamPost(t, context.Background(), s.URL()+"/v1/chat/completions", body)
	defer resp.Body.Close()
	rd := &sseReader{t: t, r: resp.Body}
	var content, reasoning strings.Builder
	var reasoningAt []time.Time
	var calls []string
	var finish string
	for {
		e := rd.next()
		if e == "[DONE]" {
			break
		}
		var ev chatToolEvent
		require.NoError(t, json.Unmarshal([]byte(e), &ev), e)
		require.Len(t, ev.Choices, 1)
		d := ev.Choices[0].Delta
		if d.Reasoning != nil {
			reasoning.WriteString(*d.Reasoning)
			reasoningAt = append(reasoningAt, time.Now())
		}
		if d.Content != nil {
			content.WriteString(*d.Content)
		}
		for _, c := range d.ToolCalls {
			calls = append(calls, c.Function.Name+" "+c.Function.Arguments)
		}
		if ev.Choices[0].FinishReason != nil {
			finish = *ev.Choices[0].FinishReason
		}
	}
	require.Greater(t, len(reasoningAt), 3, "the reasoning streams in pieces")

	code, plain := post(t, s.URL()+"/v1/chat/completions", strings.Replace(body, `"stream":true`, `"stream":false`, 1))
	require.Equal(t, 200, code, plain)
	var want chatToolEvent
	require.NoError(t, json.Unmarshal([]byte(plain), &want))
	m := want.Choices[0].Message
	require.NotNil(t, m.Reasoning)
	require.Equal(t, *m.Reasoning, reasoning.String())
	wantContent := ""
	if m.Content != nil {
		wantContent = *m.Content
	}
	require.Equal(t, wantContent, content.String())
	require.Len(t, m.ToolCalls, 1)
	require.Equal(t, []string{m.ToolCalls[0].Function.Name + " " + m.ToolCalls[0].Function.Arguments}, calls)
	require.Equal(t, *want.Choices[0].FinishReason, finish)
	require.Equal(t, "tool_calls", finish)
}
