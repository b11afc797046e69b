package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/vision"
)

// deepEyesYAML is a DeepEyes-style rollout: the tool agent with verl's
// image_zoom_in_tool, hermes calls, rewards from the loop.
const deepEyesYAML = `
data:
  max_prompt_length: 1024
  max_response_length: 512
actor_rollout_ref:
  model: {path: ignored}
  rollout:
    name: sglang
    n: 2
    temperature: 0
    calculate_log_probs: false
    multi_turn:
      enable: true
      max_assistant_turns: 3
      format: hermes
      tool_config_path: TOOLS
`

// vlSGLang is SGLang's /generate for a Qwen2-VL model, reduced to its
// handling of images: GenerateReqInput's input_ids and image_data
// (python/sglang/srt/managers/io_struct.py, sgl-project/sglang
// 001067fffe33427bee0ed2f007fb7551a1d76b44), each image loaded from its
// data URL (load_image), processed with the model directory's processor
// and matched to its block (qwen_vl.py's
// <|vision_start|>(<|image_pad|>)+<|vision_end|> regex, one block per image
// in order), which must hold the image's token count, or the engine would
// run another sequence than the trajectory's. Its model zooms in once,
// then answers.
type vlSGLang struct {
	t    *testing.T
	tok  *tokenizer.Tokenizer
	proc *vision.Processor
	mu   sync.Mutex
	// images is the number of images of each call, tokens their counts.
	images []int
	tokens []int
}

// newVLSGLang is the Qwen2.5-VL model directory of the tests, its
// tokenizer and a fake SGLang with its processor.
func newVLSGLang(t *testing.T) (string, *tokenizer.Tokenizer, *vlSGLang) {
	t.Helper()
	dir := vlModelDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	pc, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json"))
	require.NoError(t, err)
	cfg, err := vision.ParseConfig(pc)
	require.NoError(t, err)
	proc, err := vision.NewProcessor(cfg)
	require.NoError(t, err)
	return dir, tok, &vlSGLang{t: t, tok: tok, proc: proc}
}

func (f *vlSGLang) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		InputIDs  []int    `json:"input_ids"`
		ImageData []string `json:"image_data"`
	}
	body, _ := io.ReadAll(r.Body)
	fail := func(format string, a ...any) { http.Error(w, fmt.Sprintf(format, a...), http.StatusBadRequest) }
	if r.URL.Path != "/generate" {
		fail("path %s", r.URL.Path)
		return
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail("%v", err)
		return
	}
	runs, err := vision.CountPlaceholders(req.InputIDs, vision.QwenImagePlaceholders)
	if err != nil || len(runs) != len(req.ImageData) {
		fail("%d image blocks (%v), %d images", len(runs), err, len(req.ImageData))
		return
	}
	var counts []int
	for i, src := range req.ImageData {
		_, b64, _ := strings.Cut(src, ",")
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || !strings.HasPrefix(src, "data:image/") {
			fail("image %d: not a base64 data URL", i)
			return
		}
		img, err := vision.Decode(data, vision.Limits{})
		if err != nil {
			fail("image %d: %v", i, err)
			return
		}
		feat, err := f.proc.Process(img)
		if err != nil {
			fail("image %d: %v", i, err)
			return
		}
		if runs[i] != feat.Tokens() {
			fail("image %d: %d pads, the image is %d tokens", i, runs[i], feat.Tokens())
			return
		}
		counts = append(counts, feat.Tokens())
	}
	ids := make([]int32, len(req.InputIDs))
	for i, id := range req.InputIDs {
		ids[i] = int32(id)
	}
	out, end, err := f.reply(ids, counts)
	if err != nil {
		fail("%v", err)
		return
	}
	// meta_info.output_token_logprobs: [logprob, id, text] per token
	// (capture asks for them always).
	lps := make([][]any, len(out))
	for i, id := range out {
		lps[i] = []any{-0.5, id, nil}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"text": "", "output_ids": out, "meta_info": map[string]any{
		"id": "x", "finish_reason": map[string]any{"type": "stop", "matched": end},
		"prompt_tokens": len(ids), "completion_tokens": len(out), "cached_tokens": 0, "output_token_logprobs": lps}})
}

// reply is the fake model: it zooms in once, then answers; counts are the
// call's images' token counts.
func (f *vlSGLang) reply(ids []int32, counts []int) ([]int32, int32, error) {
	text, err := f.tok.Decode(ids, false)
	if err != nil {
		return nil, 0, err
	}
	reply := "<tool_call>\n{\"name\": \"image_zoom_in_tool\", \"arguments\": {\"bbox_2d\": [0, 0, 40, 30], \"label\": \"angle\"}}\n</tool_call>"
	if strings.Contains(text, "<|im_start|>tool\n") {
		reply = "The answer is \\boxed{3}."
	}
	end, _ := f.tok.TokenID("<|im_end|>")
	out := append(f.tok.Encode(reply), end)
	f.mu.Lock()
	f.images = append(f.images, len(counts))
	f.tokens = append(f.tokens, counts...)
	f.mu.Unlock()
	return out, end, nil
}

