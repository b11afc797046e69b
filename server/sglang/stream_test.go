package sglang_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/sglang"
)

// TestGenerateStreamMatchesGenerate: through agentrl's own SGLang API over
// a streaming engine, the streamed output equals Generate's and the
// chunks add up to it.
func TestGenerateStreamMatchesGenerate(t *testing.T) {
	ctx := context.Background()
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 8, 9, 2, 5)})
	c, rec, _ := setup(t, eng, sglang.Config{})
	for _, lp := range []bool{true, false} {
		req := server.GenerateRequest{RequestID: "s-" + strconv.FormatBool(lp), PromptIDs: []int32{1, 2, 3},
			Params: server.SamplingParams{MaxNewTokens: 10, StopTokenIDs: []int32{2}, Logprobs: lp}}
		want, err := c.Generate(ctx, req)
		require.NoError(t, err)
		var got servertest.Chunks
		req.RequestID += "-stream" // not served from the first call's prefix cache
		out, err := c.GenerateStream(ctx, req, got.Emit)
		require.NoError(t, err)
		require.Equal(t, want, out)
		require.Equal(t, out.TokenIDs, got.TokenIDs)
		require.Greater(t, got.Calls, 1, "the engine's chunks arrive one by one")
		if lp {
			require.Equal(t, out.Logprobs, got.Logprobs)
		} else {
			require.Empty(t, got.Logprobs)
		}
		require.Contains(t, rec.Last("/generate").Body, `"stream":true`)
	}
}

// ---- a replay of SGLang's own stream -----------------------------------------

// upstream replays SGLang's streamed /generate for one scripted output, in
// the shape http_server.py generate_request and output_processor.py
// write it (see streamChunk in stream.go for the upstream references):
// `data: <orjson>\n\n` events whose output_ids and output_token_logprobs
// hold the whole output so far (the default) or only the new tokens
// (incremental), finish_reason null until the last event, and
// `data: [DONE]\n\n`. A request with "stream": false gets the
// non-streamed body of the same output.
type upstream struct {
	ids         []int32
	lps         []*float64 // nil: -inf, which orjson writes as null
	incremental bool
	// per is how many tokens each event adds (1 by default).
	per int
	// noCounts leaves completion_tokens and output_token_logprobs_length out.
	noCounts bool
	wiretest.SSE
}

func (u *upstream) triples(ids []int32, lps []*float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		lp := "null"
		if lps[i] != nil {
			lp = strconv.FormatFloat(*lps[i], 'g', -1, 64)
		}
		fmt.Fprintf(&b, "[%s,%d,null]", lp, id)
	}
	b.WriteByte(']')
	return b.String()
}

// tops is output_top_logprobs for ids as SGLang writes it
// (tokenizer_manager.py detokenize_top_logprobs_tokens: a list of
// (logprob, token_id, text) per position, None where a position has
// none): here the token itself then id+100, half as probable; the
// token 9 has none.
func (u *upstream) tops(ids []int32, lps []*float64) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		if id == 9 {
			b.WriteString("null")
			continue
		}
		lp := *lps[i]
		fmt.Fprintf(&b, "[[%v,%d,null],[%v,%d,null]]", lp, id, lp-math.Ln2, id+100)
	}
	b.WriteByte(']')
	return b.String()
}

// wantTops is what the client reads from tops.
func (u *upstream) wantTops() [][]server.TopLogprob {
	out := make([][]server.TopLogprob, len(u.ids))
	for i, id := range u.ids {
		out[i] = []server.TopLogprob{}
		if id != 9 {
			lp := *u.lps[i]
			out[i] = []server.TopLogprob{{TokenID: id, Logprob: float32(lp)}, {TokenID: id + 100, Logprob: float32(lp - math.Ln2)}}
		}
	}
	return out
}

// event is SGLang's output dict after n tokens, of which the last `added` are new.
func (u *upstream) event(n, added int, logprobs, final bool) string {
	return u.eventTop(n, added, logprobs, false, final)
}

