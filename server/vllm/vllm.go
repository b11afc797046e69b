package vllm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
	"github.com/agentrl/agentrl/server/internal/wire"
)

// SessionHeader is the header vllm-router keys sticky routing on; the
// client sets it to the request id.
const SessionHeader = "X-Session-ID"

// Config configures a Client. Only BaseURL is required.
type Config struct {
	// BaseURL is the server's root, e.g. "http://10.0.0.5:8000".
	BaseURL string
	// Name identifies the server in errors; default BaseURL.
	Name string
	// Model is sent as "model"; empty leaves it out (the served model).
	Model string
	// HTTPClient defaults to DefaultHTTPClient.
	HTTPClient *http.Client
	// AuthToken, when set, is sent as "Authorization: Bearer <AuthToken>".
	AuthToken string
	// MaxAttempts bounds the sends of one call, retries included (default 4).
	MaxAttempts int
	// BackoffBase and BackoffMax shape the exponential backoff between
	// retries (defaults 50ms and 2s); each wait is drawn uniformly from
	// (0, min(BackoffMax, BackoffBase·2^(n-1))].
	BackoffBase, BackoffMax time.Duration
	// AbortTimeout bounds the abort sent after a cancelled Generate
	// (default 2s).
	AbortTimeout time.Duration
	// MaxResponseBytes bounds a successful response body (default 256 MiB).
	MaxResponseBytes int64
	// Completions makes Generate use /v1/completions from the start instead
	// of trying /inference/v1/generate first (such a client takes no
	// images).
	Completions bool
	// ImageCacheBytes bounds the images' rendered features kept between
	// calls, by the bytes of their kwargs_data (default 512 MiB; negative
	// keeps none). See the package doc.
	ImageCacheBytes int64
}

// Client talks to one vLLM server (or a vllm-router) through its
// token-in/token-out endpoint /inference/v1/generate, falling back to
// /v1/completions with a token-id prompt when that endpoint answers 404
// (older builds). It implements server.LLMServer, server.Aborter,
// server.Sleeper and server.HealthChecker. Safe for concurrent use.
type Client struct {
	cfg Config
	t   *httpclient.Transport
	// completions is set once /inference/v1/generate turned out missing.
	completions atomic.Bool
	images      *imageCache
}

// New returns a client for cfg.BaseURL.
func New(cfg Config) (*Client, error) {
	t, err := httpclient.New("vllm", httpclient.Options{BaseURL: cfg.BaseURL, Name: cfg.Name, HTTPClient: cfg.HTTPClient,
		AuthToken: cfg.AuthToken, MaxAttempts: cfg.MaxAttempts, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
		MaxResponseBytes: cfg.MaxResponseBytes, AbortTimeout: cfg.AbortTimeout})
	if err != nil {
		return nil, err
	}
	cfg.Name = t.Name()
	if cfg.ImageCacheBytes == 0 {
		cfg.ImageCacheBytes = defaultImageCacheBytes
	}
	c := &Client{cfg: cfg, t: t, images: newImageCache(cfg.ImageCacheBytes)}
	c.completions.Store(cfg.Completions)
	return c, nil
}

// Name returns the name used in errors.
func (c *Client) Name() string { return c.cfg.Name }

// UsesCompletions reports whether Generate goes to /v1/completions.
func (c *Client) UsesCompletions() bool { return c.completions.Load() }

// sampling is vLLM's SamplingParams subset both endpoints accept.
type sampling struct {
	MaxTokens              *int    `json:"max_tokens,omitempty"`
	Temperature            float64 `json:"temperature"`
	TopP                   float64 `json:"top_p"`
	TopK                   int     `json:"top_k"`
	MinP                   float64 `json:"min_p"`
	RepetitionPenalty      float64 `json:"repetition_penalty"`
	PresencePenalty        float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty       float64 `json:"frequency_penalty,omitempty"`
	Seed                   *int64  `json:"seed,omitempty"`
	Logprobs               *int    `json:"logprobs,omitempty"`
	StopTokenIDs           []int32 `json:"stop_token_ids,omitempty"`
	SkipSpecialTokens      bool    `json:"skip_special_tokens"`
	IncludeStopStrInOutput bool    `json:"include_stop_str_in_output"`
}

