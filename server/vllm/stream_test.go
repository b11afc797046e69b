package vllm_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/wiretest"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/server/vllm"
)

// TestGenerateStreamMatchesGenerate: through agentrl's own vLLM API, on
// both endpoints, the streamed output equals Generate's.
func TestGenerateStreamMatchesGenerate(t *testing.T) {
	for _, hide := range []bool{false, true} {
		t.Run(fmt.Sprint("fallback=", hide), func(t *testing.T) {
			ctx := context.Background()
			eng := servertest.New(servertest.Config{Rule: servertest.Constant(7, 8, 9, 2, 5)})
			var hidden []string
			if hide {
				hidden = []string{"/inference/v1/generate"}
			}
			c, rec := setup(t, eng, vllm.Config{}, hidden...)
			for _, lp := range []bool{true, false} {
				req := server.GenerateRequest{RequestID: "g-" + strconv.FormatBool(lp), PromptIDs: []int32{1, 2, 3},
					Params: server.SamplingParams{MaxNewTokens: 10, StopTokenIDs: []int32{2}, Logprobs: lp}}
				want, err := c.Generate(ctx, req)
				require.NoError(t, err)
				req.RequestID = "s-" + strconv.FormatBool(lp)
				var got servertest.Chunks
				out, err := c.GenerateStream(ctx, req, got.Emit)
				require.NoError(t, err)
				require.Equal(t, want, out)
				require.Equal(t, out.TokenIDs, got.TokenIDs)
				if lp {
					require.Equal(t, out.Logprobs, got.Logprobs)
				}
				path := "/inference/v1/generate"
				if hide {
					path = "/v1/completions"
				}
				body := rec.Last(path).Body
				require.Contains(t, body, `"stream":true`)
				require.Contains(t, body, `"stream_options":{"include_usage":true}`)
				require.Equal(t, hide, c.UsesCompletions())
			}
		})
	}
}

// ---- a replay of vLLM's own streams ------------------------------------------

// upstream replays vLLM's streamed /inference/v1/generate and
// /v1/completions for one scripted output, in the shapes
// serve_tokens_stream_generator and completion_stream_generator write
// (see generateStreamChunk and completionsStreamChunk in stream.go for
// the upstream references): one event per output with the new token ids
// and their logprobs, finish_reason null until the last, a usage event
// (include_usage), `data: [DONE]`. A request with "stream": false gets the
// non-streamed response of the same output.
type upstream struct {
	ids    []int32
	lps    []float64
	finish string // "" for an abort whose last output adds no token
	per    int
	// noStream answers /inference/v1/generate whole, as builds before
	// it streamed do; hideGenerate answers it 404.
	noStream, hideGenerate bool
	// finishAlone sends the finish reason in an event of its own, with no
	// token (completions only).
	finishAlone bool
	wiretest.SSE
}

func newUpstream() *upstream {
	return &upstream{ids: []int32{7, 8, 9, 7, 8, 2}, lps: []float64{-0.5, -1.25, -9999.0, -0.125, -0.5, -1.25},
		finish: "stop", SSE: wiretest.SSE{Gone: make(chan struct{})}}
}

