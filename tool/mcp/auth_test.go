package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"
)

// guarded serves h only to requests with the bearer token and the custom
// header, and records what every request carried.
type guarded struct {
	h       http.Handler
	mu      sync.Mutex
	seen    int
	refused int
}

func (g *guarded) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	ok := r.Header.Get("Authorization") == "Bearer s3cret" && r.Header.Get("X-Team") == "rl"
	g.seen++
	if !ok {
		g.refused++
	}
	g.mu.Unlock()
	if !ok {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	g.h.ServeHTTP(w, r)
}

// auth_token and headers reach the server on every request, over
// streamable HTTP and over SSE; a wrong token is refused by the server and
// the connection fails.
func TestAuthTokenAndHeadersForwarded(t *testing.T) {
	ctx := context.Background()
	srv := testServer()
	for _, c := range []struct {
		typ string
		h   http.Handler
	}{
		{"http", sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)},
		{"sse", sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)},
	} {
		t.Run(c.typ, func(t *testing.T) {
			g := &guarded{h: c.h}
			ts := httptest.NewServer(g)
			defer ts.Close()
			spec := ServerSpec{Type: c.typ, URL: ts.URL, AuthToken: "s3cret", Headers: map[string]string{"X-Team": "rl"}}
			cl, err := ConnectSpec(ctx, "guarded", spec, "")
			require.NoError(t, err)
			tools, err := cl.Tools(ctx, nil)
			require.NoError(t, err)
			require.NotEmpty(t, tools)
			require.NoError(t, cl.Close())
			g.mu.Lock()
			require.Positive(t, g.seen)
			require.Zero(t, g.refused, "every request carried the token and the header")
			g.mu.Unlock()

			for _, bad := range []ServerSpec{
				{Type: c.typ, URL: ts.URL, AuthToken: "wrong", Headers: map[string]string{"X-Team": "rl"}},
				{Type: c.typ, URL: ts.URL, AuthToken: "s3cret"},
			} {
				cl, err := ConnectSpec(ctx, "guarded", bad, "")
				if err == nil {
					_, err = cl.Tools(ctx, nil)
					_ = cl.Close()
				}
				require.Error(t, err)
				require.True(t, strings.Contains(err.Error(), "401") || strings.Contains(strings.ToLower(err.Error()), "unauthorized"), err.Error())
			}
		})
	}
}
