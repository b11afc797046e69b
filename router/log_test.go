package router

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
)

// logBuf collects JSON log records; the router logs from its own
// goroutines, hence the lock.
type logBuf struct{ syncbuf.Buffer }

// records returns every record logged so far, decoded.
func (l *logBuf) records(t *testing.T) []map[string]any {
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "record %q", line)
		out = append(out, m)
	}
	return out
}

// find returns the records whose msg contains msg and whose server is name.
func (l *logBuf) find(t *testing.T, msg, name string) []map[string]any {
	var out []map[string]any
	for _, m := range l.records(t) {
		if s, _ := m["msg"].(string); strings.Contains(s, msg) && m["server"] == name {
			out = append(out, m)
		}
	}
	return out
}

func newLog() (*logBuf, *slog.Logger) {
	l := &logBuf{}
	return l, slog.New(slog.NewJSONHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// An ejection for failed calls, the resent calls, the failed probes and
// the readmission each leave a record naming the server; none carries
// prompt or token data.
func TestLogEjectionForFailedCalls(t *testing.T) {
	logs, logger := newLog()
	bad := servertest.New(servertest.Config{Name: "bad", Rule: servertest.Constant(9)})
	good := servertest.New(servertest.Config{Name: "good", Rule: servertest.Constant(8)})
	bad.SetFault(servertest.ErrorFault(retryableErr("bad")))
	r := newRouter(t, Config{FailureThreshold: 2, ProbeInterval: time.Millisecond, ProbeMaxInterval: 4 * time.Millisecond, Logger: logger},
		Backend{"bad", generateOnly{bad}}, Backend{"good", good})
	for i := 0; statsByName(r.Snapshot())["bad"].State == StateActive; i++ {
		require.Less(t, i, 10, "bad was never ejected")
		_, err := r.Generate(context.Background(), req(fmt.Sprintf("r%d", i), ""))
		require.NoError(t, err)
	}
	ej := logs.find(t, "server ejected", "bad")
	require.Len(t, ej, 1)
	require.Equal(t, "WARN", ej[0]["level"])
	require.Equal(t, "consecutive failed calls", ej[0]["reason"])
	require.EqualValues(t, 2, ej[0]["failures"])

	resent := logs.find(t, "resending it elsewhere", "bad")
	require.NotEmpty(t, resent)
	require.Equal(t, "INFO", resent[0]["level"])
	require.Equal(t, "r0", resent[0]["request_id"])
	require.Contains(t, resent[0]["error"], "unavailable")

	require.Eventually(t, func() bool { return len(logs.find(t, "probe of ejected server failed", "bad")) >= 2 }, 10*time.Second, time.Millisecond)
	pf := logs.find(t, "probe of ejected server failed", "bad")[0]
	require.Equal(t, "DEBUG", pf["level"])
	require.NotEmpty(t, pf["next_probe_in"])

	bad.SetFault(servertest.Fault{})
	require.Eventually(t, func() bool { return len(logs.find(t, "readmitted", "bad")) == 1 }, 10*time.Second, time.Millisecond)
	require.Equal(t, "INFO", logs.find(t, "readmitted", "bad")[0]["level"])

	for _, m := range logs.records(t) {
		for k := range m {
			require.Contains(t, []string{"time", "level", "msg", "server", "request_id", "attempt", "error", "reason", "failures", "next_probe_in", "cause", "tokens", "calls_cut"}, k,
				"record %v has an unexpected field", m)
		}
	}
}

// A failed health check ejects the server, cuts its calls and says so; the
// last active server is kept, and that is logged too.
func TestLogEjectionForHealthCheck(t *testing.T) {
	logs, logger := newLog()
	a := servertest.New(servertest.Config{Name: "a"})
	b := servertest.New(servertest.Config{Name: "b"})
	r := newRouter(t, Config{HealthInterval: 10 * time.Millisecond, ProbeInterval: time.Hour, Logger: logger}, Backend{"a", a}, Backend{"b", b})
	a.SetHealthy(false)
	require.Eventually(t, func() bool { return len(logs.find(t, "server ejected", "a")) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, StateEjected, statsByName(r.Snapshot())["a"].State)
	m := logs.find(t, "server ejected", "a")[0]
	require.Equal(t, "WARN", m["level"])
	require.Equal(t, "health check failed", m["reason"])
	require.NotEmpty(t, m["error"])
	require.EqualValues(t, 0, m["calls_cut"])

	b.SetHealthy(false)
	require.Eventually(t, func() bool { return len(logs.find(t, "kept as the last active server", "b")) > 0 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, StateActive, statsByName(r.Snapshot())["b"].State)
}

// Without a Logger the router logs nothing and does not touch
// slog.Default.
func TestNoLoggerLogsNothing(t *testing.T) {
	logs, logger := newLog()
	prev := slog.Default()
	slog.SetDefault(logger)
	defer slog.SetDefault(prev)
	bad := servertest.New(servertest.Config{Name: "bad"})
	bad.SetFault(servertest.ErrorFault(retryableErr("bad")))
	r := newRouter(t, Config{FailureThreshold: 1, ProbeInterval: time.Hour, NoHealthChecks: true},
		Backend{"bad", bad}, Backend{"good", servertest.New(servertest.Config{Name: "good"})})
	_, err := r.Generate(context.Background(), server.GenerateRequest{RequestID: "x", PromptIDs: []int32{1}})
	require.NoError(t, err)
	require.Equal(t, StateEjected, statsByName(r.Snapshot())["bad"].State)
	require.Empty(t, logs.records(t))
}

// A call cut by its deadline is logged: resent when nothing was received,
// returned as aborted (with the token count, not the tokens) otherwise.
func TestLogCutCalls(t *testing.T) {
	logs, logger := newLog()
	hung := servertest.New(servertest.Config{Name: "hung", Rule: servertest.Constant(1)})
	hung.SetFault(servertest.HangFault())
	live := servertest.New(servertest.Config{Name: "live", Rule: servertest.Constant(4, 5)})
	r := newRouter(t, Config{CallDeadlineFloor: 30 * time.Millisecond, CallDeadlinePerToken: time.Millisecond,
		FailureThreshold: 5, ProbeInterval: time.Hour, NoHealthChecks: true, Logger: logger},
		Backend{"hung", hung}, Backend{"live", live})
	_, err := r.Generate(context.Background(), server.GenerateRequest{RequestID: "q", PromptIDs: []int32{1}, Params: server.SamplingParams{MaxNewTokens: 4}})
	require.NoError(t, err)
	cut := logs.find(t, "call cut; resending", "hung")
	require.Len(t, cut, 1)
	require.Equal(t, "WARN", cut[0]["level"])
	require.Equal(t, "q", cut[0]["request_id"])
	require.Contains(t, cut[0]["cause"], "deadline")

	logs2, logger2 := newLog()
	r2 := newRouter(t, Config{CallDeadlineFloor: 40 * time.Millisecond, CallDeadlinePerToken: time.Nanosecond, NoHealthChecks: true, Logger: logger2},
		Backend{"slow", &streamingEngine{}})
	out, err := r2.Generate(context.Background(), server.GenerateRequest{RequestID: "p", PromptIDs: []int32{1}, Params: server.SamplingParams{MaxNewTokens: 1 << 20}})
	require.ErrorIs(t, err, ErrCallDeadline)
	ab := logs2.find(t, "returned as aborted", "slow")
	require.Len(t, ab, 1)
	require.EqualValues(t, len(out.TokenIDs), ab[0]["tokens"])
}
