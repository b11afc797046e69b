package vllm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentrl/agentrl/server"
)

// DefaultHTTPClient is shared by every Client without its own: one
// connection pool, kept-alive connections reused across calls, enough idle
// connections per host for thousands of concurrent trajectories. Timeouts
// are per call, through the context.
var DefaultHTTPClient = &http.Client{
	Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   5 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   1024,
		IdleConnTimeout:       90 * time.Second,
		ExpectContinueTimeout: time.Second,
	},
}

// maxErrorBody bounds how much of an error response is read into the error.
const maxErrorBody = 4 << 10

// call is one HTTP exchange's outcome.
type call struct {
	status int
	body   []byte
}

// do sends one request and reads the whole response. connect tells whether the request can not
// have reached the server (so resending it is safe).
func (c *Client) do(ctx context.Context, method, path string, body []byte, hdr http.Header) (res call, connect bool, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return call{}, false, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.cfg.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.AuthToken)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return call{}, isConnectError(err), err
	}
	defer resp.Body.Close()
	limit := int64(maxErrorBody)
	if resp.StatusCode < 300 {
		limit = c.cfg.MaxResponseBytes
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return call{status: resp.StatusCode}, false, fmt.Errorf("reading the response body: %w", err)
	}
	if resp.StatusCode < 300 && int64(len(data)) > limit {
		return call{status: resp.StatusCode}, false, fmt.Errorf("response body is larger than %d bytes: %w", limit, server.ErrBadResponse)
	}
	return call{status: resp.StatusCode, body: data}, false, nil
}

// isConnectError reports errors that happened before the request could be
// sent: the server never saw it.
func isConnectError(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// roundTrip sends a request with retries: connect errors and 429/503
// responses (the server refused before doing any work) are retried with
// exponential backoff and full jitter, up to MaxAttempts, while ctx allows.
// Everything else is returned at once. Non-2xx responses become typed
// errors.
func (c *Client) roundTrip(ctx context.Context, op, method, path string, body []byte, hdr http.Header) ([]byte, error) {
	return c.roundTripN(ctx, c.cfg.MaxAttempts, op, method, path, body, hdr)
}

func (c *Client) roundTripN(ctx context.Context, attempts int, op, method, path string, body []byte, hdr http.Header) ([]byte, error) {
	var last error
	for attempt := 0; attempt < attempts; attempt++ {
		if attempt > 0 {
			if err := c.backoff(ctx, attempt); err != nil {
				return nil, c.errorf(op, 0, false, fmt.Errorf("%w (while retrying after: %v)", err, last))
			}
		}
		res, connect, err := c.do(ctx, method, path, body, hdr)
		switch {
		case err != nil && ctx.Err() != nil:
			return nil, c.errorf(op, 0, false, ctx.Err())
		case err != nil && connect:
			last = c.errorf(op, 0, true, fmt.Errorf("%w: %v", server.ErrUnavailable, err))
			continue
		case err != nil && res.status != 0:
			return nil, c.errorf(op, res.status, false, err)
		case err != nil:
			// The request may have reached the server: not safe to resend.
			return nil, c.errorf(op, 0, false, fmt.Errorf("%w: %v", server.ErrUnavailable, err))
		case res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable:
			last = c.statusError(op, res)
			continue
		case res.status >= 300:
			return nil, c.statusError(op, res)
		}
		return res.body, nil
	}
	return nil, last
}

func (c *Client) backoff(ctx context.Context, attempt int) error {
	d := c.cfg.BackoffBase << (attempt - 1)
	if d > c.cfg.BackoffMax || d <= 0 {
		d = c.cfg.BackoffMax
	}
	d = time.Duration(rand.Int64N(int64(d)) + 1)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (c *Client) errorf(op string, status int, retryable bool, err error) error {
	return &server.Error{Server: c.cfg.Name, Op: op, Status: status, Retryable: retryable, Err: err}
}

// statusError maps a non-2xx response to a typed error carrying the server's
// message.
func (c *Client) statusError(op string, res call) error {
	msg := errorMessage(res.body)
	var sentinel error
	retryable := false
	switch {
	case res.status == http.StatusTooManyRequests:
		sentinel, retryable = server.ErrOverloaded, true
	case res.status == http.StatusServiceUnavailable:
		sentinel, retryable = server.ErrUnavailable, true
	case res.status == http.StatusBadGateway || res.status == http.StatusGatewayTimeout:
		sentinel = server.ErrUnavailable
	case res.status >= 400 && res.status < 500:
		sentinel = server.ErrBadRequest
	default:
		sentinel = server.ErrBadResponse
	}
	if msg == "" {
		return c.errorf(op, res.status, retryable, sentinel)
	}
	return c.errorf(op, res.status, retryable, fmt.Errorf("%w: %s", sentinel, msg))
}

// errorMessage extracts the message of an error body: {"error":{"message"}},
// {"error":"..."}, {"message"}, {"detail"}, or the text itself; made valid
// UTF-8 and cut to 500 bytes.
func errorMessage(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	msg := string(body)
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			msg = nested.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			msg = s
		case v.Message != "":
			msg = v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			msg = s
		case len(v.Detail) > 0:
			msg = string(v.Detail)
		}
	}
	msg = strings.ToValidUTF8(msg, "?")
	if len(msg) > 500 {
		cut := 500
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