func fstr(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// content is ChatCompletionLogProbs for ids[a:b] (token_in_token_out
// _create_tokens_logprobs, one top logprob).
func (u *upstream) content(a, b int) string {
	var parts []string
	for i := a; i < b; i++ {
		tok := fmt.Sprintf("token_id:%d", u.ids[i])
		parts = append(parts, fmt.Sprintf(`{"token":%q,"logprob":%s,"bytes":null,"top_logprobs":[{"token":%q,"logprob":%s,"bytes":null}]}`, tok, fstr(u.lps[i]), tok, fstr(u.lps[i])))
	}
	return `{"content":[` + strings.Join(parts, ",") + `]}`
}

// completionLogprobs is CompletionLogProbs for ids[a:b].
func (u *upstream) completionLogprobs(a, b int) string {
	var off, lp, tok, top []string
	for i := a; i < b; i++ {
		t := fmt.Sprintf("token_id:%d", u.ids[i])
		off = append(off, strconv.Itoa(i))
		lp = append(lp, fstr(u.lps[i]))
		tok = append(tok, strconv.Quote(t))
		top = append(top, fmt.Sprintf(`{%q:%s}`, t, fstr(u.lps[i])))
	}
	return `{"text_offset":[` + strings.Join(off, ",") + `],"token_logprobs":[` + strings.Join(lp, ",") + `],"tokens":[` + strings.Join(tok, ",") + `],"top_logprobs":[` + strings.Join(top, ",") + `]}`
}

const usageJSON = `{"prompt_tokens":3,"total_tokens":9,"completion_tokens":6,"prompt_tokens_details":{"cached_tokens":1}}`

func (u *upstream) finishJSON(last bool) string {
	if !last || u.finish == "" || u.finishAlone {
		return "null"
	}
	return strconv.Quote(u.finish)
}

// generateEvent is the event for ids[a:b].
func (u *upstream) generateEvent(a, b int, logprobs, last bool) string {
	lp := "null"
	if logprobs {
		lp = u.content(a, b)
	}
	return `{"request_id":"generate-tokens-r1","choices":[{"index":0,"logprobs":` + lp + `,"finish_reason":` + u.finishJSON(last) +
		`,"stop_reason":null,"token_ids":` + wiretest.IDsJSON(u.ids[a:b]) + `,"routed_experts":null}],"usage":null}`
}

func (u *upstream) completionsEvent(a, b int, logprobs, last bool) string {
	lp := ""
	if logprobs {
		lp = `"logprobs":` + u.completionLogprobs(a, b) + `,`
	}
	prompt := ""
	if a == 0 {
		prompt = `"prompt_token_ids":[1,2,3],`
	}
	return `{"id":"cmpl-r1-0","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"x",` + lp +
		`"finish_reason":` + u.finishJSON(last) + `,"stop_reason":null,` + prompt + `"token_ids":` + wiretest.IDsJSON(u.ids[a:b]) + `}]}`
}

func (u *upstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/abort_requests" {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{}`))
		return
	}
	completions := r.URL.Path == "/v1/completions"
	if !completions && u.hideGenerate {
		http.Error(w, `{"detail":"Not Found"}`, http.StatusNotFound)
		return
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(r.Body)
	logprobs := strings.Contains(body.String(), `"logprobs":`)
	stream := strings.Contains(body.String(), `"stream":true`)
	n := len(u.ids)
	if !stream || (u.noStream && !completions) {
		w.Header().Set("Content-Type", "application/json")
		finish := strconv.Quote(u.finish)
		if u.finish == "" {
			finish = `"abort"`
		}
		if completions {
			lp := "null"
			if logprobs {
				lp = u.completionLogprobs(0, n)
			}
			_, _ = w.Write([]byte(`{"id":"cmpl-r1-0","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"x","logprobs":` + lp +
				`,"finish_reason":` + finish + `,"stop_reason":null,"prompt_token_ids":[1,2,3],"token_ids":` + wiretest.IDsJSON(u.ids) + `}],"usage":` + usageJSON + `}`))
			return
		}
		lp := "null"
		if logprobs {
			lp = u.content(0, n)
		}
		_, _ = w.Write([]byte(`{"request_id":"generate-tokens-r1","choices":[{"index":0,"logprobs":` + lp + `,"finish_reason":` + finish +
			`,"stop_reason":null,"token_ids":` + wiretest.IDsJSON(u.ids) + `}],"usage":` + usageJSON + `,"prompt_logprobs":null,"kv_transfer_params":null}`))
		return
	}
	var events []string
	for a := 0; a < n; {
		b := min(a+max(u.per, 1), n)
		ev := u.generateEvent(a, b, logprobs, b == n)
		if completions {
			ev = u.completionsEvent(a, b, logprobs, b == n)
		}
		events = append(events, ev)
		a = b
	}
	var tail []string
	if u.finishAlone {
		// An output that adds no token but finishes: completions streams
		// it (only the first empty output is skipped).
		tail = append(tail, `{"id":"cmpl-r1-0","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"","logprobs":{"text_offset":[],"token_logprobs":[],"tokens":[],"top_logprobs":[]},"finish_reason":`+
			strconv.Quote(u.finish)+`,"stop_reason":null,"token_ids":[]}]}`)
	}
	tail = append(tail, `{"request_id":"r1","choices":[],"usage":`+usageJSON+`}`)
	u.Stream(w, r, events, `{"error": {"message": "EngineCore encountered an issue.", "type": "InternalServerError", "param": null, "code": 500}}`, tail...)
}

func serveUpstream(t *testing.T, u *upstream, cfg vllm.Config) *vllm.Client {
	t.Helper()
	ts := httptest.NewServer(u)
	t.Cleanup(ts.Close)
	cfg.BaseURL = ts.URL
	c, err := vllm.New(cfg)
	require.NoError(t, err)
	return c
}

// TestGenerateStreamUpstreamShapes: each way vLLM streams gives the tokens
// and logprobs of the non-streamed answer, chunk by chunk.
func TestGenerateStreamUpstreamShapes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		set  func(*upstream)
	}{
		{"generate", func(*upstream) {}},
		{"generate, two per event", func(u *upstream) { u.per = 2 }},
		{"generate, crlf, keep-alives, split writes", func(u *upstream) { u.CRLF, u.Comments, u.Split = true, true, true }},
		{"generate not streamed (older builds)", func(u *upstream) { u.noStream = true }},
		{"completions", func(u *upstream) { u.hideGenerate = true }},
		{"completions, two per event", func(u *upstream) { u.hideGenerate, u.per = true, 2 }},
		{"completions, finish in an event of its own", func(u *upstream) { u.hideGenerate, u.finishAlone = true, true }},
		{"completions, crlf, keep-alives, split writes", func(u *upstream) { u.hideGenerate, u.CRLF, u.Comments, u.Split = true, true, true, true }},
	} {
		for _, lp := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/logprobs=%v", tc.name, lp), func(t *testing.T) {
				u := newUpstream()
				tc.set(u)
				c := serveUpstream(t, u, vllm.Config{})
				req := server.GenerateRequest{RequestID: "r1", PromptIDs: []int32{1, 2, 3}, Params: server.SamplingParams{Logprobs: lp}}
				want, err := c.Generate(ctx, req)
				require.NoError(t, err)
				var got servertest.Chunks
				out, err := c.GenerateStream(ctx, req, got.Emit)
				require.NoError(t, err)
				require.Equal(t, want, out)
				require.Equal(t, u.ids, out.TokenIDs)
				require.Equal(t, server.StopEOS, out.StopReason)
				require.Equal(t, 3, out.PromptTokens)
				require.Equal(t, 1, out.CachedTokens)
				require.Equal(t, out.TokenIDs, got.TokenIDs)
				wantCalls := (len(u.ids) + max(u.per, 1) - 1) / max(u.per, 1)
				if u.noStream {
					wantCalls = 1
				}
				require.Equal(t, wantCalls, got.Calls)
				if lp {
					require.Equal(t, []float32{-0.5, -1.25, -9999, -0.125, -0.5, -1.25}, got.Logprobs)
					require.Equal(t, out.Logprobs, got.Logprobs)
				} else {
					require.Nil(t, out.Logprobs)
				}
			})
		}
	}
}