func (u *upstream) eventTop(n, added int, logprobs, top, final bool) string {
	ids, lps := u.ids[:n], u.lps[:n]
	if u.incremental {
		ids, lps = u.ids[n-added:n], u.lps[n-added:n]
	}
	finish := "null"
	if final {
		finish = `{"type":"stop","matched":2}`
	}
	meta := `"id":"r1","finish_reason":` + finish + `,"prompt_tokens":3,"weight_version":"7","num_retractions":0`
	if logprobs {
		meta += `,"input_token_logprobs":[[null,1,null],[-1.5,2,null],[-0.25,3,null]],"output_token_logprobs":` + u.triples(ids, lps)
		if top {
			meta += `,"output_top_logprobs":` + u.tops(ids, lps)
		}
		if !u.noCounts {
			meta += `,"output_token_logprobs_length":` + strconv.Itoa(n)
		}
	}
	meta += `,"reasoning_tokens":0`
	if !u.noCounts {
		meta += `,"completion_tokens":` + strconv.Itoa(n)
	}
	meta += `,"cached_tokens":1`
	if final {
		meta += `,"e2e_latency":0.01`
	}
	return `{"output_ids":` + wiretest.IDsJSON(ids) + `,"meta_info":{` + meta + `}}`
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/abort_request" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
		return
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	logprobs := strings.Contains(body.String(), `"return_logprob":true`)
	top := strings.Contains(body.String(), `"top_logprobs_num":2`)
	if !strings.Contains(body.String(), `"stream":true`) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(u.eventTop(len(u.ids), len(u.ids), logprobs, top, true)))
		return
	}
	var events []string
	for n := 0; n < len(u.ids); {
		added := min(max(u.per, 1), len(u.ids)-n)
		n += added
		events = append(events, u.eventTop(n, added, logprobs, top, n == len(u.ids)))
	}
	u.Stream(w, r, events, `{"error": {"message": "The input (9000 tokens) is longer than the model's context length (8192 tokens)."}}`)
}

func newUpstream() *upstream {
	a, b, c := -0.5, -1.25, -0.125
	return &upstream{ids: []int32{7, 8, 9, 7, 8, 2}, lps: []*float64{&a, &b, nil, &c, &a, &b}, SSE: wiretest.SSE{Gone: make(chan struct{})}}
}

func serveUpstream(t *testing.T, u *upstream, cfg sglang.Config) *sglang.Client {
	t.Helper()
	ts := httptest.NewServer(u)
	t.Cleanup(ts.Close)
	cfg.BaseURL = ts.URL
	c, err := sglang.New(cfg)
	require.NoError(t, err)
	return c
}

// TestGenerateStreamUpstreamShapes: every way SGLang streams gives the
// tokens and logprobs of the non-streamed answer, chunk by chunk.
func TestGenerateStreamUpstreamShapes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		set  func(*upstream)
	}{
		{"cumulative", func(*upstream) {}},
		{"incremental", func(u *upstream) { u.incremental = true }},
		{"cumulative, two per event", func(u *upstream) { u.per = 2 }},
		{"incremental, two per event", func(u *upstream) { u.incremental, u.per = true, 2 }},
		{"crlf, keep-alives, split writes", func(u *upstream) { u.CRLF, u.Comments, u.Split = true, true, true }},
		{"incremental, crlf, keep-alives, split writes", func(u *upstream) { u.incremental, u.CRLF, u.Comments, u.Split = true, true, true, true }},
		{"cumulative without counts", func(u *upstream) { u.noCounts = true }},
		{"incremental without counts", func(u *upstream) { u.incremental, u.noCounts = true, true }},
	} {
		for _, lp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/logprobs=%v", tc.name, lp), func(t *testing.T) {
				u := newUpstream()
				tc.set(u)
				c := serveUpstream(t, u, sglang.Config{})
				req := server.GenerateRequest{RequestID: "r1", PromptIDs: []int32{1, 2, 3}, Params: server.SamplingParams{Logprobs: lp}}
				if lp {
					req.Params.TopLogprobs = 2
				}
				want, err := c.Generate(ctx, req)
				require.NoError(t, err)
				var got servertest.Chunks
				out, err := c.GenerateStream(ctx, req, got.Emit)
				require.NoError(t, err)
				require.Equal(t, want, out)
				require.Equal(t, []int32{7, 8, 9, 7, 8, 2}, out.TokenIDs)
				require.Equal(t, server.StopEOS, out.StopReason)
				require.Equal(t, int64(7), out.WeightVersion)
				require.Equal(t, 3, out.PromptTokens)
				require.Equal(t, 1, out.CachedTokens)
				require.Equal(t, out.TokenIDs, got.TokenIDs)
				require.Equal(t, (len(u.ids)+max(u.per, 1)-1)/max(u.per, 1), got.Calls)
				if lp {
					require.Equal(t, []float32{-0.5, -1.25, float32(math.Inf(-1)), -0.125, -0.5, -1.25}, got.Logprobs)
					require.Equal(t, out.Logprobs, got.Logprobs)
					require.Equal(t, u.wantTops(), out.TopLogprobs)
					require.Equal(t, out.TopLogprobs, got.TopLogprobs)
				} else {
					require.Nil(t, out.Logprobs)
					require.Empty(t, got.Logprobs)
					require.Nil(t, out.TopLogprobs)
				}
			})
		}
	}
}

