package httpclient

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
)

// parseAll feeds stream in pieces of at most piece bytes (all at once if
// piece ≤ 0) and returns the events' data.
func parseAll(stream []byte, piece, max int) ([]string, error) {
	p := EventParser{Max: max}
	var got []string
	ev := func(d []byte) error { got = append(got, string(d)); return nil }
	if piece <= 0 {
		piece = len(stream) + 1
	}
	for len(stream) > 0 {
		n := min(piece, len(stream))
		if err := p.Feed(stream[:n], ev); err != nil {
			return got, err
		}
		stream = stream[n:]
	}
	return got, nil
}

// TestEventParserSpecExamples: the examples of the WHATWG HTML standard's
// "Interpreting an event stream" section (server-sent events), plus the
// shapes SGLang and vLLM write. The last event of a stream that does not
// end in a blank line is not dispatched, as the standard says.
func TestEventParserSpecExamples(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		want   []string
	}{
		{"stock ticker", "data: YHOO\ndata: +2\ndata: 10\n\n", []string{"YHOO\n+2\n10"}},
		{"comments and ids", ": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event\n", []string{"first event", "second event"}},
		{"empty data", "data\n\ndata\ndata\n\ndata:", []string{"", "\n"}},
		{"optional space", "data:test\n\ndata: test\n\n", []string{"test", "test"}},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []string{"a", "b"}},
		{"lone cr", "data: a\r\rdata: b\r\r", []string{"a", "b"}},
		{"other fields", "event: message\nretry: 10\ndata: x\n\n", []string{"x"}},
		{"sglang", "data: {\"output_ids\":[1]}\n\ndata: [DONE]\n\n", []string{`{"output_ids":[1]}`, "[DONE]"}},
		{"keep-alives only", ": ping\n\n: ping\n\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, piece := range []int{0, 1, 2, 3, 7} {
				got, err := parseAll([]byte(tc.stream), piece, 1<<20)
				require.NoError(t, err)
				require.Equal(t, tc.want, got, "piece %d", piece)
			}
		})
	}
}

func TestEventParserLimit(t *testing.T) {
	_, err := parseAll([]byte("data: "+string(bytes.Repeat([]byte("x"), 100))+"\n\n"), 3, 50)
	require.ErrorIs(t, err, ErrEventTooLarge)
	// Many lines of one event are bounded together.
	_, err = parseAll(bytes.Repeat([]byte("data: 0123456789\n"), 10), 0, 50)
	require.ErrorIs(t, err, ErrEventTooLarge)
	got, err := parseAll([]byte("data: 0123456789\n\n"), 0, 50)
	require.NoError(t, err)
	require.Equal(t, []string{"0123456789"}, got)
}

func TestStreamedError(t *testing.T) {
	for _, tc := range []struct {
		data     string
		sentinel error
		msg      string
	}{
		// sgl-project/sglang python/sglang/srt/entrypoints/http_server.py
		// generate_request @ 0025436e: a ValueError mid-stream.
		{`{"error": {"message": "too long"}}`, server.ErrBadRequest, "too long"},
		// vllm-project/vllm ErrorResponse (create_streaming_error_response).
		{`{"error": {"message": "engine died", "type": "InternalServerError", "param": null, "code": 500}}`, server.ErrBadResponse, "engine died"},
		{`{"error": {"message": "busy", "code": 503}}`, server.ErrUnavailable, "busy"},
		{`{"error": {"message": "slow down", "code": 429}}`, server.ErrOverloaded, "slow down"},
		// vLLM's older error object.
		{`{"object": "error", "message": "bad", "type": "BadRequestError", "code": 400}`, server.ErrBadRequest, "bad"},
		{`{"error": "plain"}`, server.ErrBadRequest, "plain"},
	} {
		err := StreamedError([]byte(tc.data))
		require.ErrorIs(t, err, tc.sentinel, tc.data)
		require.ErrorContains(t, err, tc.msg)
	}
	for _, ok := range []string{`{"output_ids":[1],"meta_info":{"finish_reason":{"type":"abort","message":"x"}}}`,
		`{"error": null, "choices": []}`, `[1]`, `{"message":`, ``} {
		require.NoError(t, StreamedError([]byte(ok)), ok)
	}
}

// FuzzEventParser: an event stream is untrusted; the events do not depend
// on how the bytes were cut into reads, no event exceeds the limit, and
// nothing panics.
func FuzzEventParser(f *testing.F) {
	for _, s := range []string{"data: a\n\n", "data: a\r\n\r\n: c\r\rdata:b\ndata\n\n", "data: [DONE]\n\n", "\r\n\r\n\n\r", "data:" + string(bytes.Repeat([]byte("x"), 70)) + "\n\n"} {
		f.Add([]byte(s), uint8(1))
		f.Add([]byte(s), uint8(5))
	}
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		const max = 64
		whole, errWhole := parseAll(stream, 0, max)
		cut, errCut := parseAll(stream, int(piece%16)+1, max)
		require.Equal(t, errWhole == nil, errCut == nil)
		if errWhole != nil {
			require.True(t, errors.Is(errWhole, ErrEventTooLarge))
			return
		}
		require.Equal(t, whole, cut)
		for _, ev := range whole {
			require.LessOrEqual(t, len(ev), max)
		}
	})
}
