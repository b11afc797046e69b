package sglang

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
	"github.com/agentrl/agentrl/server/internal/wire"
)

// RoutingHeader is the header sglang-router (sgl-model-gateway) keys sticky
// routing on; the client sets it to the request id.
const RoutingHeader = "X-SMG-Routing-Key"

// Config configures a Client. Only BaseURL is required.
type Config struct {
	// BaseURL is the server's root, e.g. "http://10.0.0.5:30000".
	BaseURL string
	// Name identifies the server in errors; default BaseURL.
	Name string
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
	// RoutingLayers and RoutingTopK are the model's MoE layers and experts
	// per token (config.json num_hidden_layers and num_experts_per_tok),
	// needed to read the routed experts SGLang returns as a flat array when
	// SamplingParams.RoutedExperts asks for them.
	RoutingLayers, RoutingTopK int
}

// Client talks to one SGLang server (or an sglang-router in front of many)
// over its native API. It implements server.LLMServer, server.Aborter,
// server.Sleeper, server.WeightUpdater and server.HealthChecker. Safe for
// concurrent use.
type Client struct {
	cfg Config
	t   *httpclient.Transport

	// released holds the memory tags this client released and has not
	// resumed, in release order. SGLang's resume handler removes each
	// requested tag from its set of offloaded tags (a KeyError for one
	// not released) and reads an empty list as "all tags", so WakeUp must
	// name exactly these.
	mu       sync.Mutex
	released []string
}

// New returns a client for cfg.BaseURL.
func New(cfg Config) (*Client, error) {
	t, err := httpclient.New("sglang", httpclient.Options{BaseURL: cfg.BaseURL, Name: cfg.Name, HTTPClient: cfg.HTTPClient,
		AuthToken: cfg.AuthToken, MaxAttempts: cfg.MaxAttempts, BackoffBase: cfg.BackoffBase, BackoffMax: cfg.BackoffMax,
		MaxResponseBytes: cfg.MaxResponseBytes, AbortTimeout: cfg.AbortTimeout})
	if err != nil {
		return nil, err
	}
	cfg.Name = t.Name()
	c := &Client{cfg: cfg, t: t}
	return c, nil
}

// Name returns the name used in errors.
func (c *Client) Name() string { return c.cfg.Name }

// Generate calls /generate. When ctx ends first, the request is aborted on
// the server (best effort, within AbortTimeout) and the error wraps
// ctx.Err().
func (c *Client) Generate(ctx context.Context, req server.GenerateRequest) (server.TokenOutput, error) {
	if req.RequestID == "" {
		// Without a known rid a cancelled call could not be aborted.
		req.RequestID = httpclient.NewRequestID()
	}
	body, err := appendGenerateRequest(make([]byte, 0, 256+len(req.PromptIDs)*7), req, false)
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", 0, false, err)
	}
	hdr := http.Header{RoutingHeader: {req.RequestID}}
	data, err := c.t.RoundTrip(ctx, "generate", http.MethodPost, "/generate", body, hdr)
	if err != nil {
		if ctx.Err() != nil {
			c.abortAfterCancel(ctx, req.RequestID)
		}
		return server.TokenOutput{}, err
	}
	out, err := ParseGenerateResponse(data, req.Params.Logprobs)
	if err == nil && req.Params.PromptLogprobs {
		out.PromptLogprobs, err = parseInputLogprobs(data, req)
	}
	if err == nil && req.Params.TopLogprobs > 0 {
		out.TopLogprobs, err = parseOutputTopLogprobs(data, req.Params.TopLogprobs, len(out.TokenIDs))
	}
	if err == nil && req.Params.RoutedExperts {
		out.RoutedExperts, err = parseRoutedExperts(data, c.cfg.RoutingLayers, c.cfg.RoutingTopK, req.Params.RoutedExpertsFrom, len(req.PromptIDs)+len(out.TokenIDs))
	}
	if err != nil {
		return server.TokenOutput{}, c.t.Errorf("generate", http.StatusOK, false, err)
	}
	return out, nil
}

func (c *Client) abortAfterCancel(ctx context.Context, rid string) {
	body, _ := json.Marshal(map[string]string{"rid": rid})
	c.t.AbortAfterCancel(ctx, "/abort_request", body)
}

// ---- response parsing ------------------------------------------------------

type generateResponse struct {
	Text      string          `json:"text"`
	OutputIDs json.RawMessage `json:"output_ids"`
	MetaInfo  *struct {
		ID                  string          `json:"id"`
		FinishReason        json.RawMessage `json:"finish_reason"`
		PromptTokens        int             `json:"prompt_tokens"`
		CompletionTokens    int             `json:"completion_tokens"`
		CachedTokens        int             `json:"cached_tokens"`
		WeightVersion       json.RawMessage `json:"weight_version"`
		NumRetractions      int             `json:"num_retractions"`
		OutputTokenLogprobs json.RawMessage `json:"output_token_logprobs"`
	} `json:"meta_info"`
}

