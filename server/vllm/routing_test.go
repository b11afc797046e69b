package vllm_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/vllm"
)

// A fake of vLLM's /inference/v1/generate with
// --enable-return-routed-experts: choices[0].routed_experts is base64 of
// the .npy bytes of a (positions, layers, topk) array (vllm entrypoints
// GenerateResponseChoice), here made by NumPy's np.save
// (server/internal/wire/testdata/routing.json).
func TestGenerateRoutedExperts(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "internal", "wire", "testdata", "routing.json"))
	require.NoError(t, err)
	var g struct {
		Cases []struct {
			Name, NPY string
			Values    []int16
		}
	}
	require.NoError(t, json.Unmarshal(data, &g))
	var npy string
	var want []int16
	for _, c := range g.Cases {
		if c.Name == "npy uint16" { // 7 positions, 4 layers, top-8
			npy, want = c.NPY, c.Values
		}
	}
	require.NotEmpty(t, npy)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "r", "choices": []any{map[string]any{
			"index": 0, "finish_reason": "stop", "token_ids": []int{5, 6, 7, 2}, "routed_experts": npy}}})
	}))
	defer ts.Close()
	c, err := vllm.New(vllm.Config{BaseURL: ts.URL, Model: "m"})
	require.NoError(t, err)
	out, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1, 2, 3, 4},
		Params: server.SamplingParams{MaxNewTokens: 4, RoutedExperts: true}})
	require.NoError(t, err)
	require.Equal(t, server.Routing{Layers: 4, TopK: 8, Experts: want}, *out.RoutedExperts)
	require.Equal(t, 7, out.RoutedExperts.Rows(), "one position short of the 8-token sequence")

	out, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1, 2, 3, 4},
		Params: server.SamplingParams{MaxNewTokens: 4}})
	require.NoError(t, err)
	require.Nil(t, out.RoutedExperts, "not asked for: not read")

	// A sequence shorter than the routing is a bad response.
	_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1},
		Params: server.SamplingParams{MaxNewTokens: 4, RoutedExperts: true}})
	require.ErrorContains(t, err, "7 positions for a sequence of 5 tokens")
}
