package tool

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/vision"
)

// TestZoomBoxMatchesVerl runs the box logic on the cases gen_zoom.py ran
// through verl's own _maybe_resize_bbox (extracted from verl's source).
func TestZoomBoxMatchesVerl(t *testing.T) {
	data, err := os.ReadFile("testdata/zoom_golden.json")
	require.NoError(t, err)
	var g struct {
		Cases []struct {
			W, H     int
			BBox     []json.Number `json:"bbox"`
			TextBBox string        `json:"text_bbox"`
			Result   *[4]float64   `json:"result"`
		} `json:"cases"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&g))
	require.Len(t, g.Cases, 100)
	refused := 0
	for _, c := range g.Cases {
		var b [4]float64
		for i, n := range c.BBox {
			b[i], err = n.Float64()
			require.NoError(t, err)
		}
		got, ok := zoomBox(b, c.W, c.H)
		require.Equal(t, c.Result != nil, ok, "%dx%d %v", c.W, c.H, c.BBox)
		if ok {
			require.Equal(t, *c.Result, got, "%dx%d %v", c.W, c.H, c.BBox)
		} else {
			refused++
		}
		require.Equal(t, c.TextBBox, pyNumberList(c.BBox))
	}
	require.Equal(t, 50, refused)
}

func TestZoomInExecute(t *testing.T) {
	src, err := os.ReadFile("../vision/testdata/images/rgb_448x448_smooth.png")
	require.NoError(t, err)
	orig, err := vision.Decode(src, vision.Limits{})
	require.NoError(t, err)
	set, err := LoadConfig(context.Background(), "testdata/image_zoom_in_tool_config.yaml")
	require.NoError(t, err)
	require.Equal(t, []string{"image_zoom_in_tool"}, set.Names())
	z := NewZoomIn(chat.ToolSchema{}, ZoomInConfig{})
	require.Equal(t, "image_zoom_in_tool", z.Schema().Function.Name)
	ctx := context.Background()
	id, err := z.Create(ctx, map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(src)})
	require.NoError(t, err)
	defer z.Release(ctx, id)

	res, err := z.Execute(ctx, id, json.RawMessage(`{"bbox_2d": [10, 20.5, 100, 70], "label": "cat"}`))
	require.NoError(t, err)
	require.Equal(t, "Zoomed in on the image to the region [10, 20.5, 100, 70] with label cat.", res.Text)
	require.Zero(t, res.Reward)
	require.Len(t, res.Images, 1)
	crop, err := vision.Decode(res.Images[0].Data, vision.Limits{})
	require.NoError(t, err)
	// Pillow's crop rounds 20.5 to 20 (half to even).
	require.Equal(t, [2]int{90, 50}, [2]int{crop.W, crop.H})
	for y := range crop.H {
		for x := range crop.W {
			o, c := ((y+20)*orig.W+x+10)*3, (y*crop.W+x)*3
			require.Equal(t, orig.Pix[o:o+3], crop.Pix[c:c+3], "pixel %d,%d", x, y)
		}
	}
	// A 5×10 box grows about its centre to a smallest side of 28: 28×56 at 188.5, cropped at the integer corners.
	res, err = z.Execute(ctx, id, json.RawMessage(`{"bbox_2d": [200, 200, 205, 210]}`))
	require.NoError(t, err)
	crop, err = vision.Decode(res.Images[0].Data, vision.Limits{})
	require.NoError(t, err)
	require.Equal(t, [2]int{29, 56}, [2]int{crop.W, crop.H}) // floor(188.5), ceil(216.5)

	for args, want := range map[string]string{
		`{"bbox_2d": [1, 2, 3]}`:          "Error: bbox_2d parameter is missing or not a list of 4 numbers.",
		`{"label": "x"}`:                  "Error: bbox_2d parameter is missing or not a list of 4 numbers.",
		`{"bbox_2d": [300, 10, 100, 50]}`: "Error: The specified bounding box [300, 10, 100, 50] is invalid or results in a crop smaller than the minimum size of 28x28.",
	} {
		res, err := z.Execute(ctx, id, json.RawMessage(args))
		require.NoError(t, err)
		require.Equal(t, want, res.Text)
		require.Equal(t, ZoomInPenalty, res.Reward)
		require.Empty(t, res.Images)
	}

	_, err = z.Create(ctx, map[string]any{"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(src[:100])})
	require.ErrorContains(t, err, `image_zoom_in: create kwarg "image"`)
	_, err = z.Create(ctx, map[string]any{"image": "https://example.com/a.png"})
	require.ErrorIs(t, err, vision.ErrSource)
	_, err = z.Create(ctx, map[string]any{})
	require.ErrorContains(t, err, `no "image"`)
}

// FuzzZoomInExecute: any arguments the model writes get an answer (a crop
// within the image, or verl's error text with the penalty), never a panic.
func FuzzZoomInExecute(f *testing.F) {
	for _, s := range []string{`{"bbox_2d": [10, 20.5, 100, 70], "label": "cat"}`, `{"bbox_2d": [1, 2, 3]}`,
		`{"bbox_2d": [-1e308, 0, 1e308, 5]}`, `{"bbox_2d": [0, 0, 1e-300, 28]}`, `{"bbox_2d": ["a", 1, 2, 3]}`, `[]`, `{"bbox_2d": [200, 200, 205, 210], "label": 7}`} {
		f.Add(s)
	}
	src, err := os.ReadFile("../vision/testdata/images/rgb_100x30_xor.png")
	require.NoError(f, err)
	z := NewZoomIn(chat.ToolSchema{}, ZoomInConfig{})
	ctx := context.Background()
	id, err := z.Create(ctx, map[string]any{"image": src})
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, args string) {
		res, err := z.Execute(ctx, id, json.RawMessage(args))
		require.NoError(t, err)
		if len(res.Images) == 0 {
			require.Equal(t, ZoomInPenalty, res.Reward)
			require.True(t, strings.HasPrefix(res.Text, "Error: "), res.Text)
			return
		}
		crop, err := vision.Decode(res.Images[0].Data, vision.Limits{})
		require.NoError(t, err)
		require.GreaterOrEqual(t, min(crop.W, crop.H), ZoomInMinSide)
		require.LessOrEqual(t, crop.W, 112) // the image after fetch_image's resize: 112×28
		require.LessOrEqual(t, crop.H, 28)
	})
}

// TestZoomInRefusedArgumentsGetVerlsPenalty: a bbox_2d the schema refuses
// (three numbers, a string) never reaches Execute, and the call still gets
// ZoomInPenalty, as verl's execute gives a malformed box; a tool without
// InvalidArgumentsRewarder gets 0 for refused arguments.
func TestZoomInRefusedArgumentsGetVerlsPenalty(t *testing.T) {
	src, err := os.ReadFile("../vision/testdata/images/rgb_448x448_smooth.png")
	require.NoError(t, err)
	set, err := NewSet(NewZoomIn(chat.ToolSchema{}, ZoomInConfig{}), NewGSM8K(chat.ToolSchema{}))
	require.NoError(t, err)
	ss := set.Session(map[string]map[string]any{
		"image_zoom_in_tool": {"image": "data:image/png;base64," + base64.StdEncoding.EncodeToString(src)},
		"calc_gsm8k_reward":  {"ground_truth": "4"}})
	ctx := context.Background()
	defer ss.Close(ctx)
	for _, args := range []string{`{"bbox_2d": [1, 2, 3]}`, `{"bbox_2d": "0,0,10,10"}`, `{}`} {
		r := ss.Call(ctx, call("image_zoom_in_tool", args))
		require.ErrorIs(t, r.Err, ErrInvalidArguments, args)
		require.Equal(t, ZoomInPenalty, r.Reward, args)
		require.Empty(t, r.Images)
	}
	r := ss.Call(ctx, call("calc_gsm8k_reward", `{"answer": 4}`))
	require.ErrorIs(t, r.Err, ErrInvalidArguments)
	require.Zero(t, r.Reward)
}
