package vllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
)

// GenerateStream is Generate with "stream": true (and stream_options
// include_usage, for the prompt and cached token counts): the tokens are
// handed to emit as vLLM streams them, and the returned output is what
// Generate would return (the tokens and logprobs are those emitted, in
// order). It implements server.Streamer. The endpoint is Generate's:
// /inference/v1/generate, or /v1/completions on builds without it. A build
// whose /inference/v1/generate does not stream (it answers the whole
// response at once) has the answer emitted as one chunk.
//
// When ctx ends, or emit returns an error, the connection is closed (vLLM
// aborts a request whose client went away) and an abort is sent as
// Generate does; the error wraps ctx.Err() or emit's error. An error event
// from the server, or a stream cut before [DONE], is an error naming the
// server; the tokens streamed so far are returned with it, marked
// StopAbort. A stream that reaches [DONE] without a finish_reason is a
// request vLLM aborted: it skips chunks that add no token, which is what
// an abort's last output is (see generateStreamChunk).
func (c *Client) GenerateStream(ctx context.Context, req server.GenerateRequest, emit func(server.Chunk) error) (server.TokenOutput, error) {
	if emit == nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, fmt.Errorf("GenerateStream needs an emit function: %w", server.ErrBadRequest))
	}
	if req.RequestID == "" {
		req.RequestID = httpclient.NewRequestID()
	}
	hdr := http.Header{SessionHeader: {req.RequestID}}
	var prio *int
	if req.Priority != 0 {
		p := req.Priority
		prio = &p
	}
	feat, err := c.features(ctx, req)
	if err != nil {
		return server.TokenOutput{}, err
	}
	usage := &streamOptions{IncludeUsage: true}
	st := &streamState{wantLogprobs: req.Params.Logprobs, topK: req.Params.TopLogprobs, emit: emit}
	if !c.completions.Load() {
		sp, err := samplingOf(req.Params, 0)
		if err != nil {
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
		}
		body, err := json.Marshal(generateRequest{RequestID: req.RequestID, TokenIDs: nonNil(req.PromptIDs),
			Model: c.cfg.Model, SamplingParams: sp, Stream: true, StreamOptions: usage, Priority: prio, Features: feat})
		if err != nil {
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
		}
		st.endpoint = "/inference/v1/generate"
		err = c.t.Stream(ctx, "generate", st.endpoint, body, hdr, httpclient.StreamHandler{Event: st.generateEvent, Whole: st.generateWhole})
		var se *server.Error
		if !(errors.As(err, &se) && se.Status == http.StatusNotFound) {
			return c.streamResult(ctx, req.RequestID, false, st, err)
		}
		if feat != nil {
			c.completions.Store(true)
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, errNoImagesOnCompletions(len(req.Vision.Images)))
		}
		// The endpoint does not exist on this build: nothing ran, so the
		// completions endpoint can serve the same call.
	}
	sp, err := samplingOf(req.Params, 1)
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	body, err := json.Marshal(completionsRequest{sampling: sp, Model: c.cfg.Model, Prompt: nonNil(req.PromptIDs),
		RequestID: req.RequestID, ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true, Stream: true, StreamOptions: usage, Priority: prio})
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	st.endpoint = "/v1/completions"
	err = c.t.Stream(ctx, "generate", st.endpoint, body, hdr, httpclient.StreamHandler{Event: st.completionsEvent, Whole: st.completionsWhole})
	if err == nil {
		c.completions.Store(true)
	}
	return c.streamResult(ctx, req.RequestID, true, st, err)
}

// streamResult turns the end of a stream into GenerateStream's result.
func (c *Client) streamResult(ctx context.Context, rid string, completions bool, st *streamState, err error) (server.TokenOutput, error) {
	if err == nil && !st.finished {
		st.out.StopReason = server.StopAbort
		st.finished = true
	}
	if err != nil && st.finished && errors.Is(err, httpclient.ErrStreamCut) {
		// Everything arrived; only the closing [DONE] was lost.
		err = nil
	}
	if err != nil {
		if ctx.Err() != nil || st.emitErr != nil {
			c.abortAfterCancel(ctx, rid, completions)
		}
		var se *server.Error
		if !errors.As(err, &se) {
			err = c.t.Errorf("generate", http.StatusOK, false, err)
		}
		out := st.output()
		out.StopReason = server.StopAbort
		return out, err
	}
	return st.output(), nil
}

// streamState turns the events of one streamed call into chunks.
type streamState struct {
	wantLogprobs bool
	topK         int // Params.TopLogprobs
	emit         func(server.Chunk) error
	emitErr      error
	endpoint     string

	ids      []int32
	lps      []float32
	tops     [][]server.TopLogprob
	finished bool
	out      server.TokenOutput // the metadata
}

