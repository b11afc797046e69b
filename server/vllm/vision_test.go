package vllm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/vllm"
)

// TestImagesRefused: a request with images fails before anything is sent,
// naming why, on both the plain and the streaming path.
func TestImagesRefused(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls.Add(1) }))
	defer ts.Close()
	c, err := vllm.New(vllm.Config{BaseURL: ts.URL})
	require.NoError(t, err)
	req := server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1, 7, 8, 9}, Vision: &server.Vision{
		VisionStart: 7, Pad: 8, VisionEnd: 9, Images: []server.Image{{Data: []byte{1}, Tokens: 1}}}}
	_, err = c.Generate(context.Background(), req)
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, "the vLLM client sends no images (1 in this request)")
	_, err = c.GenerateStream(context.Background(), req, func(server.Chunk) error { return nil })
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.Zero(t, calls.Load())
}
