package vllm

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/internal/httpclient"
	"github.com/agentrl/agentrl/server/internal/wire"
)

// Images reach vLLM the way its own disaggregated serving sends them
// (vllm-project/vllm 0001948bc76939369ca855c90b36d81256477e85,
// vllm/entrypoints/serve/): /inference/v1/generate takes the prompt's ids
// with "features" (MultiModalFeatures, disagg/protocol.py): per modality
// the items' hashes, their placeholder ranges in token_ids, and
// kwargs_data, each item's processed tensors (pixel_values,
// image_grid_thw) as vLLM's msgpack MultiModalKwargsItem in base64
// (disagg/mm_serde.py). serve_tokens (disagg/serving.py) hands them to
// the engine as they are, with token_ids unchanged: the ids stay the
// trajectory's, expanded placeholder runs included.
//
// Only vLLM's processor makes kwargs_data, so the client asks vLLM's
// render step for it: /v1/chat/completions/render (render/serving.py,
// render_chat_request) run on a one-message chat holding the image alone,
// whose features carry that image's item. Its placeholder range is placed
// on the request's own block of the image, at the same position relative
// to the block's pads, and its pad count must equal the request's: a
// disagreement between agentrl's processor and vLLM's is an error, never a
// sequence other than the trajectory's. Rendered items are cached by the
// image's digest (Config.ImageCacheBytes), so the turns of a multi-turn
// rollout and the n rollouts of a group render each image once.
//
// Builds without /inference/v1/generate (the /v1/completions fallback)
// take no images with token ids; their chat endpoint re-renders the
// whole history from messages, which the trajectory contract forbids
// (the ids sent must be the ids trained on; vllm-project/vllm#54937, open,
// asks for prompt_token_ids on chat for this reason). Such a request is
// refused, naming the endpoint that is missing.

// imageModality is vLLM's modality key for images.
const imageModality = "image"

// defaultImageCacheBytes bounds the rendered items kept: a 1920×1080
// image's kwargs_data is about 14 MB of base64 (2,691 patches × 1,176
// float32 values), so the default keeps a few dozen.
const defaultImageCacheBytes = 512 << 20

// mmFeatures is MultiModalFeatures as /inference/v1/generate takes it and
// the render step answers it.
type mmFeatures struct {
	MMHashes       map[string][]string      `json:"mm_hashes"`
	MMPlaceholders map[string][]placeholder `json:"mm_placeholders"`
	KwargsData     map[string][]*string     `json:"kwargs_data"`
}

// placeholder is PlaceholderRangeInfo: where an item's tokens are in
// token_ids.
type placeholder struct {
	Offset int `json:"offset"`
	Length int `json:"length"`
}

// renderedImage is one image's item as the render step made it.
type renderedImage struct {
	hash   string
	kwargs string
	// pads is the pad count of the image's block in the rendered ids;
	// rel is the placeholder's offset minus the block's first pad, length
	// its length: the range as vLLM's processor places it on a block.
	pads, rel, length int
}

// imageCache keeps rendered items by image digest, bounded by the bytes
// of their kwargs_data, and renders an image once when calls ask for it
// at the same time.
type imageCache struct {
	mu      sync.Mutex
	items   *simplelru.LRU[[32]byte, *renderedImage]
	bytes   int64
	max     int64
	renders singleflight.Group
}

func newImageCache(maxBytes int64) *imageCache {
	c := &imageCache{max: maxBytes}
	// The count bound is never the one reached: bytes evict first.
	c.items, _ = simplelru.NewLRU[[32]byte, *renderedImage](1<<20, func(_ [32]byte, r *renderedImage) {
		c.bytes -= int64(len(r.kwargs))
	})
	return c
}

func (c *imageCache) get(key [32]byte) (*renderedImage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items.Get(key)
}

func (c *imageCache) add(key [32]byte, r *renderedImage) {
	n := int64(len(r.kwargs))
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.items.Add(key, r)
	c.bytes += n
	for c.bytes > c.max {
		c.items.RemoveOldest()
	}
}

