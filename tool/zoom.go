package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/vision"
)

// ClassImageZoomIn is verl's image zoom-in tool class, as DeepEyes'
// recipe configures it.
const ClassImageZoomIn = "verl.tools.image_zoom_in_tool.ImageZoomInTool"

// ZoomInPenalty is the reward of a zoom-in call that fails (verl: −0.05).
const ZoomInPenalty = -0.05

// ZoomInMinSide is the smallest side of a crop, in pixels (verl's
// MIN_DIMENSION).
const ZoomInMinSide = 28

// qwen_vl_utils' fetch_image defaults, which verl's tool applies to the
// image before cropping (vision_process.py: IMAGE_FACTOR, MIN_PIXELS,
// MAX_PIXELS).
const (
	fetchFactor    = 28
	fetchMinPixels = 4 * 28 * 28
	fetchMaxPixels = 16384 * 28 * 28
)

// DefaultZoomInSchema is the schema in verl's ImageZoomInTool docstring.
var DefaultZoomInSchema = chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
	Name: "image_zoom_in_tool",
	Description: "Zoom in on a specific region of an image by cropping it based on a bounding box (bbox) and an " +
		"optional object label.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"bbox_2d":{"type":"array","items":{"type":"number"},` +
		`"minItems":4,"maxItems":4,"description":"The bounding box of the region to zoom in, as [x1, y1, x2, y2], where (x1, y1) is ` +
		`the top-left corner and (x2, y2) is the bottom-right corner."},"label":{"type":"string",` +
		`"description":"The name or label of the object in the specified bounding box (optional)."}},"required":["bbox_2d"]}`),
}}

// ZoomIn is verl's ImageZoomInTool (verl/tools/image_zoom_in_tool.py,
// verl-project/verl f5e21df6393e89e48e09525aef401ea4a10b6c4a, the tool
// DeepEyes trains with): Create takes the sample's image (create kwarg
// "image": a data URL, a local file, or an http(s) URL when the config
// allows remote images) and resizes it as qwen_vl_utils' fetch_image does;
// Execute crops {"bbox_2d": [x1, y1, x2, y2], "label": …} from it and
// returns the crop as an image (PNG, lossless). A box is clamped to the
// image, refused when empty or of an aspect ratio over 100, and grown
// about its centre to a smallest side of ZoomInMinSide; a refused box, like
// a malformed bbox_2d, is answered with verl's error text and
// ZoomInPenalty.
type ZoomIn struct {
	schema  chat.ToolSchema
	limits  vision.Limits
	sources vision.Sources
	next    atomic.Int64
	inst    sync.Map // id → *vision.RGB
}

// InvalidArgumentsReward implements InvalidArgumentsRewarder: a bbox_2d
// the schema refuses (not four numbers) gets ZoomInPenalty, as verl's
// execute gives it.
func (z *ZoomIn) InvalidArgumentsReward() float64 { return ZoomInPenalty }

// ZoomInConfig is the tool's config block. verl's num_workers,
// rate_limit, timeout and enable_global_rate_limit are accepted (the
// Set's limits do their job here).
type ZoomInConfig struct {
	NumWorkers            int   `json:"num_workers"`
	EnableGlobalRateLimit *bool `json:"enable_global_rate_limit"`
	// AllowRemote lets the create kwarg "image" be an http(s) URL.
	AllowRemote bool `json:"allow_remote"`
	// MaxBytes and MaxPixels cap the image (vision's defaults when 0).
	MaxBytes  int64 `json:"max_bytes"`
	MaxPixels int64 `json:"max_pixels"`
}

// NewZoomIn returns the tool (a zero schema means DefaultZoomInSchema).
func NewZoomIn(schema chat.ToolSchema, c ZoomInConfig) *ZoomIn {
	if schema.Function.Name == "" {
		schema = DefaultZoomInSchema
	}
	return &ZoomIn{schema: schema, limits: vision.Limits{MaxBytes: c.MaxBytes, MaxPixels: c.MaxPixels},
		sources: vision.Sources{AllowRemote: c.AllowRemote}}
}

// Schema implements Tool.
func (z *ZoomIn) Schema() chat.ToolSchema { return z.schema }

// Create reads kwargs["image"] (a string source, or {"bytes": …} /
// {"image": …} as verl's images column holds it).
func (z *ZoomIn) Create(ctx context.Context, kwargs map[string]any) (string, error) {
	raw, ok := kwargs["image"]
	if !ok || raw == nil {
		return "", fmt.Errorf(`image_zoom_in: create kwargs have no "image"`)
	}
	var data []byte
	var err error
	switch v := raw.(type) {
	case string:
		data, err = vision.ReadSource(ctx, v, z.limits.MaxBytes, z.sources)
	case []byte:
		data = v
	case map[string]any:
		if b, ok := v["bytes"].([]byte); ok {
			data = b
		} else if s, ok := v["image"].(string); ok {
			data, err = vision.ReadSource(ctx, s, z.limits.MaxBytes, z.sources)
		} else {
			err = fmt.Errorf(`want {"bytes": …} or {"image": …}`)
		}
	default:
		err = fmt.Errorf("want a data URL, a file path or a URL, got %T", raw)
	}
	if err != nil {
		return "", fmt.Errorf("image_zoom_in: create kwarg \"image\": %w", err)
	}
	img, err := vision.Decode(data, z.limits)
	if err != nil {
		return "", fmt.Errorf("image_zoom_in: create kwarg \"image\": %w", err)
	}
	// fetch_image's own smart_resize and Pillow resize (BICUBIC is
	// Image.resize's default for RGB).
	h, w, err := vision.SmartResize(img.H, img.W, fetchFactor, fetchMinPixels, fetchMaxPixels)
	if err != nil {
		return "", fmt.Errorf("image_zoom_in: create kwarg \"image\" (%d×%d): %w", img.W, img.H, err)
	}
	if h != img.H || w != img.W {
		if img, err = vision.ResizeBicubic(img, w, h); err != nil {
			return "", fmt.Errorf("image_zoom_in: %w", err)
		}
	}
	id := "zoom-" + strconv.FormatInt(z.next.Add(1), 10)
	z.inst.Store(id, img)
	return id, nil
}

