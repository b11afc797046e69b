package httpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/agentrl/agentrl/server"
)

// EventParser splits a server-sent event stream (the WHATWG HTML "event
// stream" format that SGLang's and vLLM's streaming endpoints write) into
// the data of its events. Bytes may be fed in pieces of any size: a line
// or an event split across TCP packets is put back together. Lines end
// in LF, CRLF or a lone CR; lines starting with ':' are comments (keep-
// alives); the data lines of one event are joined with '\n'; fields other
// than data (event, id, retry) are ignored, as neither server sends them.
type EventParser struct {
	// Max bounds a line and an event's data, in bytes: a hostile or broken
	// stream cannot make the parser hold more.
	Max int

	line    []byte
	data    []byte
	hasData bool
	afterCR bool // the previous byte was a CR: a LF right after it is part of the same line end
}

// ErrEventTooLarge is returned by Feed for a line or an event larger than Max.
var ErrEventTooLarge = errors.New("event stream line or event is larger than the limit")

// Feed parses b and calls event with the data of each event it completes,
// in order. The slice is only valid during the call. An error from event
// is returned as is.
func (p *EventParser) Feed(b []byte, event func(data []byte) error) error {
	for len(b) > 0 {
		if p.afterCR {
			p.afterCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			return p.appendLine(b)
		}
		if err := p.appendLine(b[:i]); err != nil {
			return err
		}
		p.afterCR = b[i] == '\r'
		b = b[i+1:]
		if err := p.endLine(event); err != nil {
			return err
		}
	}
	return nil
}

func (p *EventParser) appendLine(b []byte) error {
	if len(p.line)+len(b) > p.Max {
		return fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, p.Max)
	}
	p.line = append(p.line, b...)
	return nil
}

func (p *EventParser) endLine(event func([]byte) error) error {
	line := p.line
	p.line = p.line[:0]
	if len(line) == 0 {
		// A blank line dispatches the event, if it has data.
		if !p.hasData {
			return nil
		}
		p.hasData = false
		data := p.data
		p.data = p.data[:0]
		return event(data)
	}
	if line[0] == ':' {
		return nil // a comment: keep-alives
	}
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	if string(name) != "data" {
		return nil
	}
	if p.hasData {
		if len(p.data)+1+len(value) > p.Max {
			return fmt.Errorf("%w (%d bytes)", ErrEventTooLarge, p.Max)
		}
		p.data = append(p.data, '\n')
	}
	p.data = append(p.data, value...)
	p.hasData = true
	return nil
}

// Pending reports whether the parser holds part of an event that the
// stream has not finished.
func (p *EventParser) Pending() bool { return p.hasData || len(p.line) > 0 }

// StreamHandler receives the answer to a Stream call.
type StreamHandler struct {
	// Event is called with the data of each event before "[DONE]".
	Event func(data []byte) error
	// Whole is called with the body of a 2xx answer that is not an event
	// stream (a server that does not stream this endpoint answers the
	// whole result at once).
	Whole func(body []byte) error
}

// ErrStreamCut is wrapped by the error of a stream that ended without
// "[DONE]": the connection closed or broke mid-answer.
var ErrStreamCut = errors.New("the event stream ended before [DONE]")

// Stream sends a request whose answer is read as it arrives. The sending
// is retried as RoundTrip does (connect errors, 429 and 503 answers: no
// byte of an answer had been read). A 2xx text/event-stream answer is
// parsed into events, each handed to h.Event, until the "[DONE]" event
// (Stream then returns nil); any other 2xx answer is read whole (within
// MaxResponseBytes) and handed to h.Whole. A single line or event is
// bounded by MaxResponseBytes too. When ctx ends the connection is
// closed, which tells the server to stop. Errors are *server.Error values
// naming the server, op and path; none is retryable once an answer
// started, since the server may have generated.
func (c *Transport) Stream(ctx context.Context, op, path string, body []byte, hdr http.Header, h StreamHandler) error {
	var last error
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		if attempt > 0 {
			if err := c.backoff(ctx, attempt); err != nil {
				return c.Errorf(op, 0, false, fmt.Errorf("%w (while retrying after: %v)", err, last))
			}
		}
		resp, connect, err := c.open(ctx, path, body, hdr)
		switch {
		case err != nil && ctx.Err() != nil:
			return c.Errorf(op, 0, false, ctx.Err())
		case err != nil && connect:
			last = c.Errorf(op, 0, true, fmt.Errorf("%w: %v", server.ErrUnavailable, err))
			continue
		case err != nil:
			return c.Errorf(op, 0, false, fmt.Errorf("%w: %v", server.ErrUnavailable, err))
		}
		if resp.StatusCode >= 300 {
			data, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			resp.Body.Close()
			if rerr != nil && ctx.Err() != nil {
				return c.Errorf(op, 0, false, ctx.Err())
			}
			res := call{status: resp.StatusCode, body: data}
			if res.status == http.StatusTooManyRequests || res.status == http.StatusServiceUnavailable {
				last = c.statusError(op, res)
				continue
			}
			return c.statusError(op, res)
		}
		err = c.readStream(ctx, path, resp, h)
		resp.Body.Close()
		if err == nil {
			return nil
		}
		var se *server.Error
		if errors.As(err, &se) {
			return err
		}
		if ctx.Err() != nil {
			if !errors.Is(err, ctx.Err()) {
				err = fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			return c.Errorf(op, 0, false, err)
		}
		return c.Errorf(op, resp.StatusCode, false, err)
	}
	return last
}

