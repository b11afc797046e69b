package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentrl/agentrl/chat"
)

// HTTPConfig configures an HTTP tool.
type HTTPConfig struct {
	URL              string            `json:"url"`                // http or https endpoint that gets the POSTs
	Headers          map[string]string `json:"headers"`            // extra request headers (e.g. Authorization)
	RequestTimeout   float64           `json:"request_timeout"`    // seconds; 0 = 30
	MaxResponseBytes int64             `json:"max_response_bytes"` // 0 = 1 MiB
}

// HTTP is a stateless tool that POSTs the call's arguments (the exact JSON
// object the model wrote) to a URL. A 2xx response whose body is a JSON
// object with a string "text" is read as a Result ({"text", "reward",
// "metrics"}); any other 2xx body is the result text as is. Other statuses,
// bodies over the size limit and transport errors are execution errors.
type HTTP struct {
	schema  chat.ToolSchema
	cfg     HTTPConfig
	client  *http.Client
	timeout time.Duration
}

// NewHTTP checks cfg and returns the tool.
func NewHTTP(schema chat.ToolSchema, cfg HTTPConfig) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("http tool %q: url must be an absolute http(s) URL, got %q", schema.Function.Name, cfg.URL)
	}
	if cfg.RequestTimeout < 0 || cfg.MaxResponseBytes < 0 {
		return nil, fmt.Errorf("http tool %q: request_timeout and max_response_bytes must not be negative", schema.Function.Name)
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = 1 << 20
	}
	timeout := 30 * time.Second
	if cfg.RequestTimeout > 0 {
		timeout = time.Duration(cfg.RequestTimeout * float64(time.Second))
	}
	return &HTTP{schema: schema, cfg: cfg, client: &http.Client{}, timeout: timeout}, nil
}

// Schema implements Tool.
func (h *HTTP) Schema() chat.ToolSchema { return h.schema }

// Create implements Tool; the tool keeps no per-trajectory state.
func (h *HTTP) Create(context.Context, map[string]any) (string, error) { return "", nil }

// Release implements Tool.
func (h *HTTP) Release(context.Context, string) error { return nil }

// Execute POSTs args and reads the reply.
func (h *HTTP) Execute(ctx context.Context, _ string, args json.RawMessage) (Result, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.cfg.URL, bytes.NewReader(args))
	if err != nil {
		return Result{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Result{}, fmt.Errorf("request timed out after %v", h.timeout)
		}
		return Result{}, fmt.Errorf("request failed: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, h.cfg.MaxResponseBytes+1))
	if err != nil {
		return Result{}, fmt.Errorf("reading the response: %w", err)
	}
	if int64(len(body)) > h.cfg.MaxResponseBytes {
		return Result{}, fmt.Errorf("response larger than %d bytes", h.cfg.MaxResponseBytes)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		snippet := strings.TrimSpace(Truncate(string(body), 200, TruncateRight))
		return Result{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, snippet)
	}
	var r struct {
		Text    *string            `json:"text"`
		Reward  float64            `json:"reward"`
		Metrics map[string]float64 `json:"metrics"`
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &r) == nil && r.Text != nil {
		return Result{Text: *r.Text, Reward: r.Reward, Metrics: r.Metrics}, nil
	}
	return Result{Text: string(body)}, nil
}
