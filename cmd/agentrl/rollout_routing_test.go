package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
)

// moeSGLang is SGLang's /generate for a mixture-of-experts model run with
// --enable-return-routed-experts (python/sglang/srt/managers/io_struct.py
// GenerateReqInput.return_routed_experts; the answer's
// meta_info.routed_experts is base64 of a flat int32 array of
// [seqlen-1, layers, top-k], routed_experts_capturer.py): each position p,
// layer l and slot k routes to expert 10·p + 2·l + k (mod 2¹⁵), so the
// test can tell which position a row is.
type moeSGLang struct {
	tok           *tokenizer.Tokenizer
	layers, topk  int
	mu            sync.Mutex
	asked, routed int
}

func (f *moeSGLang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputIDs            []int32 `json:"input_ids"`
		ReturnRoutedExperts bool    `json:"return_routed_experts"`
	}
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	end, _ := f.tok.TokenID("<|im_end|>")
	out := append(f.tok.Encode("42"), end)
	meta := map[string]any{"id": "x", "finish_reason": map[string]any{"type": "stop", "matched": end},
		"prompt_tokens": len(req.InputIDs), "completion_tokens": len(out), "cached_tokens": 0}
	lps := make([][]any, len(out))
	for i, id := range out {
		lps[i] = []any{-0.25, id, nil}
	}
	meta["output_token_logprobs"] = lps
	f.mu.Lock()
	f.asked++
	if req.ReturnRoutedExperts {
		f.routed++
		rows := len(req.InputIDs) + len(out) - 1
		buf := make([]byte, 0, rows*f.layers*f.topk*4)
		for p := range rows {
			for l := range f.layers {
				for k := range f.topk {
					buf = binary.LittleEndian.AppendUint32(buf, uint32((10*p+2*l+k)%32768))
				}
			}
		}
		meta["routed_experts"] = base64.StdEncoding.EncodeToString(buf)
	}
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"text": "", "output_ids": out, "meta_info": meta})
}

// TestRolloutRoutingReplay: verl's
// actor_rollout_ref.rollout.enable_rollout_routing_replay asks SGLang for
// the routed experts (the shape from config.json's num_hidden_layers and
// num_experts_per_tok), keeps them per token in the trajectories and
// writes verl's int16 routed_experts [B, P+R, layers, top-k] at the
// left-pad offset, which PyTorch reads and indexes as verl's trainer does.
// A model without an MoE shape in config.json is refused up front.
func TestRolloutRoutingReplay(t *testing.T) {
	dir := qwenTokenizerDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3_moe", "num_hidden_layers": 3, "num_experts_per_tok": 2}`), 0o644))
	fake := &moeSGLang{tok: tok, layers: 3, topk: 2}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	tmp := t.TempDir()
	data := filepath.Join(tmp, "data.jsonl")
	require.NoError(t, os.WriteFile(data, []byte(`{"prompt": [{"role": "user", "content": "What is 6*7?"}], "extra_info": {"index": 1}}
{"prompt": [{"role": "user", "content": "And 40+2, in one word?"}], "extra_info": {"index": 2}}
`), 0o644))
	out, batch := filepath.Join(tmp, "t.jsonl"), filepath.Join(tmp, "b.safetensors")
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), append([]string{"rollout", "--data", data, "--tokenizer", dir, "--servers", ts.URL,
			"--out", out, "--batch", batch, "--n", "2", "--progress", "never"}, args...), nil, &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, stdout, stderr := run("actor_rollout_ref.rollout.enable_rollout_routing_replay=true")
	require.Equal(t, 0, code, stderr)
	require.Contains(t, strings.Join(strings.Fields(stdout), " "), "trajectories 4 (2 groups, 0 filtered, 0 failed)")
	require.Equal(t, 4, fake.routed)

	f, err := os.Open(out)
	require.NoError(t, err)
	trajs, err := trajectory.ReadJSONL(f)
	f.Close()
	require.NoError(t, err)
	for _, tr := range trajs {
		r := tr.RoutedExperts
		require.NotNil(t, r, tr.ID)
		require.Equal(t, 3, r.Layers)
		require.Equal(t, 2, r.TopK)
		require.Equal(t, len(tr.PromptIDs)+len(tr.ResponseIDs)-1, r.Rows())
		for p := range r.Rows() {
			require.EqualValues(t, 10*p+2*2+1, r.Experts[(p*3+2)*2+1], "position %d, layer 2, slot 1", p)
		}
	}
	bf, err := os.Open(batch)
	require.NoError(t, err)
	b, err := trajectory.ReadSafetensorsBatch(bf)
	bf.Close()
	require.NoError(t, err)
	require.Equal(t, 3, b.RoutingLayers)
	require.Equal(t, 2, b.RoutingTopK)
	require.Len(t, b.RoutedExperts, b.Size*(b.PromptLen+b.ResponseLen)*3*2)
	py := torchPython(t)
	res, err := runPython(py, filepath.Join("..", "..", "trajectory", "testdata", "check_torch.py"), batch)
	require.NoError(t, err, res)
	require.Contains(t, res, "ok: torch")

	// Off by default: nothing asked, no routed_experts.
	fake.routed = 0
	code, _, stderr = run()
	require.Equal(t, 0, code, stderr)
	require.Zero(t, fake.routed)

	// A dense model's config.json has no MoE shape: refused before any call.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "qwen3", "num_hidden_layers": 28}`), 0o644))
	asked := fake.asked
	code, _, stderr = run("actor_rollout_ref.rollout.enable_rollout_routing_replay=true")
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr, "enable_rollout_routing_replay")
	require.Contains(t, stderr, "routing replay is for mixture-of-experts models")
	require.Equal(t, asked, fake.asked)
}
