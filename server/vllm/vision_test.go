package vllm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"image"
	_ "image/gif"
	_ "image/jpeg"
	_ "image/png"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	_ "golang.org/x/image/webp"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/vllm"
	"github.com/agentrl/agentrl/vision"
)

// The Qwen-VL tokenizers' vision tokens.
const (
	visionStart = 151652
	imagePad    = 151655
	visionEnd   = 151653
)

// fakeVLVLLM is a vLLM server for a Qwen2-VL model reduced to the two
// endpoints images take (vllm-project/vllm
// 0001948bc76939369ca855c90b36d81256477e85):
//
//   - /v1/chat/completions/render (entrypoints/serve/render/serving.py,
//     render_chat_request): the chat's image is loaded from its data URL,
//     sized and given its placeholder run as vLLM's Qwen2-VL processor does
//     (model_executor/models/qwen2_vl.py: PromptReplacement of the one
//     <|image_pad|> by grid_t·grid_h·grid_w/merge² pads, HF's
//     smart_resize); the answer is a GenerateRequest: token_ids, and
//     features {mm_hashes, mm_placeholders, kwargs_data}. kwargs_data is
//     opaque to a client; here it is JSON naming the image's digest and
//     grid, standing for the msgpack MultiModalKwargsItem (which the
//     client passes through as it got it).
//   - /inference/v1/generate (entrypoints/serve/disagg/serving.py,
//     serve_tokens): token_ids with features, which go to the engine as
//     they are, so every placeholder range must lie exactly on its
//     image's pads, in order, one per vision block, with its item's
//     hash, or the model would read another sequence than the
//     trajectory's.
//
// The sizing is written here from HF's smart_resize
// (transformers/models/qwen2_vl/image_processing_qwen2_vl.py), apart from
// agentrl's vision package, and images are measured with the standard
// library's decoders.
type fakeVLVLLM struct {
	cfg     vision.Config
	renders atomic.Int32
	mu      sync.Mutex
	// seen is each generate call's pad count per image.
	seen [][]int
	// noRender and noGenerate answer 404 on the endpoint, as builds
	// without it do.
	noRender, noGenerate   bool
	generates, completions atomic.Int32
	streams                atomic.Int32
}

type fakeKwargs struct {
	SHA  string `json:"sha"`
	Grid [3]int `json:"grid"`
}

// smartResize is HF's smart_resize: the sides rounded to the factor, then
// scaled into [minPixels, maxPixels] keeping the aspect ratio.
func smartResize(h, w, factor, minPixels, maxPixels int) (int, int) {
	round := func(x float64) int { return int(math.RoundToEven(x/float64(factor))) * factor }
	hb, wb := max(factor, round(float64(h))), max(factor, round(float64(w)))
	if hb*wb > maxPixels {
		beta := math.Sqrt(float64(h*w) / float64(maxPixels))
		hb = max(factor, int(math.Floor(float64(h)/beta/float64(factor)))*factor)
		wb = max(factor, int(math.Floor(float64(w)/beta/float64(factor)))*factor)
	} else if hb*wb < minPixels {
		beta := math.Sqrt(float64(minPixels) / float64(h*w))
		hb = int(math.Ceil(float64(h)*beta/float64(factor))) * factor
		wb = int(math.Ceil(float64(w)*beta/float64(factor))) * factor
	}
	return hb, wb
}

