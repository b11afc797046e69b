package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server/httpapi"
	"github.com/agentrl/agentrl/server/servertest"
)

// TestUnroutedAnswersJSON: a path no endpoint serves, or a method an
// endpoint does not take, is answered in the path's dialect (OpenAI's
// shape, Anthropic's under /v1/messages), not net/http's plain text.
func TestUnroutedAnswersJSON(t *testing.T) {
	s := start(t, servertest.New(servertest.Config{}), httpapi.Config{})
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
		anthropic    bool
		want         string
	}{
		{"POST", "/v1/unknown", 404, "", false, "Invalid URL (POST /v1/unknown)"},
		{"GET", "/", 404, "", false, "Invalid URL (GET /)"},
		{"GET", "/generate", 405, "POST", false, "method GET is not allowed on /generate"},
		{"POST", "/v1/messages/batches", 404, "", true, "Invalid URL"},
		{"GET", "/v1/messages", 405, "POST", true, "allowed: POST"},
	} {
		req, err := http.NewRequest(tc.method, s.URL()+tc.path, strings.NewReader("{}"))
		require.NoError(t, err)
		resp, err := testClient.Do(req)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, tc.status, resp.StatusCode, "%s %s: %s", tc.method, tc.path, body)
		require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		require.Equal(t, tc.allow, resp.Header.Get("Allow"))
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		require.Contains(t, e.Error.Message, tc.want)
		if tc.anthropic {
			require.Equal(t, "error", e.Type)
			require.Contains(t, []string{"not_found_error", "invalid_request_error"}, e.Error.Type)
		} else {
			require.Empty(t, e.Type)
			require.Equal(t, "invalid_request_error", e.Error.Type)
		}
	}
	// A routed path still reaches its handler.
	code, _ := get(t, s.URL()+"/health")
	require.Equal(t, 200, code)
}
