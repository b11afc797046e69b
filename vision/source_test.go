package vision

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReadSource covers the sources verl's rows and OpenAI's image_url
// parts give: data URLs, files, remote URLs only when allowed, and the caps.
func TestReadSource(t *testing.T) {
	ctx := context.Background()
	payload := []byte("\x89PNG\r\n\x1a\nnot really")
	got, err := ReadSource(ctx, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(payload), 0, Sources{})
	require.NoError(t, err)
	require.Equal(t, payload, got)

	_, err = ReadSource(ctx, "data:image/png,plain", 0, Sources{})
	require.ErrorIs(t, err, ErrSource)
	_, err = ReadSource(ctx, "data:image/png;base64,!!!", 0, Sources{})
	require.ErrorIs(t, err, ErrSource)
	_, err = ReadSource(ctx, "data:image/png;base64,"+base64.StdEncoding.EncodeToString(make([]byte, 100)), 10, Sources{})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadSource(ctx, "", 0, Sources{})
	require.ErrorIs(t, err, ErrSource)

	path := filepath.Join(t.TempDir(), "a.png")
	require.NoError(t, os.WriteFile(path, payload, 0o644))
	for _, src := range []string{path, "file://" + path} {
		got, err = ReadSource(ctx, src, 0, Sources{})
		require.NoError(t, err)
		require.Equal(t, payload, got)
	}
	_, err = ReadSource(ctx, path, 4, Sources{})
	require.ErrorIs(t, err, ErrTooLarge)
	_, err = ReadSource(ctx, path, 0, Sources{NoFiles: true})
	require.ErrorIs(t, err, ErrSource)
	_, err = ReadSource(ctx, filepath.Join(t.TempDir(), "missing.png"), 0, Sources{})
	require.True(t, errors.Is(err, os.ErrNotExist), err)

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(payload) }))
	defer srv.Close()
	_, err = ReadSource(ctx, srv.URL+"/a.png", 0, Sources{})
	require.ErrorIs(t, err, ErrSource)
	got, err = ReadSource(ctx, srv.URL+"/a.png", 0, Sources{AllowRemote: true, Client: srv.Client()})
	require.NoError(t, err)
	require.Equal(t, payload, got)
	_, err = ReadSource(ctx, srv.URL+"/a.png", 4, Sources{AllowRemote: true, Client: srv.Client()})
	require.ErrorIs(t, err, ErrTooLarge)
}