// samplingOf maps server.SamplingParams: top_p 0 → 1, top_k ≤ 0 → -1
// (disabled in every vLLM version), repetition_penalty 0 → 1; MaxNewTokens
// 0 leaves max_tokens to the server (16 on many builds: set it). logprobs
// is what asks for the sampled token's logprob alone (0 or 1 by
// endpoint); TopLogprobs k asks for logprobs k+1 (at most 20), which vLLM
// answers with the sampled token's and that many alternatives, cut to k
// when read. The presence and frequency
// penalties are vLLM's own (apply_penalties), sent when set.
func samplingOf(p server.SamplingParams, logprobs int) (sampling, error) {
	s := sampling{Temperature: p.Temperature, TopP: p.TopP, TopK: p.TopK, MinP: p.MinP,
		RepetitionPenalty: p.RepetitionPenalty, PresencePenalty: p.PresencePenalty, FrequencyPenalty: p.FrequencyPenalty,
		StopTokenIDs: p.StopTokenIDs, IncludeStopStrInOutput: true}
	if s.TopP == 0 {
		s.TopP = 1
	}
	if s.TopK <= 0 {
		s.TopK = -1
	}
	if s.RepetitionPenalty == 0 {
		s.RepetitionPenalty = 1
	}
	if p.MaxNewTokens > 0 {
		n := p.MaxNewTokens
		s.MaxTokens = &n
	}
	if p.Seed != nil {
		if *p.Seed > math.MaxInt64 {
			return s, fmt.Errorf("seed %d does not fit vLLM's signed 64-bit seed: %w", *p.Seed, server.ErrBadRequest)
		}
		seed := int64(*p.Seed)
		s.Seed = &seed
	}
	if p.Logprobs {
		s.Logprobs = &logprobs
	}
	if k := p.TopLogprobs; k > 0 {
		// One more than asked, within vLLM's default max_logprobs: a
		// position's list may spend an entry on the sampled token
		// (see normalizeTop), and agentrl's own server reads logprobs 1
		// as the sampled token alone.
		n := min(k+1, server.MaxTopLogprobs)
		s.Logprobs = &n
	}
	for name, v := range map[string]float64{"temperature": s.Temperature, "top_p": s.TopP, "min_p": s.MinP, "repetition_penalty": s.RepetitionPenalty,
		"presence_penalty": s.PresencePenalty, "frequency_penalty": s.FrequencyPenalty} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return s, fmt.Errorf("sampling parameter %s is %v: %w", name, v, server.ErrBadRequest)
		}
	}
	return s, nil
}

type generateRequest struct {
	RequestID      string         `json:"request_id"`
	TokenIDs       []int32        `json:"token_ids"`
	Model          string         `json:"model,omitempty"`
	SamplingParams sampling       `json:"sampling_params"`
	Stream         bool           `json:"stream"`
	StreamOptions  *streamOptions `json:"stream_options,omitempty"`
	Priority       *int           `json:"priority,omitempty"`
	Features       *mmFeatures    `json:"features,omitempty"`
}

// streamOptions asks a stream for a last usage event (prompt and cached
// token counts).
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type completionsRequest struct {
	sampling
	Model                  string         `json:"model,omitempty"`
	Prompt                 []int32        `json:"prompt"`
	RequestID              string         `json:"request_id"`
	ReturnTokenIDs         bool           `json:"return_token_ids"`
	ReturnTokensAsTokenIDs bool           `json:"return_tokens_as_token_ids"`
	Stream                 bool           `json:"stream"`
	StreamOptions          *streamOptions `json:"stream_options,omitempty"`
	Priority               *int           `json:"priority,omitempty"`
}

