package main

import (
	"bytes"
	"context"
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
	text, err := f.tok.Decode(ids, false)
	if err != nil {
		fail("%v", err)
		return
	}
	reply := "<tool_call>\n{\"name\": \"image_zoom_in_tool\", \"arguments\": {\"bbox_2d\": [0, 0, 40, 30], \"label\": \"angle\"}}\n</tool_call>"
	if strings.Contains(text, "<|im_start|>tool\n") {
		reply = "The answer is \\boxed{3}."
	}
	end, _ := f.tok.TokenID("<|im_end|>")
	out := append(f.tok.Encode(reply), end)
	f.mu.Lock()
	f.images = append(f.images, len(req.ImageData))
	f.tokens = append(f.tokens, counts...)
	f.mu.Unlock()
	_ = json.NewEncoder(w).Encode(map[string]any{"text": "", "output_ids": out, "meta_info": map[string]any{
		"id": "x", "finish_reason": map[string]any{"type": "stop", "matched": end},
		"prompt_tokens": len(ids), "completion_tokens": len(out), "cached_tokens": 0}})
}

// TestRolloutImagesGeo3k runs `agentrl rollout` on the geo3k-format
// Parquet files (DuckDB's and Arrow-rs') with the DeepEyes zoom-in tool
// against a fake SGLang that checks every image it gets against its
// placeholder run: the rows' images reach the engine with the prompt, the
// crop comes back as an image in the tool turn and goes out with the next
// request, and the batch carries both in verl's layout.
func TestRolloutImagesGeo3k(t *testing.T) {
	dir := vlModelDir(t)
	tok, err := tokenizer.Load(dir)
	require.NoError(t, err)
	pc, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json"))
	require.NoError(t, err)
	cfg, err := vision.ParseConfig(pc)
	require.NoError(t, err)
	proc, err := vision.NewProcessor(cfg)
	require.NoError(t, err)
	fake := &vlSGLang{t: t, tok: tok, proc: proc}
	ts := httptest.NewServer(fake)
	defer ts.Close()

	tmp := t.TempDir()
	tools, err := filepath.Abs(filepath.Join("..", "..", "tool", "testdata", "image_zoom_in_tool_config.yaml"))
	require.NoError(t, err)
	cfgPath := filepath.Join(tmp, "deepeyes.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(strings.Replace(deepEyesYAML, "TOOLS", tools, 1)), 0o644))
	for _, file := range []string{"geo3k_duckdb.parquet", "geo3k_arrow_rs.parquet"} {
		t.Run(file, func(t *testing.T) {
			fake.images, fake.tokens = nil, nil
			out := filepath.Join(tmp, file+".jsonl")
			batch := filepath.Join(tmp, file+".safetensors")
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), []string{"rollout", "--config", cfgPath,
				"--data", filepath.Join("..", "..", "dataset", "testdata", file), "--tokenizer", dir,
				"--servers", ts.URL, "--out", out, "--batch", batch, "--progress", "never"}, nil, &stdout, &stderr)
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

	// The vLLM client refuses images, and the rollout says why.
	var stdout, stderr bytes.Buffer
	code := runMain(context.Background(), []string{"rollout", "--config", cfgPath, "--backend", "vllm",
		"--data", filepath.Join("..", "..", "dataset", "testdata", "geo3k_duckdb.parquet"), "--tokenizer", dir,
		"--servers", ts.URL, "--out", filepath.Join(tmp, "vllm.jsonl"), "--progress", "never"}, nil, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, strings.Join(strings.Fields(stdout.String()), " "), "trajectories 6 (3 groups, 0 filtered, 6 failed)")
	require.Contains(t, stderr.String(), "bad request: Vision: the vLLM client sends no images (2 in this request)")
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
