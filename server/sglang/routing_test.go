package sglang_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/sglang"
)

// routingCase is one of the NumPy-made payloads of
// server/internal/wire/testdata/routing.json.
type routingCase struct {
	Name, Flat, Dtype string
	Layers            int `json:"layers"`
	TopK              int `json:"topk"`
	Values            []int16
}

func loadRoutingCase(t *testing.T, name string) routingCase {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "internal", "wire", "testdata", "routing.json"))
	require.NoError(t, err)
	var g struct{ Cases []routingCase }
	require.NoError(t, json.Unmarshal(data, &g))
	for _, c := range g.Cases {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no routing case %q", name)
	return routingCase{}
}

// A fake of SGLang's /generate with --enable-return-routed-experts: the
// request carries return_routed_experts at the top level (io_struct.py
// GenerateReqInput), the answer meta_info.routed_experts as base64 of a
// flat int32 array (routed_experts_capturer.py).
func TestGenerateRoutedExperts(t *testing.T) {
	c6 := loadRoutingCase(t, "flat int32")   // 6 positions, 4 layers, top-2
	c16 := loadRoutingCase(t, "flat uint16") // 3 positions, 5 layers, top-4
	var got map[string]any
	payload := c6
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got = nil
		_ = json.Unmarshal(body, &got)
		meta := map[string]any{"id": "r", "finish_reason": map[string]any{"type": "stop", "matched": 2},
			"prompt_tokens": 4, "completion_tokens": 3, "cached_tokens": 0, "weight_version": "3"}
		if got["return_routed_experts"] == true {
			meta["routed_experts"] = payload.Flat
			if payload.Dtype != "" {
				meta["routed_experts_dtype"] = payload.Dtype
			}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "", "output_ids": []int{5, 6, 2}, "meta_info": meta})
	}))
	defer ts.Close()
	ctx := context.Background()
	req := server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1, 2, 3, 4}, Params: server.SamplingParams{RoutedExperts: true}}

	c, err := sglang.New(sglang.Config{BaseURL: ts.URL, RoutingLayers: c6.Layers, RoutingTopK: c6.TopK})
	require.NoError(t, err)
	out, err := c.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, true, got["return_routed_experts"])
	require.NotNil(t, out.RoutedExperts)
	require.Equal(t, server.Routing{Layers: 4, TopK: 2, Experts: c6.Values}, *out.RoutedExperts)
	require.Equal(t, 6, out.RoutedExperts.Rows())

	// The dtype SGLang names is honoured.
	payload = c16
	c, err = sglang.New(sglang.Config{BaseURL: ts.URL, RoutingLayers: c16.Layers, RoutingTopK: c16.TopK})
	require.NoError(t, err)
	out, err = c.Generate(ctx, req)
	require.NoError(t, err)
	require.Equal(t, c16.Values, out.RoutedExperts.Experts)

	// Not asked: not sent, not read.
	out, err = c.Generate(ctx, server.GenerateRequest{RequestID: "r", PromptIDs: []int32{1, 2, 3, 4}})
	require.NoError(t, err)
	require.NotContains(t, got, "return_routed_experts")
	require.Nil(t, out.RoutedExperts)

	// Without the model's shape the flat array cannot be read: a clear error.
	payload = c6
	c, err = sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)
	_, err = c.Generate(ctx, req)
	require.ErrorContains(t, err, "layers and experts per token are needed")

	// More positions than the sequence has is a bad response.
	c, err = sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1, RoutingLayers: 2, RoutingTopK: 2})
	require.NoError(t, err)
	_, err = c.Generate(ctx, req) // 48 values = 12 positions of 2×2 for a 7-token sequence
	require.ErrorContains(t, err, "12 positions for a sequence of 7 tokens")

	// From a position on (a resumed generation): routed_experts_start_len
	// goes out, and the rows start there ([start, seqlen-1) in SGLang's
	// GenerateReqInput).
	c16Client, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1, RoutingLayers: c16.Layers, RoutingTopK: c16.TopK})
	require.NoError(t, err)
	payload = c16 // 3 positions: 3..5 of the 7-token sequence
	from := req
	from.Params.RoutedExpertsFrom = 3
	out, err = c16Client.Generate(ctx, from)
	require.NoError(t, err)
	require.EqualValues(t, 3, got["routed_experts_start_len"])
	require.Equal(t, 3, out.RoutedExperts.Start)
	require.Equal(t, c16.Values, out.RoutedExperts.Experts)
	c6Client, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1, RoutingLayers: c6.Layers, RoutingTopK: c6.TopK})
	require.NoError(t, err)
	payload = c6 // 6 rows do not fit from position 4 of 7 tokens
	from.Params.RoutedExpertsFrom = 4
	_, err = c6Client.Generate(ctx, from)
	require.ErrorContains(t, err, "6 positions for a sequence of 7 tokens from position 4")
	from.Params.RoutedExpertsFrom = 5 // after the prompt: refused before sending
	got = nil
	_, err = c6Client.Generate(ctx, from)
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.Nil(t, got)
	payload = c16
	// From 0 is the whole sequence: the field is left out.
	_, err = c16Client.Generate(ctx, req)
	require.NoError(t, err)
	require.NotContains(t, got, "routed_experts_start_len")
}
