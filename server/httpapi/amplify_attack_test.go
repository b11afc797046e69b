package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// awaitRefusedConns waits for net/http's goroutines of connections it
// closes after refusing a body it did not read (it lingers 500 ms so the
// client reads the answer), which goleak would report at the end of a
// run of these tests alone.
func awaitRefusedConns(t *testing.T) {
	t.Cleanup(func() {
		require.Eventually(t, func() bool {
			buf := make([]byte, 1<<20)
			return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "closeWriteAndWait")
		}, 10*time.Second, 10*time.Millisecond)
	})
}

// idList is a JSON list of n ids, all 1.
func idList(n int) string {
	return "[" + strings.TrimSuffix(strings.Repeat("1,", n), ",") + "]"
}

// TestAttackLongStopList: stop_token_ids is checked for every generated
// token, by the engine and again by the stream path; 8 M ids made a
// 4,000-token request take 47 s instead of 20 s. A list over
// server.MaxStopTokenIDs is refused with 400 naming the field on every
// endpoint that takes one; a list at the cap still works (its stop id
// ends the text, trimmed, as a one-id list does).
func TestAttackLongStopList(t *testing.T) {
	awaitRefusedConns(t)
	s := start(t, servertest.New(servertest.Config{Rule: servertest.Constant(5, 6, 7)}), httpapi.Config{})
	over := idList(server.MaxStopTokenIDs + 1)
	for _, tc := range []struct{ path, body, field string }{
		{"/generate", `{"input_ids":[1],"sampling_params":{"stop_token_ids":` + over + `}}`, "sampling_params.stop_token_ids"},
		{"/inference/v1/generate", `{"token_ids":[1],"sampling_params":{"stop_token_ids":` + over + `}}`, "sampling_params.stop_token_ids"},
		{"/v1/completions", `{"prompt":[1],"stop_token_ids":` + over + `}`, "stop_token_ids"},
	} {
		code, body := post(t, s.URL()+tc.path, tc.body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %.300s", tc.path, body)
		require.Contains(t, body, fmt.Sprintf(`field \"%s\": %d ids, more than the limit of %d`, tc.field, server.MaxStopTokenIDs+1, server.MaxStopTokenIDs), tc.path)
	}
	// At the cap: ids 100, 101, ... with 6 last.
	ids := make([]int32, server.MaxStopTokenIDs)
	for i := range ids {
		ids[i] = int32(100 + i)
	}
	ids[len(ids)-1] = 6
	stops, err := json.Marshal(ids)
	require.NoError(t, err)
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1],"stream":true,"sampling_params":{"stop_token_ids":`+string(stops)+`}}`)
	require.Equal(t, 200, code, "%.300s", body)
	require.Contains(t, body, `"output_ids":[5,6]`)
	require.Contains(t, body, `"matched":6`)
}

// TestAttackPromptPastTheContextIsNotRead: a prompt longer than the
// context was refused only after the whole list had been parsed (six
// concurrent 60 MB lists took the server from 496 MB to 1,134 MB). The id
// list's decoding now stops at the context: what the server read of an
// 8 MB body (the body-memory counter's peak) stays within a few read
// buffers.
func TestAttackPromptPastTheContextIsNotRead(t *testing.T) {
	awaitRefusedConns(t)
	const ctxLen = 100
	for _, tc := range []struct{ path, key string }{
		{"/generate", "input_ids"}, {"/inference/v1/generate", "token_ids"}, {"/v1/completions", "prompt"},
	} {
		s := start(t, servertest.New(servertest.Config{}), httpapi.Config{MaxModelLen: ctxLen})
		body := `{"` + tc.key + `":` + idList(4<<20) + `}`
		code, resp := post(t, s.URL()+tc.path, body)
		require.Equal(t, http.StatusBadRequest, code, "%s: %.300s", tc.path, resp)
		require.Contains(t, resp, "context_length_exceeded", tc.path)
		require.Contains(t, resp, fmt.Sprintf("more than %d input tokens", ctxLen-1), tc.path)
		held, peak := httpapi.BodyMemory(s)
		t.Logf("%s: read %d bytes of a %d-byte body", tc.path, peak, len(body))
		require.Zero(t, held, tc.path)
		require.Less(t, peak, int64(256<<10), "%s: the server read %d bytes of a %d-byte body", tc.path, peak, len(body))
		// A prompt that fits is still served.
		code, resp = post(t, s.URL()+tc.path, `{"`+tc.key+`":`+idList(ctxLen-2)+`}`)
		require.Equal(t, 200, code, "%s: %.300s", tc.path, resp)
	}
}

// TestAttackConcurrentBodiesHoldAtMostTheCap: nothing bounded the memory
// of all bodies being read at once. Three clients each send 600 KB of
// ids and stall; a fourth must be refused with 429 and Retry-After rather
// than push the bytes held past MaxBodyMemory (2 MB), and the server's
// counter never passes the cap. When the three finish they are served.
func TestAttackConcurrentBodiesHoldAtMostTheCap(t *testing.T) {
	awaitRefusedConns(t)
	const (
		limit = 2 << 20
		part  = 600 << 10
	)
	s := start(t, servertest.New(servertest.Config{Rule: servertest.Constant(5)}), httpapi.Config{MaxBodyBytes: 1 << 20, MaxBodyMemory: limit, BodyTimeout: 5 * time.Second})
	head := `{"input_ids":[` + strings.Repeat("1,", part/2)
	type result struct {
		code  int
		retry string
		err   error
	}
	send := func(release <-chan struct{}, out chan<- result) {
		pr, pw := io.Pipe()
		go func() {
			if _, err := io.WriteString(pw, head); err != nil {
				return
			}
			<-release
			_, _ = io.WriteString(pw, "1]}")
			pw.Close()
		}()
		req, err := http.NewRequest(http.MethodPost, s.URL()+"/generate", pr)
		if err != nil {
			out <- result{err: err}
			return
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := testClient.Do(req)
		if err != nil {
			out <- result{err: err}
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		out <- result{code: resp.StatusCode, retry: resp.Header.Get("Retry-After")}
	}
	release := make(chan struct{})
	held := make(chan result, 3)
	for range 3 {
		go send(release, held)
	}
	require.Eventually(t, func() bool { h, _ := httpapi.BodyMemory(s); return h >= 3*int64(len(head)) }, 20*time.Second, time.Millisecond,
		"the three bodies' first parts are read")
	refused := make(chan result, 1)
	never := make(chan struct{})
	defer close(never)
	go send(never, refused)
	r := <-refused
	require.NoError(t, r.err)
	require.Equal(t, http.StatusTooManyRequests, r.code)
	require.Equal(t, "1", r.retry)
	_, peak := httpapi.BodyMemory(s)
	require.LessOrEqual(t, peak, int64(limit))

	close(release)
	for range 3 {
		r := <-held
		require.NoError(t, r.err)
		require.Equal(t, 200, r.code)
	}
	h, peak := httpapi.BodyMemory(s)
	t.Logf("peak of the bytes held: %d (cap %d)", peak, limit)
	require.Zero(t, h, "every body's bytes are given back")
	require.LessOrEqual(t, peak, int64(limit))
	require.Greater(t, peak, int64(3*part), "the counter saw the three bodies")

	_, err := httpapi.New(servertest.New(servertest.Config{}), httpapi.Config{MaxBodyBytes: 1 << 20, MaxBodyMemory: 1 << 19})
	require.ErrorContains(t, err, "MaxBodyMemory")
}