// open sends the request and returns the response with its body unread.
func (c *Transport) open(ctx context.Context, path string, body []byte, hdr http.Header) (*http.Response, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(body))
	if err != nil {
		return nil, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream, application/json")
	if c.cfg.AuthToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.AuthToken)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, isConnectError(err), err
	}
	return resp, false, nil
}

// readStream reads a 2xx answer.
func (c *Transport) readStream(ctx context.Context, path string, resp *http.Response, h StreamHandler) error {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if mt != "text/event-stream" {
		limit := c.cfg.MaxResponseBytes
		data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: reading the response body: %w: %v", path, server.ErrUnavailable, err)
		}
		if int64(len(data)) > limit {
			return fmt.Errorf("%s: response body is larger than %d bytes: %w", path, limit, server.ErrBadResponse)
		}
		return h.Whole(data)
	}
	max := c.cfg.MaxResponseBytes
	if max > int64(int(^uint(0)>>1)) {
		max = int64(int(^uint(0) >> 1))
	}
	p := EventParser{Max: int(max)}
	done := false
	event := func(data []byte) error {
		if done {
			return nil
		}
		if string(bytes.TrimSpace(data)) == "[DONE]" {
			done = true
			return nil
		}
		return h.Event(data)
	}
	buf := make([]byte, 32<<10)
	for !done {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if ferr := p.Feed(buf[:n], event); ferr != nil {
				if errors.Is(ferr, ErrEventTooLarge) {
					return fmt.Errorf("%s: %w: %w", path, server.ErrBadResponse, ferr)
				}
				return ferr
			}
		}
		if done {
			// Leave the connection reusable when the rest is small (a
			// final blank line); otherwise closing it is cheaper.
			_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
			return nil
		}
		if err == io.EOF {
			return fmt.Errorf("%s: %w: %w", path, server.ErrUnavailable, ErrStreamCut)
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("%s: reading the event stream: %w: %v", path, server.ErrUnavailable, err)
		}
	}
	return nil
}

// StreamedError reads an error event, which SGLang and vLLM send in place
// of a chunk when a streamed request fails after the 200 answer:
// {"error": {"message": ..., "code": ...}}, {"error": "..."} or vLLM's
// older {"object": "error", "message": ..., "code": ...}. It returns nil
// for any other event. The sentinel follows the code when there is one
// (4xx: ErrBadRequest, 429: ErrOverloaded, 503: ErrUnavailable, other:
// ErrBadResponse) and is ErrBadRequest without one: SGLang's stream turns
// only the ValueErrors of request validation into error events.
func StreamedError(data []byte) error {
	i := 0
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	if i >= len(data) || data[i] != '{' || (!bytes.Contains(data, []byte(`"error"`)) && !bytes.Contains(data, []byte(`"message"`))) {
		return nil
	}
	var v struct {
		Error   json.RawMessage `json:"error"`
		Object  string          `json:"object"`
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	code := v.Code
	switch {
	case len(v.Error) > 0 && string(v.Error) != "null":
		var nested struct {
			Code json.RawMessage `json:"code"`
		}
		if json.Unmarshal(v.Error, &nested) == nil && len(nested.Code) > 0 {
			code = nested.Code
		}
	case v.Object == "error":
	default:
		return nil
	}
	msg := errorMessage(data)
	var status int
	_ = json.Unmarshal(code, &status)
	var sentinel error
	switch {
	case status == http.StatusTooManyRequests:
		sentinel = server.ErrOverloaded
	case status == http.StatusServiceUnavailable:
		sentinel = server.ErrUnavailable
	case status >= 400 && status < 500, status == 0:
		sentinel = server.ErrBadRequest
	default:
		sentinel = server.ErrBadResponse
	}
	return fmt.Errorf("the server reported an error mid-stream: %w: %s", sentinel, msg)
}
