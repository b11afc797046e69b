package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// hookRecorder is a Recorder that keeps what it is told and can replace
// the prompt or fail the record.
type hookRecorder struct {
	mu       sync.Mutex
	calls    []httpapi.Call
	cur      *httpapi.Call           // the call Begin was last given
	params   []server.SamplingParams // cur.Params at each Record
	outs     []server.TokenOutput
	answers  []chat.Message
	aborts   []error
	prompt   []int32 // replaces the rendered prompt when set
	failWith error   // returned by Record when set
}

type ctxKey struct{}

func (h *hookRecorder) Begin(ctx context.Context, c *httpapi.Call) (httpapi.Recording, error) {
	if ctx.Value(ctxKey{}) != nil {
		return nil, errors.New("unexpected context value")
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.prompt != nil {
		c.PromptIDs = h.prompt
	}
	h.calls, h.cur = append(h.calls, *c), c
	return h, nil
}

func (h *hookRecorder) Record(_ context.Context, _ int, out server.TokenOutput, answer chat.Message) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.failWith != nil {
		return h.failWith
	}
	h.outs = append(h.outs, out)
	h.answers = append(h.answers, answer)
	h.params = append(h.params, h.cur.Params)
	return nil
}

func (h *hookRecorder) Abort(reason error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.aborts = append(h.aborts, reason)
}

func TestRecorderSeesEveryDialectAndStream(t *testing.T) {
	tok := qwen(t)
	eng, cp, ids := replyWith(t, tok, toolCallReply)
	rec := &hookRecorder{}
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}, Recorder: rec})
	chatBody := `{"model":"qwen3","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":` + weatherTools + `}`
	respBody := `{"model":"qwen3","input":"Weather in Paris?","tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	for _, c := range []struct{ path, body, dialect string }{
		{"/v1/chat/completions", chatBody, httpapi.DialectChat},
		{"/v1/chat/completions", strings.Replace(chatBody, `{"model"`, `{"stream":true,"model"`, 1), httpapi.DialectChat},
		{"/v1/responses", respBody, httpapi.DialectResponses},
		{"/v1/responses", strings.Replace(respBody, `{"model"`, `{"stream":true,"model"`, 1), httpapi.DialectResponses},
	} {
		code, resp := post(t, s.URL()+c.path, c.body, "x-session-id", "sess-1")
		require.Equal(t, 200, code, resp)
		rec.mu.Lock()
		n := len(rec.calls)
		call, out, answer, params := rec.calls[n-1], rec.outs[n-1], rec.answers[n-1], rec.params[n-1]
		rec.mu.Unlock()
		// By Record, the call holds the sampling the engine was given.
		require.Equal(t, cp.last().Params, params)
		require.Equal(t, c.dialect, call.Dialect, c.path)
		require.Equal(t, c.body, string(call.Body))
		require.Equal(t, "sess-1", call.Header.Get("X-Session-Id"))
		require.Equal(t, cp.last().PromptIDs, call.PromptIDs)
		require.Equal(t, "Weather in Paris?", call.Messages[len(call.Messages)-1].Content)
		// The engine was asked for logprobs even though the client was not.
		require.True(t, cp.last().Params.Logprobs)
		require.NotContains(t, resp, `"logprob"`)
		require.Equal(t, ids, out.TokenIDs)
		require.Len(t, out.Logprobs, len(ids))
		require.Equal(t, server.StopEOS, out.StopReason)
		require.Len(t, answer.ToolCalls, 1)
		require.Equal(t, "get_weather", answer.ToolCalls[0].Function.Name)
		require.JSONEq(t, `{"city":"Paris"}`, answer.ToolCalls[0].Function.Arguments)
		require.Contains(t, resp, answer.ToolCalls[0].ID, "the recorded call id is the one answered")
	}
	require.Empty(t, rec.aborts)
}

func TestRecorderReplacesThePrompt(t *testing.T) {
	tok := qwen(t)
	eng, cp, _ := replyWith(t, tok, "hi")
	rec := &hookRecorder{prompt: []int32{7, 8, 9}}
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}, Recorder: rec})
	code, resp := post(t, s.URL()+"/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"return_token_ids":true}`)
	require.Equal(t, 200, code, resp)
	require.Equal(t, []int32{7, 8, 9}, cp.last().PromptIDs)
	var r chatResp
	require.NoError(t, json.Unmarshal([]byte(resp), &r))
	require.Equal(t, []int32{7, 8, 9}, r.PromptTokenIDs)
	require.Equal(t, 3, r.Usage.PromptTokens)
}

func TestRecorderFailureWithholdsTheAnswer(t *testing.T) {
	tok := qwen(t)
	eng, _, _ := replyWith(t, tok, "the secret answer")
	rec := &hookRecorder{failWith: errors.New("disk full")}
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}, Recorder: rec})
	for _, body := range []string{
		`{"messages":[{"role":"user","content":"x"}]}`,
		`{"stream":true,"messages":[{"role":"user","content":"x"}]}`,
	} {
		code, resp := post(t, s.URL()+"/v1/chat/completions", body)
		require.Contains(t, resp, "recording the answer: disk full")
		if strings.Contains(body, "stream") {
			// Real streaming: the text went out as sampled, but the turn
			// never ends, so a client does not take it as an answer.
			require.NotContains(t, resp, `"finish_reason":"stop"`)
		} else {
			require.Equal(t, 500, code)
			require.NotContains(t, resp, "secret")
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.aborts, 2, "each unrecorded call is aborted once")
}

func TestRecorderAbortOnEngineError(t *testing.T) {
	tok := qwen(t)
	eng := servertest.New(servertest.Config{})
	eng.SetFault(servertest.Unavailable())
	rec := &hookRecorder{}
	s := start(t, eng, httpapi.Config{Model: "qwen3", Chat: &httpapi.Chat{Tokenizer: tok}, Recorder: rec})
	code, resp := post(t, s.URL()+"/v1/responses", `{"input":"x"}`)
	require.Equal(t, 503, code, resp)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.calls, 1)
	require.Empty(t, rec.outs)
	require.Len(t, rec.aborts, 1)
	require.Contains(t, rec.aborts[0].Error(), "0 of 1 samples recorded")
}