func (f *fakeVLVLLM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	fail := func(format string, a ...any) {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": fmt.Sprintf(format, a...), "code": 400}})
	}
	switch r.URL.Path {
	case "/v1/chat/completions/render":
		if f.noRender {
			http.NotFound(w, r)
			return
		}
		f.renders.Add(1)
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content []struct {
					Type     string `json:"type"`
					ImageURL struct {
						URL string `json:"url"`
					} `json:"image_url"`
				} `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 1 || len(req.Messages[0].Content) != 1 ||
			req.Messages[0].Content[0].Type != "image_url" {
			fail("render: want one message with one image_url part: %v %s", err, body)
			return
		}
		src := req.Messages[0].Content[0].ImageURL.URL
		head, b64, ok := strings.Cut(src, ",")
		if !ok || !strings.HasPrefix(head, "data:image/") || !strings.HasSuffix(head, ";base64") {
			fail("render: not a base64 image data URL: %.40s", src)
			return
		}
		data, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			fail("render: %v", err)
			return
		}
		ic, _, err := image.DecodeConfig(bytes.NewReader(data))
		if err != nil {
			fail("render: %v", err)
			return
		}
		factor := f.cfg.PatchSize * f.cfg.MergeSize
		h, wd := smartResize(ic.Height, ic.Width, factor, f.cfg.MinPixels, f.cfg.MaxPixels)
		grid := [3]int{1, h / f.cfg.PatchSize, wd / f.cfg.PatchSize}
		pads := grid[0] * grid[1] * grid[2] / (f.cfg.MergeSize * f.cfg.MergeSize)
		// <|im_start|>user\n<|vision_start|>pads<|vision_end|><|im_end|>\n<|im_start|>assistant\n
		ids := []int{151644, 872, 198, visionStart}
		offset := len(ids)
		for range pads {
			ids = append(ids, imagePad)
		}
		ids = append(ids, visionEnd, 151645, 198, 151644, 77091, 198)
		sum := sha256.Sum256(data)
		kw, _ := json.Marshal(fakeKwargs{SHA: hex.EncodeToString(sum[:]), Grid: grid})
		_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "chatcmpl-x", "token_ids": ids, "sampling_params": map[string]any{"max_tokens": 1},
			"features": map[string]any{
				"mm_hashes":       map[string]any{"image": []string{"h-" + hex.EncodeToString(sum[:8])}},
				"mm_placeholders": map[string]any{"image": []any{map[string]int{"offset": offset, "length": pads}}},
				"kwargs_data":     map[string]any{"image": []string{base64.StdEncoding.EncodeToString(kw)}},
			}})
	case "/inference/v1/generate":
		if f.noGenerate {
			http.NotFound(w, r)
			return
		}
		f.generates.Add(1)
		var req struct {
			TokenIDs []int `json:"token_ids"`
			Stream   bool  `json:"stream"`
			Features *struct {
				MMHashes       map[string][]string `json:"mm_hashes"`
				MMPlaceholders map[string][]struct {
					Offset int `json:"offset"`
					Length int `json:"length"`
				} `json:"mm_placeholders"`
				KwargsData map[string][]*string `json:"kwargs_data"`
			} `json:"features"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			fail("%v", err)
			return
		}
		ids := req.TokenIDs
		blocks := 0
		for i, id := range ids {
			if id == imagePad && (i == 0 || ids[i-1] != imagePad) {
				blocks++
			}
		}
		var counts []int
		if blocks > 0 {
			ft := req.Features
			if ft == nil {
				fail("%d image blocks, no features", blocks)
				return
			}
			hs, ps, ks := ft.MMHashes["image"], ft.MMPlaceholders["image"], ft.KwargsData["image"]
			if len(hs) != blocks || len(ps) != blocks || len(ks) != blocks {
				fail("%d image blocks, features for %d/%d/%d", blocks, len(hs), len(ps), len(ks))
				return
			}
			prev := 0
			for i, p := range ps {
				if ks[i] == nil {
					fail("image %d: no kwargs_data, and nothing cached", i)
					return
				}
				raw, err := base64.StdEncoding.DecodeString(*ks[i])
				var kw fakeKwargs
				if err == nil {
					err = json.Unmarshal(raw, &kw)
				}
				if err != nil {
					fail("image %d: kwargs_data: %v", i, err)
					return
				}
				if hs[i] != "h-"+kw.SHA[:16] {
					fail("image %d: hash %s is not its item's", i, hs[i])
					return
				}
				want := kw.Grid[0] * kw.Grid[1] * kw.Grid[2] / (f.cfg.MergeSize * f.cfg.MergeSize)
				if p.Offset < prev+1 || p.Length != want || p.Offset+p.Length >= len(ids) || ids[p.Offset-1] != visionStart || ids[p.Offset+p.Length] != visionEnd {
					fail("image %d: placeholder {%d, %d} is not its block of %d pads", i, p.Offset, p.Length, want)
					return
				}
				for _, id := range ids[p.Offset : p.Offset+p.Length] {
					if id != imagePad {
						fail("image %d: placeholder {%d, %d} covers a token that is not a pad", i, p.Offset, p.Length)
						return
					}
				}
				prev = p.Offset + p.Length
				counts = append(counts, p.Length)
			}
		}
		f.mu.Lock()
		f.seen = append(f.seen, counts)
		f.mu.Unlock()
		choice := map[string]any{"index": 0, "token_ids": []int{5, 2}, "finish_reason": "stop"}
		if req.Stream {
			f.streams.Add(1)
			w.Header().Set("Content-Type", "text/event-stream")
			ev, _ := json.Marshal(map[string]any{"request_id": "r", "choices": []any{choice}})
			fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", ev)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"request_id": "r", "choices": []any{choice}})
	case "/v1/completions":
		f.completions.Add(1)
		fail("completions got a call")
	default:
		http.NotFound(w, r)
	}
}

