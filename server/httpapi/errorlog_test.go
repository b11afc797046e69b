package httpapi_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/internal/syncbuf"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/httpapi"
)

// panicky is an engine with a bug: every call panics.
type panicky struct{}

func (panicky) Generate(context.Context, server.GenerateRequest) (server.TokenOutput, error) {
	panic("engine bug")
}

// net/http's own diagnostics (here, the panic it recovers from in a
// handler) go to Config.Logger as JSON records, not to the log package.
func TestHTTPServerErrorsGoToLogger(t *testing.T) {
	var logs syncbuf.Buffer
	s := start(t, panicky{}, httpapi.Config{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	resp, err := http.Post(s.URL()+"/generate", "application/json", strings.NewReader(`{"input_ids": [1, 2], "sampling_params": {"max_new_tokens": 1}}`))
	if err == nil {
		resp.Body.Close()
	}
	require.Error(t, err, "the connection is dropped after the panic")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "panic serving") }, 10*time.Second, time.Millisecond)
	var rec map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(line, "panic serving") {
			require.NoError(t, json.Unmarshal([]byte(line), &rec))
		}
	}
	require.Equal(t, "ERROR", rec["level"])
	require.Contains(t, rec["msg"], "engine bug")
}