// ParseGenerateResponse reads a non-streaming /generate response body. With
// wantLogprobs, every output token must have a logprob in
// meta_info.output_token_logprobs whose token id matches output_ids.
func ParseGenerateResponse(data []byte, wantLogprobs bool) (server.TokenOutput, error) {
	var r generateResponse
	if err := json.Unmarshal(data, &r); err != nil {
		var arr []json.RawMessage
		if json.Unmarshal(data, &arr) == nil {
			return server.TokenOutput{}, httpclient.BadResponse("got a batch response (a JSON list) to a single request")
		}
		return server.TokenOutput{}, httpclient.BadResponse("invalid /generate response JSON: %v", err)
	}
	if r.MetaInfo == nil {
		return server.TokenOutput{}, httpclient.BadResponse("/generate response has no meta_info")
	}
	m := r.MetaInfo
	var out server.TokenOutput
	var err error
	if out.StopReason, err = parseFinishReason(m.FinishReason); err != nil {
		return out, err
	}
	if len(bytes.TrimSpace(r.OutputIDs)) > 0 && string(r.OutputIDs) != "null" {
		if err := json.Unmarshal(r.OutputIDs, &out.TokenIDs); err != nil {
			return out, httpclient.BadResponse("output_ids: expected a list of token ids: %v", err)
		}
	}
	var lps []float32
	var lpIDs []int32
	if isSet(m.OutputTokenLogprobs) {
		if lps, lpIDs, err = parseLogprobTriples(m.OutputTokenLogprobs); err != nil {
			return out, httpclient.BadResponse("meta_info.output_token_logprobs%v", err)
		}
	}
	if out.TokenIDs == nil && lpIDs != nil {
		// Older servers return the ids only inside the logprob entries.
		out.TokenIDs = lpIDs
	}
	if out.TokenIDs == nil {
		if m.CompletionTokens > 0 {
			return out, httpclient.BadResponse("response has no output_ids for %d completion tokens", m.CompletionTokens)
		}
		out.TokenIDs = []int32{}
	}
	if wantLogprobs {
		switch {
		case lps == nil && len(out.TokenIDs) > 0:
			return out, httpclient.BadResponse("logprobs were requested but meta_info.output_token_logprobs is missing")
		case len(lps) != len(out.TokenIDs):
			return out, httpclient.BadResponse("meta_info.output_token_logprobs has %d entries for %d output_ids", len(lps), len(out.TokenIDs))
		}
		for i := range lpIDs {
			if lpIDs[i] != out.TokenIDs[i] {
				return out, httpclient.BadResponse("meta_info.output_token_logprobs[%d] is for token %d but output_ids[%d] is %d", i, lpIDs[i], i, out.TokenIDs[i])
			}
		}
		out.Logprobs = lps
		if out.Logprobs == nil {
			out.Logprobs = []float32{}
		}
	}
	out.PromptTokens = m.PromptTokens
	out.CachedTokens = m.CachedTokens
	out.Retractions = m.NumRetractions
	if out.WeightVersion, err = parseWeightVersion(m.WeightVersion); err != nil {
		return out, err
	}
	return out, nil
}