// TestGenerateStreamFirstTokenEarly: the first chunk reaches emit while the
// server still holds the rest (it sends them only once emit has seen it).
func TestGenerateStreamFirstTokenEarly(t *testing.T) {
	u := newUpstream()
	u.Gate = make(chan struct{})
	c := serveUpstream(t, u, sglang.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got servertest.Chunks
	out, err := c.GenerateStream(ctx, server.GenerateRequest{RequestID: "r1", Params: server.SamplingParams{Logprobs: true}}, func(ch server.Chunk) error {
		if got.Calls == 0 {
			require.Equal(t, []int32{7}, ch.TokenIDs)
			close(u.Gate)
		}
		return got.Emit(ch)
	})
	require.NoError(t, err)
	require.Equal(t, u.ids, out.TokenIDs)
}

// TestGenerateStreamCancelClosesConnection: cancelling mid-stream closes
// the connection (the server sees its client go away), sends an abort,
// and returns the tokens so far with an error wrapping context.Canceled.
func TestGenerateStreamCancelClosesConnection(t *testing.T) {
	u := newUpstream()
	u.Gate = make(chan struct{}) // never opened
	c := serveUpstream(t, u, sglang.Config{})
	wiretest.CheckStreamCancel(t, c, &u.SSE, []int32{7})
}

// TestGenerateStreamEmitErrorStops: an error from emit ends the call with
// an error wrapping it, and the connection is closed.
func TestGenerateStreamEmitErrorStops(t *testing.T) {
	u := newUpstream()
	u.Gate = make(chan struct{})
	c := serveUpstream(t, u, sglang.Config{})
	stop := fmt.Errorf("caller is done")
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, func(server.Chunk) error { return stop })
	require.ErrorIs(t, err, stop)
	require.Equal(t, []int32{7}, out.TokenIDs)
	<-u.Gone
}

// TestGenerateStreamMidStreamError: SGLang's error event fails the call
// with the server's message; the tokens before it are returned.
func TestGenerateStreamMidStreamError(t *testing.T) {
	u := newUpstream()
	u.ErrAfter = 2
	c := serveUpstream(t, u, sglang.Config{Name: "sg0"})
	var got servertest.Chunks
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, got.Emit)
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "longer than the model's context length")
	require.ErrorContains(t, err, "sg0 generate")
	require.False(t, server.IsRetryable(err))
	require.Equal(t, []int32{7, 8}, out.TokenIDs)
	require.Equal(t, server.StopAbort, out.StopReason)
}

// TestGenerateStreamDisconnect: a connection that drops mid-stream is an
// ErrUnavailable error (not retryable), with the tokens so far.
func TestGenerateStreamDisconnect(t *testing.T) {
	u := newUpstream()
	u.CutAfter = 3
	c := serveUpstream(t, u, sglang.Config{})
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, (&servertest.Chunks{}).Emit)
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.False(t, server.IsRetryable(err))
	require.Equal(t, []int32{7, 8, 9}, out.TokenIDs)
}

// TestGenerateStreamHostile: an event larger than MaxResponseBytes, a
// broken event and events that contradict each other are clear errors
// naming the endpoint.
func TestGenerateStreamHostile(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"huge line", "data: {\"output_ids\":[" + strings.Repeat("1,", 4096) + "1]}\n\n", "larger than the limit"},
		{"huge line without end", ": " + strings.Repeat("x", 8192), "larger than the limit"},
		{"bad json", "data: {\"output_ids\":\n\n", "invalid event JSON"},
		{"no meta", "data: {\"output_ids\":[1]}\n\n", "no meta_info"},
		{"not extending", "data: {\"output_ids\":[1,2],\"meta_info\":{\"completion_tokens\":2,\"finish_reason\":null}}\n\n" +
			"data: {\"output_ids\":[5,6,7],\"meta_info\":{\"completion_tokens\":3,\"finish_reason\":null}}\n\n", "do not extend"},
		{"negative id", "data: {\"output_ids\":[-1],\"meta_info\":{\"finish_reason\":null}}\n\n", "negative"},
		{"no finish", "data: {\"output_ids\":[1],\"meta_info\":{\"finish_reason\":null}}\n\ndata: [DONE]\n\n", "before the request finished"},
		{"after finish", "data: {\"output_ids\":[1],\"meta_info\":{\"finish_reason\":{\"type\":\"length\"}}}\n\n" +
			"data: {\"output_ids\":[1],\"meta_info\":{\"finish_reason\":null}}\n\n", "after the one that finished"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxResponseBytes: 4096})
			require.NoError(t, err)
			_, err = c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r"}, (&servertest.Chunks{}).Emit)
			require.ErrorIs(t, err, server.ErrBadResponse)
			require.ErrorContains(t, err, "/generate")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestGenerateStreamWholeAnswer: a server that answers the whole result