// TestGenerateStreamAbortWithoutFinish: vLLM skips an output that adds no
// token, so an abort's last output never shows; [DONE] without a finish
// reason is read as an abort.
func TestGenerateStreamAbortWithoutFinish(t *testing.T) {
	u := newUpstream()
	u.finish = ""
	c := serveUpstream(t, u, vllm.Config{})
	var got servertest.Chunks
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, got.Emit)
	require.NoError(t, err)
	require.Equal(t, server.StopAbort, out.StopReason)
	require.Equal(t, u.ids, out.TokenIDs)
}

func TestGenerateStreamFirstTokenEarly(t *testing.T) {
	for _, hide := range []bool{false, true} {
		u := newUpstream()
		u.hideGenerate = hide
		u.Gate = make(chan struct{})
		c := serveUpstream(t, u, vllm.Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var got servertest.Chunks
		out, err := c.GenerateStream(ctx, server.GenerateRequest{RequestID: "r1", Params: server.SamplingParams{Logprobs: true}}, func(ch server.Chunk) error {
			if got.Calls == 0 {
				require.Equal(t, []int32{7}, ch.TokenIDs)
				close(u.Gate)
			}
			return got.Emit(ch)
		})
		cancel()
		require.NoError(t, err)
		require.Equal(t, u.ids, out.TokenIDs)
	}
}

func TestGenerateStreamCancelClosesConnection(t *testing.T) {
	u := newUpstream()
	u.Gate = make(chan struct{})
	c := serveUpstream(t, u, vllm.Config{})
	wiretest.CheckStreamCancel(t, c, &u.SSE, []int32{7})
}

func TestGenerateStreamMidStreamError(t *testing.T) {
	u := newUpstream()
	u.ErrAfter = 2
	c := serveUpstream(t, u, vllm.Config{Name: "v0"})
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, (&servertest.Chunks{}).Emit)
	require.ErrorIs(t, err, server.ErrBadResponse)
	require.ErrorContains(t, err, "EngineCore encountered an issue")
	require.ErrorContains(t, err, "v0 generate")
	require.False(t, server.IsRetryable(err))
	require.Equal(t, []int32{7, 8}, out.TokenIDs)
	require.Equal(t, server.StopAbort, out.StopReason)
}

