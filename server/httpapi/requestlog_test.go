package httpapi_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

func TestLogRequests(t *testing.T) {
	var logs syncbuf.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	s := start(t, servertest.New(servertest.Config{Rule: servertest.Constant(3, 4)}),
		httpapi.Config{AuthToken: "tok", Logger: logger, LogRequests: true})

	code, _ := post(t, s.URL()+"/generate", `{"input_ids":[1]}`)
	require.Equal(t, 401, code)
	code, body := post(t, s.URL()+"/generate", `{"input_ids":[1],"stream":true}`, "Authorization", "Bearer tok")
	require.Equal(t, 200, code)
	// One event per token, the final one and [DONE].
	require.Len(t, strings.Split(strings.TrimSpace(body), "\n\n"), 4, "streaming still streams: %s", body)

	line := func(status string) string {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "msg=request method=POST path=/generate status="+status+" ") {
				return l
			}
		}
		return ""
	}
	require.Eventually(t, func() bool { return line("401") != "" && line("200") != "" }, 10*time.Second, 10*time.Millisecond, logs.String())
	require.Regexp(t, `bytes=[1-9]\d* duration=\S+ remote=127\.0\.0\.1:\d+`, line("200"))
	require.NotContains(t, logs.String(), "tok\"", "no headers in the log")
	require.NotContains(t, logs.String(), "input_ids", "no bodies in the log")

	// Off by default.
	var quiet syncbuf.Buffer
	q := start(t, servertest.New(servertest.Config{}), httpapi.Config{Logger: slog.New(slog.NewTextHandler(&quiet, nil))})
	code, _ = get(t, q.URL()+"/health")
	require.Equal(t, 200, code)
	require.NotContains(t, quiet.String(), "msg=request")
}