// vlVLLM is vLLM for the same model (vllm-project/vllm
// 0001948bc76939369ca855c90b36d81256477e85): /v1/chat/completions/render
// (entrypoints/serve/render/serving.py) loads the one image of its chat
// from the data URL, processes it and answers its features (the
// placeholder run on its pads; kwargs_data, vLLM's serialized tensors,
// stands here as the image's digest and token count); and
// /inference/v1/generate (entrypoints/serve/disagg/serving.py) takes
// token_ids with features, which must place each image's item exactly on
// its block's pads, in order, or the engine would run another sequence
// than the trajectory's.
type vlVLLM struct{ *vlSGLang }

func (f vlVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fail := func(format string, a ...any) { http.Error(w, fmt.Sprintf(format, a...), http.StatusBadRequest) }
	switch r.URL.Path {
	case "/v1/chat/completions/render":
		var req struct {
			Messages []struct {
				Content []struct {
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 1 || len(req.Messages[0].Content) != 1 {
			fail("render: one message with one image: %v", err)
			return
		}
		src := req.Messages[0].Content[0].ImageURL.URL
		_, b64, _ := strings.Cut(src, ",")
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil || !strings.HasPrefix(src, "data:image/") {
			fail("render: not a base64 data URL")
			return
		}
		img, err := vision.Decode(data, vision.Limits{})
		if err != nil {
			fail("render: %v", err)
			return
		}
		feat, err := f.proc.Process(img)
		if err != nil {
			fail("render: %v", err)
			return
		}
		vs, _ := f.tok.TokenID("<|vision_start|>")
		pad, _ := f.tok.TokenID("<|image_pad|>")
		ve, _ := f.tok.TokenID("<|vision_end|>")
		ids := []int32{vs}
		for range feat.Tokens() {
			ids = append(ids, pad)
		}
		ids = append(ids, ve)
		sum := sha256.Sum256(data)
		kw := fmt.Sprintf("%x:%d", sum, feat.Tokens())
		_ = json.NewEncoder(w).Encode(map[string]any{"token_ids": ids, "features": map[string]any{
			"mm_hashes":       map[string]any{"image": []string{fmt.Sprintf("%x", sum[:8])}},
			"mm_placeholders": map[string]any{"image": []any{map[string]int{"offset": 1, "length": feat.Tokens()}}},
			"kwargs_data":     map[string]any{"image": []string{base64.StdEncoding.EncodeToString([]byte(kw))}}}})
	case "/inference/v1/generate":
		var req struct {
			TokenIDs []int32 `json:"token_ids"`
			Features *struct {
				MMPlaceholders map[string][]struct{ Offset, Length int } `json:"mm_placeholders"`
				KwargsData     map[string][]string                       `json:"kwargs_data"`
			} `json:"features"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			fail("%v", err)
			return
		}
		ids := make([]int, len(req.TokenIDs))
		for i, id := range req.TokenIDs {
			ids[i] = int(id)
		}
		runs, err := vision.CountPlaceholders(ids, vision.QwenImagePlaceholders)
		if err != nil {
			fail("%v", err)
			return
		}
		var counts []int
		if len(runs) > 0 {
			if req.Features == nil {
				fail("%d image blocks, no features", len(runs))
				return
			}
			phs, kws := req.Features.MMPlaceholders["image"], req.Features.KwargsData["image"]
			if len(phs) != len(runs) || len(kws) != len(runs) {
				fail("%d image blocks, %d placeholders, %d items", len(runs), len(phs), len(kws))
				return
			}
			pad, _ := f.tok.TokenID("<|image_pad|>")
			vs, _ := f.tok.TokenID("<|vision_start|>")
			for i, p := range phs {
				raw, _ := base64.StdEncoding.DecodeString(kws[i])
				_, n, _ := strings.Cut(string(raw), ":")
				if p.Offset < 1 || p.Offset+p.Length > len(ids) || req.TokenIDs[p.Offset-1] != vs || fmt.Sprint(p.Length) != n || fmt.Sprint(runs[i]) != n {
					fail("image %d: placeholder {%d, %d} is not its block of %s pads", i, p.Offset, p.Length, n)
					return
				}
				for _, id := range req.TokenIDs[p.Offset : p.Offset+p.Length] {
					if id != pad {
						fail("image %d: placeholder covers a token that is not a pad", i)
						return
					}
				}
				counts = append(counts, p.Length)
			}
		}
		out, _, err := f.reply(req.TokenIDs, counts)
		if err != nil {
			fail("%v", err)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "x", "choices": []any{map[string]any{
			"index": 0, "token_ids": out, "finish_reason": "stop"}}})
	default:
		fail("path %s", r.URL.Path)
	}
}

// TestRolloutImagesGeo3k runs `agentrl rollout` on the geo3k-format
// Parquet files (DuckDB's and Arrow-rs') with the DeepEyes zoom-in tool
// against a fake SGLang and a fake vLLM that check every image they get
// against its placeholder run: the rows' images reach the engine with the prompt, the
// crop comes back as an image in the tool turn and goes out with the next
// request, and the batch carries both in verl's layout.
func TestRolloutImagesGeo3k(t *testing.T) {
	dir, tok, fake := newVLSGLang(t)
	ts := httptest.NewServer(fake)
	defer ts.Close()
	vts := httptest.NewServer(vlVLLM{fake})
	defer vts.Close()

	tmp := t.TempDir()
	tools, err := filepath.Abs(filepath.Join("..", "..", "tool", "testdata", "image_zoom_in_tool_config.yaml"))
	require.NoError(t, err)
	cfgPath := filepath.Join(tmp, "deepeyes.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(deepEyesYAML, "TOOLS", tools, 1)), 0o644))
	for _, run := range []struct{ file, backend, url string }{
		{"geo3k_duckdb.parquet", "sglang", ts.URL}, {"geo3k_arrow_rs.parquet", "sglang", ts.URL},
		{"geo3k_duckdb.parquet", "vllm", vts.URL}, {"geo3k_arrow_rs.parquet", "vllm", vts.URL},
	} {
		file := run.file
		t.Run(run.backend+"/"+file, func(t *testing.T) {
			fake.images, fake.tokens = nil, nil
			out := filepath.Join(tmp, run.backend+file+".jsonl")
			batch := filepath.Join(tmp, run.backend+file+".safetensors")
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), []string{"rollout", "--config", cfgPath, "--backend", run.backend,
				"--data", filepath.Join("..", "..", "dataset", "testdata", file), "--tokenizer", dir,
				"--servers", run.url, "--out", out, "--batch", batch, "--progress", "never"}, nil, &stdout, &stderr)
			require.Equal(t, 0, code, "stderr: %s", stderr.String())
			summary := strings.Join(strings.Fields(stdout.String()), " ")
			require.Contains(t, summary, "trajectories 6 (3 groups, 0 filtered, 0 failed)")
			require.Contains(t, summary, "tool calls 6 (success rate 1.000)")

			// Each trajectory: a first call with the row's images, a
			// second with the crop too.
			fake.mu.Lock()
			require.Len(t, fake.images, 12)
			perCall := map[int]int{}
			for _, n := range fake.images {
				perCall[n]++
			}
			fake.mu.Unlock()
			require.Equal(t, map[int]int{1: 4, 2: 6, 3: 2}, perCall)

			f, err := os.Open(out)
			require.NoError(t, err)
			trajs, err := trajectory.ReadJSONL(f)
			f.Close()
			require.NoError(t, err)
			require.Len(t, trajs, 6)
			for _, tr := range trajs {
				require.NotNil(t, tr.MultiModal, tr.ID)
				text, err := tok.Decode(tr.ResponseIDs, false)
				require.NoError(t, err)
				require.Contains(t, text, "<|im_start|>tool\n<|vision_start|><|image_pad|>")
				require.Contains(t, text, "Zoomed in on the image to the region [0, 0, 40, 30] with label angle.")
				require.True(t, strings.HasSuffix(text, "The answer is \\boxed{3}.<|im_end|>"))
				require.Equal(t, []float64{0}, tr.ToolRewards)
			}

			bf, err := os.Open(batch)
			require.NoError(t, err)
			b, err := trajectory.ReadSafetensorsBatch(bf)
			bf.Close()
			require.NoError(t, err)
			require.Equal(t, 6, b.Size)
			mm := b.MultiModal
			require.NotNil(t, mm)
			require.NotNil(t, mm.PositionIDs)
			require.Len(t, mm.PositionIDs, 6*4*(b.PromptLen+b.ResponseLen))
			imgs := 0
			for _, n := range mm.RowImages {
				imgs += int(n)
			}
			require.Equal(t, 2*(2+2+3), imgs) // each row's images and one crop, n = 2
			py := torchPython(t)
			res, err := runPython(py, filepath.Join("..", "..", "trajectory", "testdata", "check_torch.py"), batch)
			require.NoError(t, err, res)
			require.Contains(t, res, "ok: torch")
		})
	}
}

// torchPython is a python3 with torch, or skips (CI must have it: .ci/deps.sh
// installs python3-torch).
func torchPython(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if out, err := exec.Command(py, "-c", "import torch").CombinedOutput(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must have python3-torch: %v: %s", err, out)
		}
		t.Skipf("python3 with torch is not available: %v: %s", err, out)
	}
	return py
}

func runPython(py string, args ...string) (string, error) {
	out, err := exec.Command(py, args...).CombinedOutput()
	return string(out), err
}