func TestGenerateStreamDisconnect(t *testing.T) {
	u := newUpstream()
	u.CutAfter = 3
	c := serveUpstream(t, u, vllm.Config{})
	out, err := c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r1"}, (&servertest.Chunks{}).Emit)
	require.ErrorIs(t, err, server.ErrUnavailable)
	require.False(t, server.IsRetryable(err))
	require.Equal(t, []int32{7, 8, 9}, out.TokenIDs)
}

func TestGenerateStreamHostile(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
	}{
		{"huge line", "data: {\"choices\":[{\"token_ids\":[" + strings.Repeat("1,", 4096) + "1]}]}\n\n", "larger than the limit"},
		{"bad json", "data: {\"choices\":\n\n", "invalid event JSON"},
		{"two choices", "data: {\"choices\":[{\"token_ids\":[1]},{\"token_ids\":[1]}]}\n\n", "expected 1 choice"},
		{"no token_ids", "data: {\"choices\":[{\"index\":0}]}\n\n", "token_ids is missing"},
		{"negative id", "data: {\"choices\":[{\"token_ids\":[-3]}]}\n\n", "negative"},
		{"unknown finish", "data: {\"choices\":[{\"token_ids\":[3],\"finish_reason\":\"weird\"}]}\n\n", "unknown value"},
		{"after finish", "data: {\"choices\":[{\"token_ids\":[3],\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[{\"token_ids\":[3]}]}\n\n", "after the one that finished"},
		{"logprobs count", "data: {\"choices\":[{\"token_ids\":[3,4],\"logprobs\":{\"content\":[{\"token\":\"token_id:3\",\"logprob\":-1}]}}]}\n\n", "1 entries for 2 token_ids"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			c, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxResponseBytes: 4096})
			require.NoError(t, err)
			lp := strings.Contains(tc.body, "logprobs")
			_, err = c.GenerateStream(context.Background(), server.GenerateRequest{RequestID: "r", Params: server.SamplingParams{Logprobs: lp}}, (&servertest.Chunks{}).Emit)
			require.ErrorIs(t, err, server.ErrBadResponse)
			require.ErrorContains(t, err, "/inference/v1/generate")
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// FuzzStreamEvents feeds arbitrary event streams (one event per line) to
// both endpoints' stream readers: no panic, and the returned tokens are
// exactly those emitted.
func FuzzStreamEvents(f *testing.F) {
	u := newUpstream()
	for _, completions := range []bool{false, true} {
		var b strings.Builder
		for i := range u.ids {
			ev := u.generateEvent(i, i+1, true, i == len(u.ids)-1)
			if completions {
				ev = u.completionsEvent(i, i+1, true, i == len(u.ids)-1)
			}
			b.WriteString(ev + "\n")
		}
		b.WriteString(`{"choices":[],"usage":` + usageJSON + `}`)
		f.Add(b.String(), true, completions)
		f.Add(b.String(), false, completions)
	}
	f.Fuzz(func(t *testing.T, events string, logprobs, completions bool) {
		hc := &http.Client{Transport: wiretest.SSELines(events)}
		c, err := vllm.New(vllm.Config{BaseURL: "http://upstream.invalid", HTTPClient: hc, MaxAttempts: 1, Completions: completions})
		require.NoError(t, err)
		wiretest.CheckStreamed(t, c, logprobs)
	})
}