// Generate calls /inference/v1/generate (or /v1/completions, see Client).
// When ctx ends first, the request is aborted on the server (best effort,
// within AbortTimeout) and the error wraps ctx.Err().
func (c *Client) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	feat, err := c.features(ctx, req)
	if err != nil {
		return server.TokenOutput{}, err
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
	if !c.completions.Load() {
		sp, err := samplingOf(req.Params, 0)
		if err != nil {
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
		}
		body, err := json.Marshal(generateRequest{RequestID: req.RequestID, TokenIDs: nonNil(req.PromptIDs),
			Model: c.cfg.Model, SamplingParams: sp, Priority: prio, Features: feat})
		if err != nil {
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
		}
		data, err := c.t.RoundTrip(ctx, "generate", http.MethodPost, "/inference/v1/generate", body, hdr)
		var se *server.Error
		switch {
		case err == nil:
			out, err := ParseGenerateResponse(data, req.Params.Logprobs)
			if k := req.Params.TopLogprobs; err == nil && k > 0 {
				out.TopLogprobs, err = parseGenerateTops(data, len(out.TokenIDs), k)
			}
			if err == nil && req.Params.RoutedExperts {
				out.RoutedExperts, err = parseRoutedExperts(data, len(req.PromptIDs)+len(out.TokenIDs))
			}
			if err != nil {
				return server.TokenOutput{}, c.t.Errorf("generate", http.StatusOK, false, err)
			}
			return out, nil
		case errors.As(err, &se) && se.Status == http.StatusNotFound && feat != nil:
			c.completions.Store(true)
			return server.TokenOutput{}, c.t.Errorf("generate", 0, false, errNoImagesOnCompletions(len(req.Vision.Images)))
		case errors.As(err, &se) && se.Status == http.StatusNotFound:
			// The endpoint does not exist on this build: nothing ran, so
			// the completions endpoint can serve the same call.
		default:
			if ctx.Err() != nil {
				c.abortAfterCancel(ctx, req.RequestID, false)
			}
			return server.TokenOutput{}, err
		}
	}
	sp, err := samplingOf(req.Params, 1)
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	body, err := json.Marshal(completionsRequest{sampling: sp, Model: c.cfg.Model, Prompt: nonNil(req.PromptIDs),
		RequestID: req.RequestID, ReturnTokenIDs: true, ReturnTokensAsTokenIDs: true, Priority: prio})
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	data, err := c.t.RoundTrip(ctx, "generate", http.MethodPost, "/v1/completions", body, hdr)
	if err != nil {
		if ctx.Err() != nil {
			c.abortAfterCancel(ctx, req.RequestID, true)
		}
		return server.TokenOutput{}, err
	}
	out, err := ParseCompletionsResponse(data, req.Params.Logprobs)
	if k := req.Params.TopLogprobs; err == nil && k > 0 {
		out.TopLogprobs, err = parseCompletionsTops(data, len(out.TokenIDs), k)
	}
	if err == nil && req.Params.RoutedExperts {
		out.RoutedExperts, err = parseRoutedExperts(data, len(req.PromptIDs)+len(out.TokenIDs))
	}
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", http.StatusOK, false, err)
	}
	c.completions.Store(true)
	return out, nil
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func (c *Client) abortAfterCancel(ctx context.Context, rid string, completions bool) {
	body, _ := json.Marshal(map[string][]string{"request_ids": {EngineRequestID(rid, completions)}})
	c.t.AbortAfterCancel(ctx, "/abort_requests", body)
}

// EngineRequestID returns the id vLLM's engine knows the request rid by,
// which is what /abort_requests takes (it calls the engine's abort with the
// ids as given). /inference/v1/generate schedules rid as
// "generate-tokens-{rid}" (vllm-project/vllm
// vllm/entrypoints/openai/serving_tokens.py @ 0362f42a, serve_tokens);
// /v1/completions as "cmpl-{rid}-{i}" for the i-th prompt, 0 here
// (vllm/entrypoints/openai/serving_completion.py, create_completion). The
// client sends rid in the body's request_id and no X-Request-Id header,
// so rid is the base both use.
func EngineRequestID(rid string, completions bool) string {
	if completions {
		return "cmpl-" + rid + "-0"
	}
	return "generate-tokens-" + rid
}

// ---- response parsing ------------------------------------------------------

type generateResponse struct {
	RequestID string `json:"request_id"`
	Choices   []struct {
		FinishReason *string         `json:"finish_reason"`
		TokenIDs     *[]int32        `json:"token_ids"`
		Logprobs     json.RawMessage `json:"logprobs"`
	} `json:"choices"`
	// Newer vLLM builds (token_in_token_out/serving.py) send usage.
	Usage *streamUsage `json:"usage"`
	// Extensions of agentrl's httpapi; absent on vLLM.
	CachedTokens  int   `json:"num_cached_tokens"`
	WeightVersion int64 `json:"weight_version"`
	PromptTokens  int   `json:"num_prompt_tokens"`
}