// (no event stream) has it emitted as one chunk.
func TestGenerateStreamWholeAnswer(t *testing.T) {
	u := newUpstream()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(u.event(len(u.ids), len(u.ids), true, true)))
	}))
	defer ts.Close()
	c, err := sglang.New(sglang.Config{BaseURL: ts.URL})
	require.NoError(t, err)
	var got servertest.Chunks
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r", Params: server.SamplingParams{Logprobs: true}}, got.Emit)
	require.NoError(t, err)
	require.Equal(t, 1, got.Calls)
	require.Equal(t, u.ids, got.TokenIDs)
	require.Equal(t, out.Logprobs, got.Logprobs)
}

// TestGenerateStreamRetriesBeforeAnswer: 503 before any event is retried
// like Generate's.
func TestGenerateStreamRetriesBeforeAnswer(t *testing.T) {
	u := newUpstream()
	var mu sync.Mutex
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 1 {
			http.Error(w, `{"error":"warming up"}`, http.StatusServiceUnavailable)
			return
		}
		u.ServeHTTP(w, r)
	}))
	defer ts.Close()
	c, err := sglang.New(sglang.Config{BaseURL: ts.URL, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	require.NoError(t, err)
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r"}, (&servertest.Chunks{}).Emit)
	require.NoError(t, err)
	require.Equal(t, u.ids, out.TokenIDs)
	require.Equal(t, 2, calls)
}

// FuzzStreamEvents feeds arbitrary event streams (one event per line of
// the input) to GenerateStream's parser: no panic, and what was emitted
// is always what the call returns.
func FuzzStreamEvents(f *testing.F) {
	u := newUpstream()
	for _, inc := range []bool{false, true} {
		u.incremental = inc
		var b strings.Builder
		for n := 1; n <= len(u.ids); n++ {
			b.WriteString(u.event(n, 1, true, n == len(u.ids)) + "\n")
		}
		f.Add(b.String(), true)
		f.Add(b.String(), false)
	}
	f.Add(`{"error":{"message":"x"}}`, false)
	f.Fuzz(func(t *testing.T, events string, logprobs bool) {
		hc := &http.Client{Transport: wiretest.SSELines(events)}
		c, err := sglang.New(sglang.Config{BaseURL: "http://upstream.invalid", HTTPClient: hc, MaxAttempts: 1})
		require.NoError(t, err)
		wiretest.CheckStreamed(t, c, logprobs)
	})
}

// TestGenerateStreamPromptLogprobs: prompt logprobs (input_token_logprobs,
// sent whole in every event) come from the last event, as Generate reads
// them from its answer; through agentrl's API and SGLang's both stream shapes.
func TestGenerateStreamPromptLogprobs(t *testing.T) {
	ctx := context.Background()
	p := server.SamplingParams{MaxNewTokens: 4, Logprobs: true, PromptLogprobs: true, PromptLogprobsFrom: 1}
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 2)})
	api, _, _ := setup(t, eng, sglang.Config{})
	want, err := api.Generate(ctx, server.GenerateRequest{RequestID: "a", PromptIDs: []int32{1, 2, 3, 4}, Params: p})
	require.NoError(t, err)
	require.Len(t, want.PromptLogprobs, 3)
	out, err := api.GenerateStream(ctx, server.GenerateRequest{RequestID: "b", PromptIDs: []int32{1, 2, 3, 4}, Params: p}, (&servertest.Chunks{}).Emit)
	require.NoError(t, err)
	require.Equal(t, want, out)

	for _, inc := range []bool{false, true} {
		u := newUpstream()
		u.incremental = inc
		c := serveUpstream(t, u, sglang.Config{})
		req := server.GenerateRequest{RequestID: "r1", PromptIDs: []int32{1, 2, 3}, Params: p}
		want, err := c.Generate(ctx, req)
		require.NoError(t, err)
		out, err := c.GenerateStream(ctx, req, (&servertest.Chunks{}).Emit)
		require.NoError(t, err)
		require.Equal(t, []float32{-1.5, -0.25}, out.PromptLogprobs)
		require.Equal(t, want, out)
	}
}
