package captureprom_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/capture"
	"github.com/agentrl/agentrl/capture/captureprom"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
)

// The rig's servers and clients must all be gone when the tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a capture over a scripted engine that answers "hello", served
// over HTTP.
type rig struct {
	c   *capture.Capture
	srv *httptest.Server
}

func newRig(t *testing.T) *rig {
	t.Helper()
	tok, err := tokenizer.Load(filepath.Join("..", "..", "internal", "arith", "checkpoint"))
	require.NoError(t, err)
	end, ok := tok.TokenID("<|im_end|>")
	require.True(t, ok)
	eng := servertest.New(servertest.Config{Rule: servertest.Constant(append(tok.Encode("hello"), end)...)})
	store, err := capture.OpenDir(t.TempDir())
	require.NoError(t, err)
	srv := httptest.NewUnstartedServer(nil)
	c, err := capture.New(context.Background(), capture.Config{Engine: eng, Store: store,
		Chat: &httpapi.Chat{Tokenizer: tok, ToolParser: "hermes"}, BaseURL: "http://" + srv.Listener.Addr().String()})
	require.NoError(t, err)
	srv.Config.Handler = c.Handler()
	srv.Start()
	t.Cleanup(func() {
		srv.Close()
		require.NoError(t, c.Shutdown(context.Background()))
		require.NoError(t, store.Close())
	})
	return &rig{c: c, srv: srv}
}

func (r *rig) post(t *testing.T, url, key, body string) int {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := r.srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

const chatBody = `{"model":"agentrl","messages":[{"role":"user","content":"hi"}]}`

// The exported values are the capture's own: calls by dialect and
// outcome, a latency observation per recorded call, and what a rebuild
// made and dropped.
func TestCaptureMetrics(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	ro, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	open, err := r.c.Create(ctx, capture.CreateOptions{})
	require.NoError(t, err)
	// Two chat calls with one prompt (a retry), one Messages call, and
	// calls refused: a wrong key, and n=2.
	require.Equal(t, 200, r.post(t, ro.OpenAIBaseURL+"/chat/completions", ro.Key, chatBody))
	require.Equal(t, 200, r.post(t, ro.OpenAIBaseURL+"/chat/completions", ro.Key, chatBody))
	require.Equal(t, 200, r.post(t, ro.AnthropicBaseURL+"/v1/messages", ro.Key,
		`{"model":"agentrl","max_tokens":16,"messages":[{"role":"user","content":"hey"}]}`))
	require.Equal(t, 401, r.post(t, ro.OpenAIBaseURL+"/chat/completions", "ark_wrong", chatBody))
	require.Equal(t, 401, r.post(t, ro.AnthropicBaseURL+"/v1/messages", "ark_wrong", chatBody))
	require.Equal(t, 400, r.post(t, ro.OpenAIBaseURL+"/chat/completions", ro.Key, strings.Replace(chatBody, `{"model"`, `{"n":2,"model"`, 1)))
	require.NoError(t, r.c.Finish(ctx, ro.ID))
	_, rep, err := r.c.Rebuild(ctx, ro.ID, capture.RebuildOptions{})
	require.NoError(t, err)
	require.Equal(t, 2, rep.Trajectories, "%+v", rep)
	require.Len(t, rep.Dropped, 1)

	c := captureprom.New(r.c, captureprom.Options{})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	calls := func(dialect, outcome string) float64 {
		return value(t, reg, "agentrl_capture_calls_total", map[string]string{"dialect": dialect, "outcome": outcome})
	}
	require.Equal(t, 2.0, calls("chat", "recorded"))
	require.Equal(t, 1.0, calls("messages", "recorded"))
	require.Equal(t, 2.0, calls("chat", "refused"), "the wrong key and n=2")
	require.Equal(t, 1.0, calls("messages", "refused"))
	require.Equal(t, 0.0, calls("responses", "recorded"))
	require.Equal(t, 0.0, calls("chat", "aborted"))
	require.Equal(t, 1.0, value(t, reg, "agentrl_capture_rollouts_open", nil), "the other rollout, %s", open.ID)
	require.Equal(t, 2.0, value(t, reg, "agentrl_capture_rollouts_created_total", nil))
	require.Equal(t, 1.0, value(t, reg, "agentrl_capture_rebuilds_total", nil))
	require.Equal(t, 2.0, value(t, reg, "agentrl_capture_rebuild_trajectories_total", nil))
	require.Equal(t, 0.0, value(t, reg, "agentrl_capture_rebuild_incomplete_total", nil))
	require.Equal(t, 1.0, value(t, reg, "agentrl_capture_rebuild_dropped_calls_total", map[string]string{"reason": "retry"}))
	require.Equal(t, 0.0, value(t, reg, "agentrl_capture_rebuild_dropped_calls_total", map[string]string{"reason": "auxiliary"}))

	// One latency observation per recorded call, summing to at least the
	// time the records took to be made durable.
	h := metric(t, reg, "agentrl_capture_latency_seconds", nil).GetHistogram()
	require.Equal(t, uint64(3), h.GetSampleCount())
	st := r.c.Stats()
	require.GreaterOrEqual(t, h.GetSampleSum(), st.RecordTime.Seconds())
	require.Equal(t, st.RecordTime.Seconds(), value(t, reg, "agentrl_capture_record_seconds_total", nil))
	last := h.GetBucket()[len(h.GetBucket())-1]
	require.LessOrEqual(t, last.GetCumulativeCount(), uint64(3))
	require.Len(t, h.GetBucket(), len(capture.LatencyBounds))

	n, err := testutil.GatherAndCount(reg, "agentrl_capture_calls_total")
	require.NoError(t, err)
	require.Equal(t, len(capture.Dialects)*len(capture.Outcomes), n)
	problems, err := testutil.CollectAndLint(c)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// metric is the one metric of family name whose labels include want.
func metric(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.Metric {
			got := map[string]string{}
			for _, l := range m.Label {
				got[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue next
				}
			}
			return m
		}
	}
	t.Fatalf("no %s with labels %v", name, want)
	return nil
}

func value(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) float64 {
	t.Helper()
	m := metric(t, reg, name, want)
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}