// streamUsage is the usage a stream sends last, with include_usage.
type streamUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// generateStreamChunk is one event of a streamed /inference/v1/generate.
// Upstream (vllm-project/vllm):
// vllm/entrypoints/scale_out/token_in_token_out/serving.py
// serve_tokens_stream_generator @ 00a80787 runs the request with
// RequestOutputKind.DELTA and writes, for each output that adds tokens,
// `data: {"request_id", "choices": [{"index", "logprobs": {"content":
// [...]}, "finish_reason", "stop_reason", "token_ids"}]}` with the new
// token ids only (an output that adds none is skipped, finish_reason
// included), then with include_usage a `"choices": [], "usage"` event,
// an error as `data: {"error": {...}}`, and `data: [DONE]`. Builds before
// it (vllm/entrypoints/openai/serving_tokens.py @ 0362f42a: "TODO
// Streaming response") answer the whole GenerateResponse instead.
// num_cached_tokens and weight_version are agentrl's own additions.
type generateStreamChunk struct {
	Choices []struct {
		Index        int             `json:"index"`
		FinishReason *string         `json:"finish_reason"`
		TokenIDs     *[]int32        `json:"token_ids"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	Usage         *streamUsage `json:"usage"`
	CachedTokens  *int         `json:"num_cached_tokens"`
	WeightVersion *int64       `json:"weight_version"`
}

func (st *streamState) generateEvent(data []byte) error {
	if err := httpclient.StreamedError(data); err != nil {
		return err
	}
	var ch generateStreamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return httpclient.BadResponse("%s stream: invalid event JSON: %v", st.endpoint, err)
	}
	st.usage(ch.Usage)
	st.extensions(ch.CachedTokens, ch.WeightVersion)
	if len(ch.Choices) == 0 {
		return nil // the usage event
	}
	c := ch.Choices[0]
	return st.choice(len(ch.Choices), c.Index, c.TokenIDs, "", c.FinishReason, func(ids []int32) ([]float32, error) {
		return parseContentLogprobs(c.Logprobs, ids)
	}, func(ids []int32) ([][]server.TopLogprob, error) {
		return parseContentTops(c.Logprobs, len(ids), st.topK)
	})
}

// choice adds the one choice of a streamed event (n choices in all, the
// first at index with ids): it checks there is exactly one, at index 0,
// with token ids (missing says why they may be absent), and parses its
// logprobs with parse where they were asked for.
func (st *streamState) choice(n, index int, ids *[]int32, missing string, finish *string, parse func(ids []int32) ([]float32, error),
	parseTops func(ids []int32) ([][]server.TopLogprob, error)) error {
	if n != 1 {
		return httpclient.BadResponse("%s stream: expected 1 choice per event, got %d", st.endpoint, n)
	}
	if index != 0 {
		return httpclient.BadResponse("%s stream: choice index %d (one choice was asked for)", st.endpoint, index)
	}
	if ids == nil {
		return httpclient.BadResponse("%s stream: choices[0].token_ids is missing%s", st.endpoint, missing)
	}
	var lps []float32
	if st.wantLogprobs {
		var err error
		if lps, err = parse(*ids); err != nil {
			return fmt.Errorf("%s stream: %w", st.endpoint, err)
		}
	}
	var tops [][]server.TopLogprob
	if st.topK > 0 {
		var err error
		if tops, err = parseTops(*ids); err != nil {
			return fmt.Errorf("%s stream: %w", st.endpoint, err)
		}
	}
	return st.add(*ids, lps, tops, finish)
}

func (st *streamState) generateWhole(body []byte) error {
	out, err := ParseGenerateResponse(body, st.wantLogprobs)
	if err == nil && st.topK > 0 {
		out.TopLogprobs, err = parseGenerateTops(body, len(out.TokenIDs), st.topK)
	}
	if err != nil {
		return err
	}
	return st.addWhole(out)
}

// completionsStreamChunk is one event of a streamed /v1/completions.
// Upstream (vllm-project/vllm): vllm/entrypoints/openai/completion/
// serving.py completion_stream_generator @ 030ea52e writes a
// CompletionStreamResponse per output with the new text, token_ids (with
// return_token_ids) and logprobs {tokens, token_logprobs, ...} of the
// new tokens only, finish_reason null until the last, then with
// include_usage a `"choices": [], "usage"` event, an error as
// `data: {"error": {...}}`, and `data: [DONE]`.
type completionsStreamChunk struct {
	Choices []struct {
		Index        int                 `json:"index"`
		FinishReason *string             `json:"finish_reason"`
		TokenIDs     *[]int32            `json:"token_ids"`
		Logprobs     *completionLogprobs `json:"logprobs"`
	} `json:"choices"`
	Usage         *streamUsage `json:"usage"`
	WeightVersion *int64       `json:"weight_version"`
}

func (st *streamState) completionsEvent(data []byte) error {
	if err := httpclient.StreamedError(data); err != nil {
		return err
	}
	var ch completionsStreamChunk
	if err := json.Unmarshal(data, &ch); err != nil {
		return httpclient.BadResponse("%s stream: invalid event JSON: %v", st.endpoint, err)
	}
	st.usage(ch.Usage)
	st.extensions(nil, ch.WeightVersion)
	if len(ch.Choices) == 0 {
		return nil // the usage event
	}
	c := ch.Choices[0]
	return st.choice(len(ch.Choices), c.Index, c.TokenIDs, ": the server does not support return_token_ids", c.FinishReason, func(ids []int32) ([]float32, error) {
		return parseCompletionLogprobs(c.Logprobs, ids)
	}, func(ids []int32) ([][]server.TopLogprob, error) {
		var raw json.RawMessage
		if c.Logprobs != nil {
			raw = c.Logprobs.TopLogprobs
		}
		return parseCompletionTops(raw, len(ids), st.topK)
	})
}

func (st *streamState) completionsWhole(body []byte) error {
	out, err := ParseCompletionsResponse(body, st.wantLogprobs)
	if err == nil && st.topK > 0 {
		out.TopLogprobs, err = parseCompletionsTops(body, len(out.TokenIDs), st.topK)
	}
	if err != nil {
		return err
	}
	return st.addWhole(out)
}

func (st *streamState) extensions(cached *int, version *int64) {
	if cached != nil {
		st.out.CachedTokens = *cached
	}
	if version != nil {
		st.out.WeightVersion = *version
	}
}

func (st *streamState) usage(u *streamUsage) {
	if u == nil {
		return
	}
	st.out.PromptTokens = u.PromptTokens
	if u.PromptTokensDetails != nil {
		st.out.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
}

// add records and emits one event's new tokens, and its finish reason.
func (st *streamState) add(ids []int32, lps []float32, tops [][]server.TopLogprob, finish *string) error {
	if st.finished {
		if len(ids) > 0 || finish != nil {
			return httpclient.BadResponse("%s stream: an event after the one that finished the request", st.endpoint)
		}
	}
	if err := checkIDs(ids, "choices[0].token_ids"); err != nil {
		return fmt.Errorf("%s stream: %w", st.endpoint, err)
	}
	if finish != nil {
		reason, err := parseFinish(finish)
		if err != nil {
			return fmt.Errorf("%s stream: %w", st.endpoint, err)
		}
		st.out.StopReason = reason
		st.finished = true
	}
	if len(ids) == 0 {
		return nil
	}
	st.ids = append(st.ids, ids...)
	c := server.Chunk{TokenIDs: ids}
	if st.wantLogprobs {
		st.lps = append(st.lps, lps...)
		c.Logprobs = lps
	}
	if st.topK > 0 {
		st.tops = append(st.tops, tops...)
		c.TopLogprobs = tops
	}
	if err := st.emit(c); err != nil {
		st.emitErr = err
		return fmt.Errorf("emit: %w", err)
	}
	return nil
}

// addWhole takes a whole (non-streamed) answer as one chunk.
func (st *streamState) addWhole(out server.TokenOutput) error {
	meta := out
	reason := string(out.StopReason)
	if err := st.add(out.TokenIDs, out.Logprobs, out.TopLogprobs, nil); err != nil {
		return err
	}
	st.out = meta
	st.out.StopReason = server.StopReason(reason)
	st.finished = true
	return nil
}

// output is the request's output so far.
func (st *streamState) output() server.TokenOutput {
	out := st.out
	out.TokenIDs = st.ids
	if out.TokenIDs == nil {
		out.TokenIDs = []int32{}
	}
	out.Logprobs = nil
	if st.wantLogprobs {
		out.Logprobs = st.lps
		if out.Logprobs == nil {
			out.Logprobs = []float32{}
		}
	}
	out.TopLogprobs = nil
	if st.topK > 0 {
		out.TopLogprobs = st.tops
		if out.TopLogprobs == nil {
			out.TopLogprobs = [][]server.TopLogprob{}
		}
	}
	return out
}

var _ server.Streamer = (*Client)(nil)
