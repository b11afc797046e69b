package tool

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestHTTPTool(t *testing.T) {
	ctx := context.Background()
	var gotBody, gotCT, gotAuth string
	var stop chan struct{}
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		gotBody, gotCT, gotAuth = string(b), r.Header.Get("Content-Type"), r.Header.Get("Authorization")
		fmt.Fprint(w, "sunny, 21°C")
	})
	mux.HandleFunc("/result", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"text": "found 3", "reward": 0.25, "metrics": {"hits": 3}}`)
	})
	mux.HandleFunc("/error", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "backend exploded", http.StatusBadGateway)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 2000))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	stop = make(chan struct{})
	defer close(stop) // runs before srv.Close: frees the slow handler

	cfgYAML := fmt.Sprintf(`
tools:
  - class_name: http
    config: {type: native, url: "%[1]s/plain", headers: {Authorization: "Bearer t0k"}}
    tool_schema:
      function:
        name: weather
        parameters: {type: object, properties: {city: {type: string}, days: {type: integer}}, required: [city]}
  - class_name: http
    config: {type: native, url: "%[1]s/result"}
    tool_schema: {function: {name: search, parameters: {type: object}}}
  - class_name: http
    config: {type: native, url: "%[1]s/error"}
    tool_schema: {function: {name: broken, parameters: {type: object}}}
  - class_name: http
    config: {type: native, url: "%[1]s/big", max_response_bytes: 1000}
    tool_schema: {function: {name: big, parameters: {type: object}}}
  - class_name: http
    config: {type: native, url: "%[1]s/slow", request_timeout: 0.05}
    tool_schema: {function: {name: slow, parameters: {type: object}}}
`, srv.URL)
	s, err := ParseConfig(ctx, []byte(cfgYAML), ".")
	require.NoError(t, err)
	ss := s.Session(nil)
	defer func() { require.NoError(t, ss.Close(ctx)) }()

	r := ss.Call(ctx, call("weather", `{"city": "Zürich", "days": 2}`))
	require.NoError(t, r.Err)
	require.Equal(t, "sunny, 21°C", r.Text)
	require.Equal(t, `{"city": "Zürich", "days": 2}`, gotBody, "the arguments are posted exactly as written")
	require.Equal(t, "application/json", gotCT)
	require.Equal(t, "Bearer t0k", gotAuth)

	r = ss.Call(ctx, call("search", `{"q": "go"}`))
	require.NoError(t, r.Err)
	require.Equal(t, "found 3", r.Text)
	require.Equal(t, 0.25, r.Reward)
	require.Equal(t, map[string]float64{"hits": 3}, r.Metrics)

	r = ss.Call(ctx, call("broken", `{}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Equal(t, `Error when executing tool "broken": HTTP 502: backend exploded`, r.Text)

	r = ss.Call(ctx, call("big", `{}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Equal(t, `Error when executing tool "big": response larger than 1000 bytes`, r.Text)

	r = ss.Call(ctx, call("slow", `{}`))
	require.ErrorIs(t, r.Err, ErrExecution)
	require.Equal(t, `Error when executing tool "slow": request timed out after 50ms`, r.Text)

	r = ss.Call(ctx, call("weather", `{"days": 2}`))
	require.ErrorIs(t, r.Err, ErrInvalidArguments)
}

func TestNewHTTPErrors(t *testing.T) {
	for _, u := range []string{"", "ftp://x/y", "/relative", "http://"} {
		_, err := NewHTTP(DefaultGSM8KSchema, HTTPConfig{URL: u})
		require.ErrorContains(t, err, "url must be an absolute http(s) URL", u)
	}
	_, err := NewHTTP(DefaultGSM8KSchema, HTTPConfig{URL: "http://x", MaxResponseBytes: -1})
	require.ErrorContains(t, err, "must not be negative")
}
