package agentloop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/server/servertest"
	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/tokenizertest"
	"github.com/agentrl/agentrl/tool"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/vision"
)

var vlOnce = sync.OnceValues(func() (*tokenizer.Tokenizer, error) { return tokenizertest.Qwen3(tokenizertest.Qwen2VLTemplate) })

// qwenVL is the Qwen3 tokenizer (whose vocabulary has the Qwen-VL vision
// tokens) with Qwen2-VL's chat template, and the Vision of Qwen2.5-VL.
func qwenVL(t testing.TB) (*tokenizer.Tokenizer, *Vision) {
	t.Helper()
	tok, err := vlOnce()
	require.NoError(t, err)
	proc, err := vision.NewProcessor(vision.Qwen2VLConfig())
	require.NoError(t, err)
	return tok, &Vision{Processor: proc, Placeholders: vision.QwenImagePlaceholders, Rope: vision.QwenRopeConfig(vision.Qwen25VL)}
}

func testImage(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "vision", "testdata", "images", name))
	require.NoError(t, err)
	return data
}

func dataURL(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

func toInts(ids []int32) []int {
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// TestImagePromptExpanded: the prompt's image block is expanded to the
// processor's token count on the rendered ids, the engine gets the image
// with its count, and the trajectory carries pixel_values, the grid and
// M-RoPE position ids that get_rope_index gives its sequence.
func TestImagePromptExpanded(t *testing.T) {
	tok, vis := qwenVL(t)
	png := testImage(t, "rgb_640x480_checker.png")
	rgb, err := vision.Decode(png, vision.Limits{})
	require.NoError(t, err)
	want, err := vis.Processor.Process(rgb)
	require.NoError(t, err)

	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "A checkerboard.")...)})}
	loop, err := NewSingleTurn(&Env{Server: rec, Tokenizer: tok, Vision: vis}, Config{})
	require.NoError(t, err)
	var msg chat.Message
	require.NoError(t, json.Unmarshal([]byte(`{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "`+dataURL(png)+`"}},
		{"type": "text", "text": "What is this?"}]}`), &msg))
	tr, err := loop.Run(context.Background(), Sample{ID: "s", Messages: []chat.Message{msg}}, server.SamplingParams{})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)

	// The ids are the collapsed rendering with the block expanded, and
	// nothing else changed.
	collapsed, err := tok.EncodeChat(tokenizer.ChatContext{Messages: []chat.Message{msg}, AddGenerationPrompt: true})
	require.NoError(t, err)
	exp, err := vision.ExpandPlaceholders(toInts(collapsed), vis.Placeholders, []int{want.Tokens()})
	require.NoError(t, err)
	require.Equal(t, exp, toInts(tr.PromptIDs))
	counts, err := vision.CountPlaceholders(toInts(tr.PromptIDs), vis.Placeholders)
	require.NoError(t, err)
	require.Equal(t, []int{want.Tokens()}, counts)
	require.Equal(t, 391, want.Tokens()) // 640×480 → 644×476: a 34×46 grid, merged 2×2

	reqs, _ := rec.byID("s")
	require.Len(t, reqs, 1)
	require.NotNil(t, reqs[0].Vision)
	require.Equal(t, []server.Image{{Data: png, Tokens: want.Tokens(), Grid: want.Grid}}, reqs[0].Vision.Images)

	mm := tr.MultiModal
	require.NotNil(t, mm)
	require.Equal(t, [][3]int64{{int64(want.Grid[0]), int64(want.Grid[1]), int64(want.Grid[2])}}, mm.ImageGridTHW)
	require.Equal(t, want.Pixels, mm.PixelValues)
	require.Equal(t, want.RowLen, mm.RowLen)
	require.Equal(t, []int64{int64(want.Grid[1] * want.Grid[2])}, mm.ImagesSeqlens())
	seq := append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...)
	pos, err := vis.Rope.VerlPositionIDs(toInts(seq), nil, vision.Vision{Images: [][3]int{want.Grid}})
	require.NoError(t, err)
	require.Equal(t, pos, mm.PositionIDs)
	// The text after the image continues from the block's largest
	// position + 1, not from its length: M-RoPE at work.
	require.Less(t, pos[1][len(seq)-1], int64(len(seq)-1))
}

