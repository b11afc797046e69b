package sglang_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/sglang"
	"github.com/agentrl/agentrl/vision"
)

// fakeVLSGLang is /generate as SGLang serves a Qwen2-VL model, reduced to
// what it checks of the images: GenerateReqInput's input_ids and
// image_data (python/sglang/srt/managers/io_struct.py at
// 001067fffe33427bee0ed2f007fb7551a1d76b44), each entry read as
// load_image reads a data URL, put through the model's image processor,
// and matched to its block: SGLang's Qwen-VL processor
// (python/sglang/srt/multimodal/processors/qwen_vl.py) finds the blocks in
// the decoded input_ids with the regex
// <\|vision_start\|>(?:<\|image_pad\|>)+<\|vision_end\|>, one per image in
// order, and re-expands each to the processor's count; a block of another
// length would have the engine run a sequence other than the trajectory's,
// so the fake refuses it.
func fakeVLSGLang(t *testing.T, proc *vision.Processor, seen *[]int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			InputIDs  []int    `json:"input_ids"`
			ImageData []string `json:"image_data"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fail := func(format string, a ...any) { http.Error(w, fmt.Sprintf(format, a...), http.StatusBadRequest) }
		runs, err := vision.CountPlaceholders(req.InputIDs, vision.QwenImagePlaceholders)
		if err != nil {
			fail("%v", err)
			return
		}
		if len(runs) != len(req.ImageData) {
			fail("%d image blocks, %d images", len(runs), len(req.ImageData))
			return
		}
		*seen = (*seen)[:0]
		for i, src := range req.ImageData {
			_, b64, ok := strings.Cut(src, ",")
			if !ok || !strings.HasPrefix(src, "data:image/") {
				fail("image %d: not a data URL", i)
				return
			}
			data, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				fail("image %d: %v", i, err)
				return
			}
			img, err := vision.Decode(data, vision.Limits{})
			if err != nil {
				fail("image %d: %v", i, err)
				return
			}
			f, err := proc.Process(img)
			if err != nil {
				fail("image %d: %v", i, err)
				return
			}
			if runs[i] != f.Tokens() {
				fail("image %d: %d pad tokens for an image of %d", i, runs[i], f.Tokens())
				return
			}
			*seen = append(*seen, f.Tokens())
		}
		meta := map[string]any{"id": "r", "finish_reason": map[string]any{"type": "stop", "matched": 2},
			"prompt_tokens": len(req.InputIDs), "completion_tokens": 2, "cached_tokens": 0}
		_ = json.NewEncoder(w).Encode(map[string]any{"text": "", "output_ids": []int{5, 2}, "meta_info": meta})
	}))
}

func TestGenerateImages(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	var seen []int
	ts := fakeVLSGLang(t, proc, &seen)
	defer ts.Close()
	c, err := sglang.New(sglang.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)

	var imgs []server.Image
	var ids []int32
	for _, name := range []string{"rgb_640x480_checker.png", "webp_lossy_99x67.webp", "jpeg_420_333x201.jpg"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "vision", "testdata", "images", name))
		require.NoError(t, err)
		img, err := vision.Decode(data, vision.Limits{})
		require.NoError(t, err)
		f, err := proc.Process(img)
		require.NoError(t, err)
		imgs = append(imgs, server.Image{Data: data, Tokens: f.Tokens(), Grid: f.Grid})
		ids = append(ids, 1, 151652)
		for range f.Tokens() {
			ids = append(ids, 151655)
		}
		ids = append(ids, 151653)
	}
	v := &server.Vision{Images: imgs, VisionStart: 151652, Pad: 151655, VisionEnd: 151653}
	require.NoError(t, server.CheckRequest(server.GenerateRequest{PromptIDs: ids, Vision: v}, 0))
	out, err := c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: ids, Vision: v})
	require.NoError(t, err)
	require.Equal(t, []int32{5, 2}, out.TokenIDs)
	require.Equal(t, []int{imgs[0].Tokens, imgs[1].Tokens, imgs[2].Tokens}, seen)

	// The fake catches a count that does not match the image.
	bad := append([]int32{}, ids...)
	bad = append(bad[:2], bad[3:]...) // one pad fewer in the first block
	_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "r", PromptIDs: bad, Vision: v})
	require.ErrorContains(t, err, "image 0: 390 pad tokens for an image of 391")
}