// ParseGenerateResponse reads a non-streaming /inference/v1/generate body.
// Token ids come from choices[0].token_ids; logprobs from
// choices[0].logprobs.content[i].logprob, whatever else the entries carry
// (token_id, or "token_id:N" tokens on older builds).
func ParseGenerateResponse(data []byte, wantLogprobs bool) (server.TokenOutput, error) {
	var r generateResponse
	if err := decodeOneChoice(data, "/inference/v1/generate", &r); err != nil {
		return server.TokenOutput{}, err
	}
	ch := r.Choices[0]
	out, err := choiceTokens(ch.FinishReason, ch.TokenIDs, "")
	if err != nil {
		return out, err
	}
	if wantLogprobs {
		if out.Logprobs, err = parseContentLogprobs(ch.Logprobs, out.TokenIDs); err != nil {
			return out, err
		}
	}
	if r.Usage != nil {
		out.PromptTokens = r.Usage.PromptTokens
		if r.Usage.PromptTokensDetails != nil {
			out.CachedTokens = r.Usage.PromptTokensDetails.CachedTokens
		}
	}
	if r.CachedTokens != 0 {
		out.CachedTokens = r.CachedTokens
	}
	if r.PromptTokens != 0 {
		out.PromptTokens = r.PromptTokens
	}
	out.WeightVersion = r.WeightVersion
	return out, nil
}