// errNoImagesOnCompletions is the refusal on builds without
// /inference/v1/generate.
func errNoImagesOnCompletions(n int) error {
	return fmt.Errorf("%w: Vision: %d images, but this vLLM server has no /inference/v1/generate, the only vLLM endpoint that takes "+
		"images with token ids (its chat endpoint would re-render the history from messages); use a vLLM build that serves it, or SGLang",
		server.ErrBadRequest, n)
}

// features is the request's images as /inference/v1/generate's features;
// nil for a request without images.
func (c *Client) features(ctx context.Context, req server.GenerateRequest) (*mmFeatures, error) {
	v := req.Vision
	if v == nil {
		return nil, nil
	}
	if c.completions.Load() {
		return nil, c.t.Errorf("generate", 0, false, errNoImagesOnCompletions(len(v.Images)))
	}
	starts, err := v.ImageStarts(req.PromptIDs)
	if err != nil {
		return nil, c.t.Errorf("generate", 0, false, fmt.Errorf("%w: Vision: PromptIDs: %v", server.ErrBadRequest, err))
	}
	f := &mmFeatures{MMHashes: map[string][]string{}, MMPlaceholders: map[string][]placeholder{}, KwargsData: map[string][]*string{}}
	for i, im := range v.Images {
		if len(im.Data) == 0 {
			return nil, c.t.Errorf("generate", 0, false, fmt.Errorf("%w: Vision: image %d has no data", server.ErrBadRequest, i))
		}
		r, err := c.renderImage(ctx, v, im.Data)
		if err != nil {
			return nil, fmt.Errorf("image %d: %w", i, err)
		}
		if r.pads != im.Tokens {
			return nil, c.t.Errorf("render", 0, false, fmt.Errorf("%w: image %d: vLLM's processor gives it %d placeholder tokens, the request's block has %d "+
				"(agentrl's processor and the server's disagree: compare their preprocessor_config.json, min_pixels and max_pixels above all)",
				server.ErrBadRequest, i, r.pads, im.Tokens))
		}
		kw := r.kwargs
		f.MMHashes[imageModality] = append(f.MMHashes[imageModality], r.hash)
		f.MMPlaceholders[imageModality] = append(f.MMPlaceholders[imageModality], placeholder{Offset: starts[i] + r.rel, Length: r.length})
		f.KwargsData[imageModality] = append(f.KwargsData[imageModality], &kw)
	}
	return f, nil
}

// renderImage is the image's item, from the cache or rendered once for
// every call that asks at the same time. A render that ends because the
// caller that started it went away is retried for a caller still waiting.
func (c *Client) renderImage(ctx context.Context, v *server.Vision, data []byte) (*renderedImage, error) {
	key := sha256.Sum256(data)
	if r, ok := c.images.get(key); ok {
		return r, nil
	}
	for {
		ch := c.images.renders.DoChan(string(key[:]), func() (any, error) {
			r, err := c.render(ctx, v, data)
			if err == nil {
				c.images.add(key, r)
			}
			return r, err
		})
		select {
		case <-ctx.Done():
			return nil, c.t.Errorf("render", 0, false, ctx.Err())
		case res := <-ch:
			if res.Err != nil && (errors.Is(res.Err, context.Canceled) || errors.Is(res.Err, context.DeadlineExceeded)) && ctx.Err() == nil {
				continue // the render was another caller's, cancelled with it
			}
			if res.Err != nil {
				return nil, res.Err
			}
			return res.Val.(*renderedImage), nil
		}
	}
}

// renderRequest is the one-message chat the render step processes.
type renderRequest struct {
	Model    string          `json:"model,omitempty"`
	Messages []renderMessage `json:"messages"`
	// MaxTokens keeps the render's max_tokens check from depending on
	// the server's context length; nothing is generated.
	MaxTokens int `json:"max_tokens"`
}