// TestImageErrorsNameSampleAndImage: a corrupt image, a refused source, a
// too-large image and images without a processor each fail the sample
// with an error naming it and the image.
func TestImageErrorsNameSampleAndImage(t *testing.T) {
	tok, vis := qwenVL(t)
	png := testImage(t, "rgb_56x56_checker.png")
	big := testImage(t, "rgb_1920x1080_xor.png")
	srv := servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "x")...)})
	small := *vis
	small.Limits = vision.Limits{MaxPixels: 1 << 20}
	for _, c := range []struct {
		name string
		vis  *Vision
		src  string
		want []string
	}{
		{"corrupt", vis, dataURL(png[:len(png)/2]), []string{`sample 7 (id "s7")`, "image 1 (message 0, part 2)"}},
		{"remote refused", vis, "https://example.com/cat.png", []string{`sample 7 (id "s7")`, "image 1", "remote"}},
		{"over the pixel cap", &small, dataURL(big), []string{"image 1", "too large"}},
		{"no processor", nil, dataURL(png), []string{"image 0", "no image processor"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			loop, err := NewSingleTurn(&Env{Server: srv, Tokenizer: tok, Vision: c.vis}, Config{})
			require.NoError(t, err)
			msg := chat.Message{Role: chat.RoleUser, Parts: []chat.ContentPart{
				chat.ImagePart(chat.Image{Data: png}), {Type: "text", Text: "and"}, chat.ImagePart(chat.Image{URL: c.src})}}
			_, err = loop.Run(context.Background(), Sample{ID: "s7", Index: 7, Messages: []chat.Message{msg}}, server.SamplingParams{})
			require.ErrorIs(t, err, ErrImage)
			for _, w := range c.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

// TestToolImagesAppended: ToolAgent with DeepEyes' zoom-in tool. The crop
// comes back as an image before the text, as verl's ToolAgentLoop puts
// it; its block is expanded in the observation's delta alone (the history
// is kept token for token), the next turn's request carries both images,
// and the trajectory both grids and position ids over the whole sequence.
func TestToolImagesAppended(t *testing.T) {
	tok, vis := qwenVL(t)
	png := testImage(t, "rgb_448x448_smooth.png")
	set, err := tool.NewSet(tool.NewZoomIn(chat.ToolSchema{}, tool.ZoomInConfig{}))
	require.NoError(t, err)
	vis.KeepImages = true
	call := "<tool_call>\n{\"name\": \"image_zoom_in_tool\", \"arguments\": {\"bbox_2d\": [0, 0, 112, 56], \"label\": \"corner\"}}\n</tool_call>"
	rec := &recorder{LLMServer: servertest.New(servertest.Config{Rule: servertest.Scripts(map[string][][]int32{
		"z": {turn(t, tok, call), turn(t, tok, "It is smooth.")}}, nil)})}
	loop, err := NewToolAgent(&Env{Server: rec, Tokenizer: tok, Tools: set, Vision: vis}, Config{Format: "hermes"})
	require.NoError(t, err)
	s := Sample{ID: "z", Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.ContentPart{
		chat.ImagePart(chat.Image{Data: png}), {Type: "text", Text: "Zoom in on the corner."}}}},
		ToolsKwargs: map[string]map[string]any{"image_zoom_in_tool": {"image": dataURL(png)}}}
	tr, err := loop.Run(context.Background(), s, server.SamplingParams{Logprobs: true})
	require.NoError(t, err)
	require.Equal(t, trajectory.StopCompleted, tr.StopReason)
	reqs, outs := rec.byID("z")
	require.Len(t, reqs, 2)
	require.NoError(t, tr.Validate())

	// Turn 2's prompt is turn 1's prompt and output, unchanged, then the
	// observation.
	first := append(append([]int32{}, reqs[0].PromptIDs...), outs[0].TokenIDs...)
	require.Equal(t, first, reqs[1].PromptIDs[:len(first)])
	obs, err := tok.Decode(reqs[1].PromptIDs[len(first):], false)
	require.NoError(t, err)
	// 448×448: 32×32 patches, 256 tokens; the 112×56 crop: 4×8, 8 tokens.
	require.Equal(t, "\n<|im_start|>tool\n<|vision_start|>"+strings.Repeat("<|image_pad|>", 8)+
		"<|vision_end|>Zoomed in on the image to the region [0, 0, 112, 56] with label corner.<|im_end|>\n<|im_start|>assistant\n", obs)
	require.Len(t, reqs[1].Vision.Images, 2)
	require.Equal(t, []int{256, 8}, []int{reqs[1].Vision.Images[0].Tokens, reqs[1].Vision.Images[1].Tokens})
	require.Len(t, reqs[0].Vision.Images, 1)
	require.Equal(t, []float64{0}, tr.ToolRewards)
	require.Equal(t, [][3]int64{{1, 32, 32}, {1, 4, 8}}, tr.MultiModal.ImageGridTHW)
	seq := append(append([]int32{}, tr.PromptIDs...), tr.ResponseIDs...)
	pos, err := vis.Rope.VerlPositionIDs(toInts(seq), nil, vision.Vision{Images: [][3]int{{1, 32, 32}, {1, 4, 8}}})
	require.NoError(t, err)
	require.Equal(t, pos, tr.MultiModal.PositionIDs)
	// KeepImages: the row's image and the crop, encoded.
	require.Len(t, tr.MultiModal.Images, 2)
	require.Equal(t, png, tr.MultiModal.Images[0])
	crop, err := vision.Decode(tr.MultiModal.Images[1], vision.Limits{})
	require.NoError(t, err)
	require.Equal(t, [2]int{112, 56}, [2]int{crop.W, crop.H})
	// The observation's image tokens have mask 0.
	for i, id := range tr.ResponseIDs {
		if id == int32(vis.Placeholders.Pad) {
			require.Zero(t, tr.ResponseMask[i])
		}
	}
}

// TestFetchImage: with Vision.FetchImage a prompt image is first resized
// as qwen_vl_utils' fetch_image resizes it in verl's dataset (1920×1080 →
// 1932×1092, multiples of 28), then processed; the grid is the same as
// processing the original, the pixels are those of the two resizes.
func TestFetchImage(t *testing.T) {
	tok, vis := qwenVL(t)
	vis.FetchImage = true
	png := testImage(t, "rgb_1920x1080_xor.png")
	orig, err := vision.Decode(png, vision.Limits{})
	require.NoError(t, err)
	fetched, err := vision.ResizeBicubic(orig, 1932, 1092)
	require.NoError(t, err)
	want, err := vis.Processor.Process(fetched)
	require.NoError(t, err)
	direct, err := vis.Processor.Process(orig)
	require.NoError(t, err)
	require.Equal(t, direct.Grid, want.Grid)
	require.NotEqual(t, direct.Pixels, want.Pixels)

	loop, err := NewSingleTurn(&Env{Server: servertest.New(servertest.Config{Rule: servertest.Constant(turn(t, tok, "ok")...)}),
		Tokenizer: tok, Vision: vis}, Config{})
	require.NoError(t, err)
	tr, err := loop.Run(context.Background(), Sample{ID: "f", Messages: []chat.Message{{Role: chat.RoleUser,
		Parts: []chat.ContentPart{chat.ImagePart(chat.Image{Data: png})}}}}, server.SamplingParams{})
	require.NoError(t, err)
	require.Equal(t, want.Pixels, tr.MultiModal.PixelValues)
}

// Vision.MultiModal (capture's rebuild) processes the images as they come
// and checks the sequence's blocks as an engine checks a request's: a
// block per image, each of its image's count.
func TestVisionMultiModalChecksBlocks(t *testing.T) {
	_, vis := qwenVL(t)
	png := testImage(t, "rgb_56x56_checker.png") // 56×56: a 4×4 grid, 4 tokens
	p := vision.QwenImagePlaceholders
	block := func(pads int) []int32 {
		ids := []int32{int32(p.VisionStart)}
		for range pads {
			ids = append(ids, int32(p.Pad))
		}
		return append(ids, int32(p.VisionEnd))
	}
	seq := append(append([]int32{1, 2}, block(4)...), 3)
	mm, err := vis.MultiModal(context.Background(), []*chat.Image{{URL: dataURL(png)}}, seq, "t")
	require.NoError(t, err)
	require.Equal(t, [][3]int64{{1, 4, 4}}, mm.ImageGridTHW)
	require.Len(t, mm.PixelValues, 16*mm.RowLen)
	pos, err := vis.Rope.VerlPositionIDs(toInts(seq), nil, vision.Vision{Images: [][3]int{{1, 4, 4}}})
	require.NoError(t, err)
	require.Equal(t, pos, mm.PositionIDs)

	for _, c := range []struct {
		seq  []int32
		want string
	}{
		{append([]int32{1}, block(5)...), "t: image 0: its block has 5 pad tokens, the image stands for 4"},
		{append(append([]int32{1}, block(4)...), block(4)...), "t: more image blocks than the 1 images"},
		{[]int32{1, 2}, "t: 1 images but 0 image blocks"},
	} {
		_, err := vis.MultiModal(context.Background(), []*chat.Image{{URL: dataURL(png)}}, c.seq, "t")
		require.ErrorIs(t, err, ErrImage)
		require.ErrorContains(t, err, c.want)
	}
	var none *Vision
	_, err = none.MultiModal(context.Background(), []*chat.Image{{Data: png}}, seq, "t")
	require.ErrorContains(t, err, "t: 1 images, and no image processor")
}