// Execute crops the box.
func (z *ZoomIn) Execute(_ context.Context, id string, args json.RawMessage) (Result, error) {
	v, ok := z.inst.Load(id)
	if !ok {
		return Result{}, fmt.Errorf("image_zoom_in: unknown instance %q", id)
	}
	img := v.(*vision.RGB)
	var a struct {
		BBox  []json.Number `json:"bbox_2d"`
		Label any           `json:"label"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	fail := func(text string) (Result, error) {
		return Result{Text: text, Reward: ZoomInPenalty, Metrics: map[string]float64{"success": 0}}, nil
	}
	if err := dec.Decode(&a); err != nil || len(a.BBox) != 4 {
		return fail("Error: bbox_2d parameter is missing or not a list of 4 numbers.")
	}
	var box [4]float64
	for i, n := range a.BBox {
		f, err := n.Float64()
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return fail("Error: bbox_2d parameter is missing or not a list of 4 numbers.")
		}
		box[i] = f
	}
	shown := pyNumberList(a.BBox)
	crop, ok := zoomBox(box, img.W, img.H)
	if !ok {
		return fail(fmt.Sprintf("Error: The specified bounding box %s is invalid or results in a crop smaller than "+
			"the minimum size of %dx%d.", shown, ZoomInMinSide, ZoomInMinSide))
	}
	out := cropRGB(img, crop)
	var buf bytes.Buffer
	if err := png.Encode(&buf, out); err != nil {
		return Result{}, fmt.Errorf("image_zoom_in: encoding the crop: %w", err)
	}
	text := fmt.Sprintf("Zoomed in on the image to the region %s.", shown)
	if label, _ := a.Label.(string); label != "" {
		text = fmt.Sprintf("Zoomed in on the image to the region %s with label %s.", shown, label)
	}
	return Result{Text: text, Images: []chat.Image{{Data: buf.Bytes()}},
		Metrics: map[string]float64{"success": 1}}, nil
}

// Release implements Tool.
func (z *ZoomIn) Release(_ context.Context, id string) error {
	z.inst.Delete(id)
	return nil
}

// validBox is verl's _validate_bbox.
func validBox(l, t, r, b float64) bool {
	if !(l < r && t < b) {
		return false
	}
	h, w := b-t, r-l
	if min(h, w) == 0 {
		return false
	}
	return max(h, w)/min(h, w) <= 100
}

// zoomBox is verl's _maybe_resize_bbox: the box to crop, or false.
func zoomBox(bb [4]float64, imgW, imgH int) ([4]float64, bool) {
	W, H := float64(imgW), float64(imgH)
	l, t := max(0, bb[0]), max(0, bb[1])
	r, b := min(W, bb[2]), min(H, bb[3])
	if !validBox(l, t, r, b) {
		return bb, false
	}
	cur := [4]float64{l, t, r, b}
	h, w := b-t, r-l
	const m = ZoomInMinSide
	if h < m || w < m {
		cx, cy := (l+r)/2, (t+b)/2
		ratio := m / min(h, w)
		tw, th := w*ratio, h*ratio
		if tw > W {
			th *= W / tw
			tw = W
		}
		if th > H {
			tw *= H / th
			th = H
		}
		nl, nt := cx-tw/2, cy-th/2
		if nl < 0 {
			nl = 0
		}
		if nt < 0 {
			nt = 0
		}
		if nl+tw > W {
			nl = W - tw
		}
		if nt+th > H {
			nt = H - th
		}
		cur = [4]float64{math.Floor(nl), math.Floor(nt), math.Ceil(nl + tw), math.Ceil(nt + th)}
	}
	if !validBox(cur[0], cur[1], cur[2], cur[3]) {
		return bb, false
	}
	if math.Floor(cur[3])-math.Floor(cur[1]) < m || math.Floor(cur[2])-math.Floor(cur[0]) < m {
		return bb, false
	}
	return cur, true
}

// cropRGB is Pillow's Image.crop(box): the corners rounded as Python's
// round does (half to even), pixels outside the image black.
func cropRGB(src *vision.RGB, box [4]float64) *image.NRGBA {
	x0, y0 := int(math.RoundToEven(box[0])), int(math.RoundToEven(box[1]))
	x1, y1 := int(math.RoundToEven(box[2])), int(math.RoundToEven(box[3]))
	out := image.NewNRGBA(image.Rect(0, 0, x1-x0, y1-y0))
	for y := y0; y < y1; y++ {
		for x := x0; x < x1; x++ {
			o := out.PixOffset(x-x0, y-y0)
			out.Pix[o+3] = 255
			if x < 0 || y < 0 || x >= src.W || y >= src.H {
				continue
			}
			i := (y*src.W + x) * 3
			copy(out.Pix[o:o+3], src.Pix[i:i+3])
		}
	}
	return out
}

// pyNumberList writes a list of JSON numbers as Python prints the list
// json.loads made of them: integers as written, floats as repr.
func pyNumberList(ns []json.Number) string {
	parts := make([]string, len(ns))
	for i, n := range ns {
		s := n.String()
		if strings.ContainsAny(s, ".eE") {
			f, _ := n.Float64()
			s = pyFloat(f)
		}
		parts[i] = s
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