type renderMessage struct {
	Role    string       `json:"role"`
	Content []renderPart `json:"content"`
}

type renderPart struct {
	Type     string `json:"type"`
	ImageURL struct {
		URL string `json:"url"`
	} `json:"image_url"`
}

// render asks /v1/chat/completions/render for the image's item.
func (c *Client) render(ctx context.Context, v *server.Vision, data []byte) (*renderedImage, error) {
	part := renderPart{Type: "image_url"}
	part.ImageURL.URL = string(wire.AppendDataURL(make([]byte, 0, 32+len(data)*4/3), data))
	body, err := json.Marshal(renderRequest{Model: c.cfg.Model, MaxTokens: 1,
		Messages: []renderMessage{{Role: "user", Content: []renderPart{part}}}})
	if err != nil {
		return nil, c.t.Errorf("render", 0, false, err)
	}
	resp, err := c.t.RoundTrip(ctx, "render", http.MethodPost, "/v1/chat/completions/render", body, nil)
	var se *server.Error
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return nil, fmt.Errorf("%w (vLLM's render step, /v1/chat/completions/render, makes the image features /inference/v1/generate takes: "+
			"use a vLLM build that serves it, or SGLang)", err)
	}
	if err != nil {
		return nil, err
	}
	r, err := parseRender(v, resp)
	if err != nil {
		return nil, c.t.Errorf("render", http.StatusOK, false, httpclient.BadResponse("/v1/chat/completions/render: %v", err))
	}
	return r, nil
}

// parseRender reads the render step's answer for a chat of one image:
// exactly one image item, with its hash, its kwargs_data and a
// placeholder range inside the image's vision block of token_ids.
func parseRender(v *server.Vision, data []byte) (*renderedImage, error) {
	var r struct {
		TokenIDs []int32     `json:"token_ids"`
		Features *mmFeatures `json:"features"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	f := r.Features
	if f == nil {
		return nil, errors.New("no features: the served model takes no images")
	}
	for name, n := range map[string]int{"mm_hashes": len(f.MMHashes), "mm_placeholders": len(f.MMPlaceholders), "kwargs_data": len(f.KwargsData)} {
		if n != 1 {
			return nil, fmt.Errorf("features.%s has %d modalities, want only %q", name, n, imageModality)
		}
	}
	hashes, phs, kws := f.MMHashes[imageModality], f.MMPlaceholders[imageModality], f.KwargsData[imageModality]
	if len(hashes) != 1 || len(phs) != 1 || len(kws) != 1 {
		return nil, fmt.Errorf("features hold %d hashes, %d placeholders and %d kwargs_data items for %q, want one each", len(hashes), len(phs), len(kws), imageModality)
	}
	if kws[0] == nil || *kws[0] == "" {
		return nil, errors.New("features.kwargs_data.image[0] is empty: the render step sent no tensors")
	}
	runs, err := v.PadRuns(r.TokenIDs)
	if err != nil {
		return nil, fmt.Errorf("token_ids: %v", err)
	}
	pads := 0
	for _, n := range runs {
		if n > 0 {
			if pads > 0 {
				return nil, errors.New("token_ids hold more than one image block")
			}
			pads = n
		}
	}
	if pads == 0 {
		return nil, errors.New("token_ids hold no image block")
	}
	first := slices.Index(r.TokenIDs, v.Pad)
	ph := phs[0]
	// The range may start at the block's vision_start and end at its
	// vision_end, never outside the block.
	if ph.Length <= 0 || ph.Offset < first-1 || ph.Offset+ph.Length > first+pads+1 {
		return nil, fmt.Errorf("placeholder {offset %d, length %d} is not within the image block at %d..%d", ph.Offset, ph.Length, first-1, first+pads)
	}
	return &renderedImage{hash: hashes[0], kwargs: *kws[0], pads: pads, rel: ph.Offset - first, length: ph.Length}, nil
}