// parseRoutedExperts reads choices[0].routed_experts, which both endpoints
// send when the server runs with --enable-return-routed-experts: base64 of
// a .npy array (positions, layers, topk) covering the sequence from
// position 0, one position short of it (the last sampled token was never
// run). nil when absent (the flag is off, or the request was aborted before
// a forward pass).
func parseRoutedExperts(data []byte, seqLen int) (*server.Routing, error) {
	var r struct {
		Choices []struct {
			RoutedExperts *string `json:"routed_experts"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(data, &r); err != nil || len(r.Choices) != 1 {
		return nil, httpclient.BadResponse("choices[0].routed_experts: expected one choice")
	}
	if r.Choices[0].RoutedExperts == nil {
		return nil, nil
	}
	rt, err := wire.RoutingFromNPY(*r.Choices[0].RoutedExperts)
	if err != nil {
		return nil, httpclient.BadResponse("choices[0].%v", err)
	}
	if rt.Rows() > seqLen {
		return nil, httpclient.BadResponse("choices[0].routed_experts has %d positions for a sequence of %d tokens", rt.Rows(), seqLen)
	}
	return rt, nil
}

// choiceResponse is a response of either endpoint: one choice is asked for.
type choiceResponse interface{ numChoices() int }

func (r *generateResponse) numChoices() int    { return len(r.Choices) }
func (r *completionsResponse) numChoices() int { return len(r.Choices) }

// decodeOneChoice unmarshals an endpoint's response into r and checks that
// it holds exactly the one choice requested.
func decodeOneChoice(data []byte, endpoint string, r choiceResponse) error {
	if err := json.Unmarshal(data, r); err != nil {
		return httpclient.BadResponse("invalid %s response JSON: %v", endpoint, err)
	}
	if n := r.numChoices(); n != 1 {
		return httpclient.BadResponse("expected 1 choice, got %d", n)
	}
	return nil
}

// choiceTokens reads what both endpoints' choices carry alike: the finish
// reason and the token ids; missingHint explains absent token ids.
func choiceTokens(finish *string, ids *[]int32, missingHint string) (server.TokenOutput, error) {
	var out server.TokenOutput
	var err error
	if out.StopReason, err = parseFinish(finish); err != nil {
		return out, err
	}
	if ids == nil {
		return out, httpclient.BadResponse("choices[0].token_ids is missing%s", missingHint)
	}
	out.TokenIDs = nonNil(*ids)
	if err := checkIDs(out.TokenIDs, "choices[0].token_ids"); err != nil {
		return out, err
	}
	return out, nil
}

func checkIDs(ids []int32, field string) error {
	for i, id := range ids {
		if id < 0 {
			return httpclient.BadResponse("%s[%d] is negative (%d)", field, i, id)
		}
	}
	return nil
}

func parseFinish(f *string) (server.StopReason, error) {
	if f == nil {
		return "", httpclient.BadResponse("choices[0].finish_reason is null (the request did not finish)")
	}
	switch *f {
	case "stop":
		return server.StopEOS, nil
	case "length":
		return server.StopLength, nil
	case "abort", "cancelled":
		return server.StopAbort, nil
	}
	return "", httpclient.BadResponse("choices[0].finish_reason: unknown value %q", *f)
}

// parseContentLogprobs reads {"content": [entry...]} (or a bare list of
// entries), one per token, checking the token each entry names.
func parseContentLogprobs(raw json.RawMessage, ids []int32) ([]float32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if len(ids) == 0 {
			return []float32{}, nil
		}
		return nil, httpclient.BadResponse("logprobs were requested but choices[0].logprobs is null")
	}
	entries, err := scanLogprobContent(raw)
	if err != nil {
		return nil, httpclient.BadResponse("choices[0].logprobs: %v", err)
	}
	if len(entries) != len(ids) {
		return nil, httpclient.BadResponse("choices[0].logprobs.content has %d entries for %d token_ids", len(entries), len(ids))
	}
	lps := make([]float32, len(entries))
	for i, e := range entries {
		var lp *float64
		if e.hasLogprob {
			lp = &e.logprob
		}
		if lps[i], err = checkLogprob(lp); err != nil {
			return nil, httpclient.BadResponse("choices[0].logprobs.content[%d].logprob: %v", i, err)
		}
		id, ok := int64(-1), false
		switch {
		case e.hasTokenID:
			id, ok = e.tokenID, true
		case e.hasToken && strings.HasPrefix(e.token, "token_id:"):
			n, err := strconv.ParseInt(strings.TrimPrefix(e.token, "token_id:"), 10, 32)
			id, ok = n, err == nil
		}
		if ok && id != int64(ids[i]) {
			return nil, httpclient.BadResponse("choices[0].logprobs.content[%d] is for token %d but token_ids[%d] is %d", i, id, i, ids[i])
		}
	}
	return lps, nil
}

// checkLogprob checks a decoded logprob: present and ≤ 0.
func checkLogprob(f *float64) (float32, error) {
	if f == nil {
		return 0, errors.New("missing or null")
	}
	if *f > 0 || math.IsNaN(*f) {
		return 0, fmt.Errorf("%v is not ≤ 0", *f)
	}
	return float32(math.Max(*f, -math.MaxFloat32)), nil
}

// parseLogprob reads a logprob: a number ≤ 0. vLLM writes -inf as -9999.0,
// which is kept as it is.
func parseLogprob(raw json.RawMessage) (float32, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, errors.New("missing or null")
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s is not a number", raw)
	}
	if f > 0 || math.IsNaN(f) {
		return 0, fmt.Errorf("%v is not ≤ 0", f)
	}
	if f < -math.MaxFloat32 {
		f = -math.MaxFloat32
	}
	return float32(f), nil
}

// completionLogprobs is a /v1/completions choice's logprobs.
type completionLogprobs struct {
	TokenLogprobs []json.RawMessage `json:"token_logprobs"`
	Tokens        []string          `json:"tokens"`
	TopLogprobs   json.RawMessage   `json:"top_logprobs"` // read only when asked for
}

// parseCompletionLogprobs reads lp for the tokens ids, checking the token
// each entry names ("token_id:N", with return_tokens_as_token_ids).
func parseCompletionLogprobs(lp *completionLogprobs, ids []int32) ([]float32, error) {
	switch {
	case lp == nil && len(ids) > 0:
		return nil, httpclient.BadResponse("logprobs were requested but choices[0].logprobs is null")
	case lp == nil:
		return []float32{}, nil
	case len(lp.TokenLogprobs) != len(ids):
		return nil, httpclient.BadResponse("choices[0].logprobs.token_logprobs has %d entries for %d token_ids", len(lp.TokenLogprobs), len(ids))
	}
	lps := make([]float32, len(ids))
	for i, raw := range lp.TokenLogprobs {
		var err error
		if lps[i], err = parseLogprob(raw); err != nil {
			return nil, httpclient.BadResponse("choices[0].logprobs.token_logprobs[%d]: %v", i, err)
		}
		if i >= len(lp.Tokens) {
			continue
		}
		if id, ok := strings.CutPrefix(lp.Tokens[i], "token_id:"); ok {
			n, err := strconv.ParseInt(id, 10, 32)
			if err == nil && int32(n) != ids[i] {
				return nil, httpclient.BadResponse("choices[0].logprobs.tokens[%d] is token %d but token_ids[%d] is %d", i, n, i, ids[i])
			}
		}
	}
	return lps, nil
}

type completionsResponse struct {
	Choices []struct {
		FinishReason *string             `json:"finish_reason"`
		TokenIDs     *[]int32            `json:"token_ids"`
		Logprobs     *completionLogprobs `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens        int `json:"prompt_tokens"`
		PromptTokensDetails *struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	WeightVersion int64 `json:"weight_version"`
}

// ParseCompletionsResponse reads a non-streaming /v1/completions body sent
// with return_token_ids and return_tokens_as_token_ids.
func ParseCompletionsResponse(data []byte, wantLogprobs bool) (server.TokenOutput, error) {
	var r completionsResponse
	if err := decodeOneChoice(data, "/v1/completions", &r); err != nil {
		return server.TokenOutput{}, err
	}
	ch := r.Choices[0]
	out, err := choiceTokens(ch.FinishReason, ch.TokenIDs, ": the server does not support return_token_ids")
	if err != nil {
		return out, err
	}
	if wantLogprobs {
		if out.Logprobs, err = parseCompletionLogprobs(ch.Logprobs, out.TokenIDs); err != nil {
			return out, err
		}
	}
	if r.Usage != nil {
		out.PromptTokens = r.Usage.PromptTokens
		if r.Usage.PromptTokensDetails != nil {
			out.CachedTokens = r.Usage.PromptTokensDetails.CachedTokens
		}
	}
	out.WeightVersion = r.WeightVersion
	return out, nil
}

// ---- control ----------------------------------------------------------------

func (c *Client) post(ctx context.Context, op, path string, v any) error {
	var body []byte
	if v != nil {
		var err error
		if body, err = json.Marshal(v); err != nil {
			return c.t.Errorf(op, 0, false, err)
		}
	}
	_, err := c.t.RoundTrip(ctx, op, http.MethodPost, path, body, nil)
	return err
}

// Abort aborts the request rid (/abort_requests), naming it by the id
// vLLM's engine gives it on the endpoint this client generates with (see
// EngineRequestID).
func (c *Client) Abort(ctx context.Context, rid string) error {
	return c.post(ctx, "abort", "/abort_requests", map[string][]string{"request_ids": {EngineRequestID(rid, c.completions.Load())}})
}

// AbortAll aborts every running request: /pause?mode=abort then /resume,
// the only way vLLM offers (so it also ends a Pause that was in force).
func (c *Client) AbortAll(ctx context.Context) error {
	if err := c.Pause(ctx, server.PauseAbort); err != nil {
		return err
	}
	return c.Resume(ctx)
}

// Pause holds new requests (/pause?mode=) with vLLM's mode for the running
// ones: "abort" (PauseAbort), "wait" (PauseWait: vLLM answers once they
// have finished) or "keep" (PauseKeep). vLLM cannot retract requests
// (PauseRetract): that is refused with errors.ErrUnsupported before any
// call.
func (c *Client) Pause(ctx context.Context, mode server.PauseMode) error {
	mode, err := server.ParsePauseMode(string(mode))
	if err != nil {
		return err
	}
	switch mode {
	case server.PauseAbort, server.PauseWait, server.PauseKeep:
	default:
		return server.UnsupportedPause("vllm", mode)
	}
	return c.post(ctx, "pause", "/pause?mode="+string(mode), nil)
}

// Resume ends a Pause (/resume).
func (c *Client) Resume(ctx context.Context) error {
	return c.post(ctx, "resume", "/resume", nil)
}

// Sleep frees the KV cache (level 1) or the weights too (level 2) via
// /sleep?level=N.
func (c *Client) Sleep(ctx context.Context, level server.SleepLevel) error {
	if level != server.SleepKVCache && level != server.SleepWeights {
		return c.t.Errorf("sleep", 0, false, fmt.Errorf("sleep level %d is not 1 or 2: %w", level, server.ErrBadRequest))
	}
	return c.post(ctx, "sleep", "/sleep?level="+strconv.Itoa(int(level)), nil)
}

// WakeUp restores everything Sleep freed (/wake_up).
func (c *Client) WakeUp(ctx context.Context) error {
	return c.post(ctx, "wake_up", "/wake_up", nil)
}

// IsSleeping asks /is_sleeping.
func (c *Client) IsSleeping(ctx context.Context) (bool, error) {
	data, err := c.t.RoundTrip(ctx, "is_sleeping", http.MethodGet, "/is_sleeping", nil, nil)
	if err != nil {
		return false, err
	}
	var r struct {
		IsSleeping *bool `json:"is_sleeping"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.IsSleeping == nil {
		return false, c.t.Errorf("is_sleeping", http.StatusOK, false, httpclient.BadResponse("expected {\"is_sleeping\": bool}, got %.100s", data))
	}
	return *r.IsSleeping, nil
}

// FlushCache resets the prefix cache (/reset_prefix_cache).
func (c *Client) FlushCache(ctx context.Context) error {
	return c.post(ctx, "flush_cache", "/reset_prefix_cache", nil)
}

// Health probes GET /health once.
func (c *Client) Health(ctx context.Context) error {
	_, err := c.t.RoundTripN(ctx, 1, "health", http.MethodGet, "/health", nil, nil)
	return err
}