// parseOutputTopLogprobs reads meta_info.output_top_logprobs of a
// request that asked for top_logprobs_num k: one list per output token.
func parseOutputTopLogprobs(data []byte, k, n int) ([][]server.TopLogprob, error) {
	var r struct {
		MetaInfo struct {
			OutputTopLogprobs json.RawMessage `json:"output_top_logprobs"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, httpclient.BadResponse("meta_info.output_top_logprobs: %v", err)
	}
	if !isSet(r.MetaInfo.OutputTopLogprobs) {
		if n == 0 {
			return [][]server.TopLogprob{}, nil
		}
		return nil, httpclient.BadResponse("top logprobs were requested but meta_info.output_top_logprobs is missing")
	}
	top, err := parseTopLogprobs(r.MetaInfo.OutputTopLogprobs, k)
	if err != nil {
		return nil, httpclient.BadResponse("meta_info.output_top_logprobs%v", err)
	}
	if len(top) != n {
		return nil, httpclient.BadResponse("meta_info.output_top_logprobs has %d entries for %d output_ids", len(top), n)
	}
	return top, nil
}

// parseRoutedExperts reads meta_info.routed_experts (and
// routed_experts_dtype) of a request that asked for them: nil when the
// server sent none (it runs without --enable-return-routed-experts, or the
// request was aborted before a forward pass). The rows cover the sequence
// from position from (routed_experts_start_len, 0 for the whole) and
// cannot outnumber its seqLen-from tokens.
func parseRoutedExperts(data []byte, layers, topk, from, seqLen int) (*server.Routing, error) {
	var r struct {
		MetaInfo struct {
			RoutedExperts *string `json:"routed_experts"`
			Dtype         string  `json:"routed_experts_dtype"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, httpclient.BadResponse("meta_info.routed_experts: %v", err)
	}
	if r.MetaInfo.RoutedExperts == nil {
		return nil, nil
	}
	rt, err := wire.RoutingFromFlat(*r.MetaInfo.RoutedExperts, r.MetaInfo.Dtype, layers, topk)
	if err != nil {
		return nil, httpclient.BadResponse("meta_info.%v", err)
	}
	if rt.Rows() > seqLen-from {
		return nil, httpclient.BadResponse("meta_info.routed_experts has %d positions for a sequence of %d tokens from position %d", rt.Rows(), seqLen, from)
	}
	rt.Start = from
	return rt, nil
}

// parseInputLogprobs reads meta_info.input_token_logprobs of a request
// that asked for prompt logprobs from p = PromptLogprobsFrom: SGLang
// returns the prompt from logprob_start_len = max(p-1, 0), the first
// entry's logprob null (no logprob: NaN here), and each entry's token id
// must be the prompt's.
func parseInputLogprobs(data []byte, req server.GenerateRequest) ([]float32, error) {
	var r struct {
		MetaInfo struct {
			InputTokenLogprobs json.RawMessage `json:"input_token_logprobs"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, httpclient.BadResponse("invalid /generate response JSON: %v", err)
	}
	if !isSet(r.MetaInfo.InputTokenLogprobs) {
		return nil, httpclient.BadResponse("prompt logprobs were requested but meta_info.input_token_logprobs is missing")
	}
	lps, ids, err := parseLogprobTriples(r.MetaInfo.InputTokenLogprobs)
	if err != nil {
		return nil, httpclient.BadResponse("meta_info.input_token_logprobs%v", err)
	}
	from := req.Params.PromptLogprobsFrom
	start := max(from-1, 0)
	if want := len(req.PromptIDs) - start; len(ids) != want {
		return nil, httpclient.BadResponse("meta_info.input_token_logprobs has %d entries for the %d prompt tokens from %d", len(ids), want, start)
	}
	for i, id := range ids {
		if id != req.PromptIDs[start+i] {
			return nil, httpclient.BadResponse("meta_info.input_token_logprobs[%d] is for token %d but the prompt's token %d is %d", i, id, start+i, req.PromptIDs[start+i])
		}
	}
	if from == 0 {
		lps[0] = float32(math.NaN()) // position 0: nothing precedes it
		return lps, nil
	}
	return lps[1:], nil
}

// parseFinishReason accepts {"type": ...} objects and bare strings.
func parseFinishReason(raw json.RawMessage) (server.StopReason, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", httpclient.BadResponse("meta_info.finish_reason is missing (the request did not finish)")
	}
	var typ string
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &typ); err != nil {
			return "", httpclient.BadResponse("meta_info.finish_reason: %v", err)
		}
	} else {
		var f struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			return "", httpclient.BadResponse("meta_info.finish_reason: expected an object with a type: %v", err)
		}
		typ = f.Type
	}
	switch typ {
	case "stop", "eos":
		return server.StopEOS, nil
	case "length":
		return server.StopLength, nil
	case "abort":
		return server.StopAbort, nil
	}
	return "", httpclient.BadResponse("meta_info.finish_reason: unknown type %q", typ)
}

func isSet(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && string(raw) != "null"
}

// parseWeightVersion reads SGLang's weight_version: a string ("default",
// "7") or a number; absent and "default" are 0.
func parseWeightVersion(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return 0, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		if f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, nil // not an integer version: no order to carry
		}
		return int64(f), nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, httpclient.BadResponse("meta_info.weight_version: expected a string or integer, got %.40s", raw)
	}
	if s == "" || s == "default" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, nil // versions that are not integers (hashes, tags) carry no order
	}
	return n, nil
}

// ---- control ----------------------------------------------------------------

func (c *Client) post(ctx context.Context, op, path string, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, c.t.Errorf(op, 0, false, err)
	}
	return c.t.RoundTrip(ctx, op, http.MethodPost, path, body, nil)
}

// Abort aborts the running request rid. Unknown ids are not an error.
func (c *Client) Abort(ctx context.Context, rid string) error {
	_, err := c.post(ctx, "abort", "/abort_request", map[string]string{"rid": rid})
	return err
}

// AbortAll aborts every running request.
func (c *Client) AbortAll(ctx context.Context) error {
	_, err := c.post(ctx, "abort", "/abort_request", map[string]any{"rid": "", "abort_all": true})
	return err
}

// Health probes GET /health once (no retries: a probe must say how the
// server is now).
func (c *Client) Health(ctx context.Context) error {
	_, err := c.t.RoundTripN(ctx, 1, "health", http.MethodGet, "/health", nil, nil)
	return err
}

// Sleep releases GPU memory: the KV cache (SleepKVCache) or the weights too
// (SleepWeights), via /release_memory_occupation. Tags already released by
// an earlier Sleep are not sent again.
func (c *Client) Sleep(ctx context.Context, level server.SleepLevel) error {
	var want []string
	switch level {
	case server.SleepKVCache:
		want = []string{"kv_cache"}
	case server.SleepWeights:
		want = []string{"kv_cache", "weights"}
	default:
		return c.t.Errorf("sleep", 0, false, fmt.Errorf("sleep level %d is not 1 or 2: %w", level, server.ErrBadRequest))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	tags := make([]string, 0, len(want))
	for _, t := range want {
		if !slices.Contains(c.released, t) {
			tags = append(tags, t)
		}
	}
	if len(tags) == 0 {
		return nil
	}
	if _, err := c.post(ctx, "sleep", "/release_memory_occupation", map[string]any{"tags": tags}); err != nil {
		return err
	}
	c.released = append(c.released, tags...)
	return nil
}

// WakeUp re-occupies the memory released by this client's Sleep calls via
// /resume_memory_occupation, naming those tags. A client that has no record
// of a Sleep (e.g. the server was put to sleep by another process) sends an
// empty body, which SGLang reads as "all tags".
func (c *Client) WakeUp(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var body any = struct{}{}
	if len(c.released) > 0 {
		body = map[string]any{"tags": c.released}
	}
	if _, err := c.post(ctx, "wake_up", "/resume_memory_occupation", body); err != nil {
		return err
	}
	c.released = nil
	return nil
}

// UpdateWeights loads a checkpoint from w.Path on the server's disk
// (/update_weights_from_disk), tagging outputs with w.Version.
// In-process tensors cannot be sent over this API.
func (c *Client) UpdateWeights(ctx context.Context, w server.Weights) error {
	if w.Path == "" {
		return c.t.Errorf("update_weights", 0, false, fmt.Errorf("weights need a Path the server can load (tensors cannot be sent over HTTP): %w", server.ErrBadRequest))
	}
	data, err := c.post(ctx, "update_weights", "/update_weights_from_disk", map[string]any{
		"model_path":     w.Path,
		"weight_version": strconv.FormatInt(w.Version, 10),
		"flush_cache":    true,
	})
	if err != nil {
		return err
	}
	var r struct {
		Success *bool  `json:"success"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal(data, &r); err != nil || r.Success == nil {
		return c.t.Errorf("update_weights", http.StatusOK, false, httpclient.BadResponse("expected {\"success\": ...}, got %.200s", data))
	}
	if !*r.Success {
		return c.t.Errorf("update_weights", http.StatusOK, false, fmt.Errorf("server refused the update: %s: %w", r.Message, server.ErrBadRequest))
	}
	return nil
}

// FlushCache empties the prefix cache (/flush_cache).
func (c *Client) FlushCache(ctx context.Context) error {
	_, err := c.post(ctx, "flush_cache", "/flush_cache", struct{}{})
	return err
}

// Pause holds new requests (/pause_generation) with SGLang's mode for the
// running ones: "abort" (PauseAbort), "in_place" (PauseKeep) or "retract"
// (PauseRetract). SGLang has no mode that waits for the running requests
// (PauseWait): that is refused with errors.ErrUnsupported before any call.
func (c *Client) Pause(ctx context.Context, mode server.PauseMode) error {
	mode, err := server.ParsePauseMode(string(mode))
	if err != nil {
		return err
	}
	var m string
	switch mode {
	case server.PauseAbort:
		m = "abort"
	case server.PauseKeep:
		m = "in_place"
	case server.PauseRetract:
		m = "retract"
	default:
		return server.UnsupportedPause("sglang", mode)
	}
	_, err = c.post(ctx, "pause", "/pause_generation", map[string]string{"mode": m})
	return err
}

// Resume ends a Pause (/continue_generation).
func (c *Client) Resume(ctx context.Context) error {
	_, err := c.post(ctx, "resume", "/continue_generation", struct{}{})
	return err
}