// vlRequest is a prompt of text and vision blocks for the named test
// images, each block expanded to the count agentrl's processor gives.
func vlRequest(t *testing.T, proc *vision.Processor, names ...string) server.GenerateRequest {
	t.Helper()
	var imgs []server.Image
	ids := []int32{151644, 872, 198}
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("..", "..", "vision", "testdata", "images", name))
		require.NoError(t, err)
		img, err := vision.Decode(data, vision.Limits{})
		require.NoError(t, err)
		f, err := proc.Process(img)
		require.NoError(t, err)
		imgs = append(imgs, server.Image{Data: data, Tokens: f.Tokens(), Grid: f.Grid})
		ids = append(ids, 100, visionStart)
		for range f.Tokens() {
			ids = append(ids, imagePad)
		}
		ids = append(ids, visionEnd)
	}
	ids = append(ids, 151645, 198)
	v := &server.Vision{Images: imgs, VisionStart: visionStart, Pad: imagePad, VisionEnd: visionEnd}
	req := server.GenerateRequest{RequestID: "r", PromptIDs: ids, Vision: v, Params: server.SamplingParams{MaxNewTokens: 4}}
	require.NoError(t, server.CheckRequest(req, 0))
	return req
}

// TestGenerateImages: the images go to /inference/v1/generate as the
// features vLLM's render step made for each, placed on the request's own
// blocks; the ids are the trajectory's, unchanged. Each image is rendered
// once, however many calls and turns carry it.
func TestGenerateImages(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	fake := &fakeVLVLLM{cfg: vision.Qwen2VLConfig()}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	c, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)

	names := []string{"rgb_640x480_checker.png", "webp_lossy_99x67.webp", "jpeg_420_333x201.jpg", "gif_anim_50x40.gif"}
	req := vlRequest(t, proc, names...)
	out, err := c.Generate(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, []int32{5, 2}, out.TokenIDs)
	want := []int{}
	for _, im := range req.Vision.Images {
		want = append(want, im.Tokens)
	}
	require.Equal(t, [][]int{want}, fake.seen)
	require.EqualValues(t, len(names), fake.renders.Load())

	// The streaming path sends the same features; a later turn with one
	// image more renders only that one.
	_, err = c.GenerateStream(context.Background(), req, func(server.Chunk) error { return nil })
	require.NoError(t, err)
	require.EqualValues(t, 1, fake.streams.Load())
	next := vlRequest(t, proc, append(names, "rgb_1920x1080_xor.png")...)
	_, err = c.Generate(context.Background(), next)
	require.NoError(t, err)
	require.EqualValues(t, len(names)+1, fake.renders.Load())
	require.Len(t, fake.seen, 3)
	require.Equal(t, fake.seen[0], fake.seen[1])
	require.Len(t, fake.seen[2], len(names)+1)

	// A group's calls, all at once, render a new image once.
	fresh, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)
	fake.renders.Store(0)
	one := vlRequest(t, proc, "jpeg_420_333x201.jpg")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = fresh.Generate(context.Background(), one) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.EqualValues(t, 1, fake.renders.Load())

	// Text requests carry no features and render nothing.
	_, err = c.Generate(context.Background(), server.GenerateRequest{RequestID: "t", PromptIDs: []int32{1, 2, 3}})
	require.NoError(t, err)
	require.EqualValues(t, 0, fake.completions.Load())
}

// TestGenerateImagesDisagree: when vLLM's processor gives an image another
// count than the request's block has (another max_pixels, say), the call
// fails naming both counts, and nothing is generated.
func TestGenerateImagesDisagree(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	other := vision.Qwen2VLConfig()
	other.MaxPixels = 28 * 28 * 64
	fake := &fakeVLVLLM{cfg: other}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	c, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)
	req := vlRequest(t, proc, "rgb_640x480_checker.png")
	_, err = c.Generate(context.Background(), req)
	require.ErrorIs(t, err, server.ErrBadRequest)
	require.ErrorContains(t, err, fmt.Sprintf("image 0: vLLM's processor gives it 54 placeholder tokens, the request's block has %d", req.Vision.Images[0].Tokens))
	require.Zero(t, fake.generates.Load())

	// A request whose block disagrees with its own image's count is
	// refused before anything is sent.
	bad := req
	bad.PromptIDs = append([]int32{}, req.PromptIDs[:5]...)
	bad.PromptIDs = append(bad.PromptIDs, req.PromptIDs[6:]...)
	fake.renders.Store(0)
	_, err = c.Generate(context.Background(), bad)
	require.ErrorContains(t, err, "image 0: its block has")
	require.Zero(t, fake.renders.Load())
}

