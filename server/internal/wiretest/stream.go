package wiretest

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// SSE is how a test's replay of an engine's streamed answer writes its
// events: the replay turns one scripted output into the engine's event
// JSON (that part is each engine's own), SSE writes them the way servers
// do and can be told to misbehave. Embed it in the replay; set Gone when
// Gate is set.
type SSE struct {
	// CRLF ends lines with CRLF; Comments adds a keep-alive comment before
	// each event; Split cuts every write in two flushed pieces.
	CRLF, Comments, Split bool
	// Gate, when set, holds the events after the first until it closes.
	Gate chan struct{}
	// ErrAfter, when > 0, sends the error event after that many events;
	// CutAfter closes the connection after that many.
	ErrAfter, CutAfter int
	// Gone is closed when the client goes away while Gate holds the stream.
	Gone     chan struct{}
	goneOnce sync.Once
}

// Stream writes events, then tail, each as a `data: ` event, and
// `data: [DONE]`, as text/event-stream. errEvent is the event that
// ErrAfter sends (followed by [DONE]).
func (s *SSE) Stream(w http.ResponseWriter, r *http.Request, events []string, errEvent string, tail ...string) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	fl := w.(http.Flusher)
	nl := "\n"
	if s.CRLF {
		nl = "\r\n"
	}
	write := func(p string) bool {
		parts := []string{p}
		if s.Split && len(p) > 1 {
			parts = []string{p[:len(p)/2], p[len(p)/2:]}
		}
		for _, p := range parts {
			if _, err := w.Write([]byte(p)); err != nil {
				return false
			}
			fl.Flush()
		}
		return true
	}
	for i, ev := range events {
		if s.Comments && !write(": keep-alive"+nl+nl) {
			return
		}
		if !write("data: " + ev + nl + nl) {
			return
		}
		sent := i + 1
		if sent == 1 && s.Gate != nil {
			select {
			case <-s.Gate:
			case <-r.Context().Done():
				s.goneOnce.Do(func() { close(s.Gone) })
				return
			}
		}
		if sent == s.ErrAfter {
			write("data: " + errEvent + nl + nl)
			write("data: [DONE]" + nl + nl)
			return
		}
		if sent == s.CutAfter {
			panic(http.ErrAbortHandler) // closes the connection without [DONE]
		}
	}
	for _, ev := range tail {
		write("data: " + ev + nl + nl)
	}
	write("data: [DONE]" + nl + nl)
}

// SSELines is a transport that answers every request with one event per
// line of events, then [DONE], as an event stream: a fuzz target's input
// for a client's stream reader. It needs no listener (a fuzz target that
// started an httptest server per input ran too slowly to explore), and the
// client's own HTTP code still reads the body.
func SSELines(events string) http.RoundTripper {
	var b strings.Builder
	for _, ev := range strings.Split(events, "\n") {
		b.WriteString("data: " + ev + "\n\n")
	}
	b.WriteString("data: [DONE]\n\n")
	return sseAnswer(b.String())
}

// sseAnswer answers every request with itself as an event stream.
type sseAnswer string

func (a sseAnswer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		_ = r.Body.Close()
	}
	return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(strings.NewReader(string(a))),
		ContentLength: -1, Request: r}, nil
}

// CheckStreamed checks what holds of any stream, however broken: the
// tokens GenerateStream returns are exactly those it emitted, a call that
// succeeds with logprobs has one per token, and a failure is a
// *server.Error.
func CheckStreamed(t *testing.T, c server.Streamer, logprobs bool) {
	t.Helper()
	var got servertest.Chunks
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r", Params: server.SamplingParams{Logprobs: logprobs}}, got.Emit)
	require.Len(t, out.TokenIDs, len(got.TokenIDs))
	if len(got.TokenIDs) > 0 {
		require.Equal(t, got.TokenIDs, out.TokenIDs)
	}
	if err == nil && logprobs {
		require.Len(t, out.Logprobs, len(out.TokenIDs))
	}
	if err != nil {
		var se *server.Error
		require.ErrorAs(t, err, &se)
	}
}

// CheckStreamCancel checks that cancelling mid-stream closes the
// connection (the server sees its client go away) and returns first, the
// tokens so far, as StopAbort with an error wrapping context.Canceled. c
// streams from a replay whose s holds its events after the first behind
// a Gate that never opens.
func CheckStreamCancel(t *testing.T, c server.Streamer, s *SSE, first []int32) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, err := c.GenerateStream(ctx, server.GenerateRequest{RequestID: "r1"}, func(server.Chunk) error {
		cancel()
		return nil
	})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, first, out.TokenIDs)
	require.Equal(t, server.StopAbort, out.StopReason)
	select {
	case <-s.Gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
}

// IDsJSON is ids as a JSON array, as the engines write token ids.
func IDsJSON(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return "[" + strings.Join(s, ",") + "]"
}