// TestGenerateImagesMissingEndpoints: a build without the render step, or
// without /inference/v1/generate, gets no images with token ids, and the
// error says which endpoint is missing; the completions fallback is never
// used for images.
func TestGenerateImagesMissingEndpoints(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	req := vlRequest(t, proc, "rgb_640x480_checker.png")

	fake := &fakeVLVLLM{cfg: vision.Qwen2VLConfig(), noRender: true}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	c, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
	require.NoError(t, err)
	_, err = c.Generate(context.Background(), req)
	require.ErrorContains(t, err, "/v1/chat/completions/render, makes the image features /inference/v1/generate takes")
	require.Zero(t, fake.generates.Load())

	fake.noRender, fake.noGenerate = false, true
	for _, stream := range []bool{false, true} {
		c, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
		require.NoError(t, err)
		if stream {
			_, err = c.GenerateStream(context.Background(), req, func(server.Chunk) error { return nil })
		} else {
			_, err = c.Generate(context.Background(), req)
		}
		require.ErrorIs(t, err, server.ErrBadRequest)
		require.ErrorContains(t, err, "this vLLM server has no /inference/v1/generate")
		// Text still works, over /v1/completions.
		require.True(t, c.UsesCompletions())
		_, err = c.Generate(context.Background(), req)
		require.ErrorContains(t, err, "this vLLM server has no /inference/v1/generate")
	}
	require.Zero(t, fake.completions.Load())
}

// TestRenderAnswersChecked: a render answer that is not one image item
// lying on its block is a bad response naming what was wrong.
func TestRenderAnswersChecked(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	req := vlRequest(t, proc, "webp_lossy_99x67.webp")
	pads := req.Vision.Images[0].Tokens
	block := func() []int {
		ids := []int{1, visionStart}
		for range pads {
			ids = append(ids, imagePad)
		}
		return append(ids, visionEnd, 2)
	}
	item := func(offset, length int, kw any) map[string]any {
		return map[string]any{"mm_hashes": map[string]any{"image": []string{"h"}},
			"mm_placeholders": map[string]any{"image": []any{map[string]int{"offset": offset, "length": length}}},
			"kwargs_data":     map[string]any{"image": []any{kw}}}
	}
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"no features", map[string]any{"token_ids": block(), "features": nil}, "no features: the served model takes no images"},
		{"null kwargs", map[string]any{"token_ids": block(), "features": item(2, pads, nil)}, "kwargs_data.image[0] is empty"},
		{"range outside the block", map[string]any{"token_ids": block(), "features": item(0, pads, "k")}, "is not within the image block"},
		{"range too long", map[string]any{"token_ids": block(), "features": item(2, pads+2, "k")}, "is not within the image block"},
		{"no block", map[string]any{"token_ids": []int{1, 2}, "features": item(0, 1, "k")}, "token_ids hold no image block"},
		{"two items", map[string]any{"token_ids": block(), "features": map[string]any{"mm_hashes": map[string]any{"image": []string{"a", "b"}},
			"mm_placeholders": map[string]any{"image": []any{}}, "kwargs_data": map[string]any{"image": []any{}}}}, "features hold 2 hashes"},
		{"video too", map[string]any{"token_ids": block(), "features": map[string]any{"mm_hashes": map[string]any{"image": []string{"a"}, "video": []string{"b"}},
			"mm_placeholders": map[string]any{"image": []any{}}, "kwargs_data": map[string]any{"image": []any{}}}}, "features.mm_hashes has 2 modalities"},
		{"unclosed block", map[string]any{"token_ids": []int{visionStart, imagePad}, "features": item(1, 1, "k")}, "token_ids: vision block not closed"},
		{"not JSON", "[", "/v1/chat/completions/render"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if s, ok := c.body.(string); ok {
					_, _ = io.WriteString(w, s)
					return
				}
				_ = json.NewEncoder(w).Encode(c.body)
			}))
			defer ts.Close()
			cl, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1})
			require.NoError(t, err)
			_, err = cl.Generate(context.Background(), req)
			require.ErrorIs(t, err, server.ErrBadResponse)
			require.ErrorContains(t, err, c.want)
		})
	}
}

// TestImageCacheBounded: a cache too small for an image's item keeps none,
// so every call renders again; the answers are the same.
func TestImageCacheBounded(t *testing.T) {
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	fake := &fakeVLVLLM{cfg: vision.Qwen2VLConfig()}
	ts := httptest.NewServer(fake)
	defer ts.Close()
	req := vlRequest(t, proc, "rgb_640x480_checker.png", "webp_lossy_99x67.webp")
	for _, c := range []struct {
		bytes   int64
		renders int32
	}{{-1, 6}, {0, 2}} {
		fake.renders.Store(0)
		cl, err := vllm.New(vllm.Config{BaseURL: ts.URL, MaxAttempts: 1, ImageCacheBytes: c.bytes})
		require.NoError(t, err)
		for range 3 {
			_, err = cl.Generate(context.Background(), req)
			require.NoError(t, err)
		}
		require.Equal(t, c.renders, fake.renders.Load(), "ImageCacheBytes %d", c.bytes)
	}
}
