package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/trajectory"
	"github.com/agentrl/agentrl/vision"
)

// Vision is what the loops need for samples and tool results with images
// (Qwen2/2.5/3-VL): the model's image processor, its placeholder tokens and
// its M-RoPE settings, and where images may be read from. The chat
// template renders one collapsed <|vision_start|><|image_pad|><|vision_end|>
// block per image part; the loop expands each block to the image's token
// count on the token ids (vision.ExpandPlaceholders), so history is never
// re-tokenized, and sends the images with the prompt
// (server.GenerateRequest.Vision).
type Vision struct {
	Processor    *vision.Processor
	Placeholders vision.PlaceholderTokens
	// Rope gives the trajectory verl's (4, L) M-RoPE position ids; a zero
	// Family gives none.
	Rope vision.RopeConfig
	// Sources says where image URLs may be read from: data URLs and local
	// files by default, remote URLs only with AllowRemote.
	Sources vision.Sources
	// Limits caps each image's encoded size and pixels (vision's defaults
	// when zero).
	Limits vision.Limits
	// FetchImage resizes a sample's images as verl's dataset does before
	// its processor sees them (verl/utils/dataset/vision_utils.py
	// process_image → qwen_vl_utils fetch_image): smart_resize to a
	// multiple of patch·merge between 4 and 16384 tokens' worth of pixels,
	// with Pillow's bicubic. The processor's own resize then only matters
	// for images its bounds cut further. Tool images are processed as
	// they come, as verl's ToolAgentLoop does.
	FetchImage bool
	// KeepImages keeps each image's encoded bytes in the trajectory
	// (trajectory.MultiModal.Images), so that JSONL output can be viewed
	// with its images; off, the trajectory has only their grids.
	KeepImages bool
}

// ErrImage is wrapped by the errors about an image of a sample or a tool
// result: one that cannot be read, decoded or processed, or images where
// the Env has no Vision.
var ErrImage = errors.New("agentloop: image")

// episodeImage is one image of a trajectory, in block order.
type episodeImage struct {
	data []byte
	feat *vision.Features
}

// loadImages reads, decodes and processes the images of msgs' content
// parts; where names the messages in errors ("sample 3 (id \"x\")",
// "the tool result after turn 2 of x").
func (e *Episode) loadImages(ctx context.Context, msgs []chat.Message, where string, fetch bool) ([]episodeImage, error) {
	var out []episodeImage
	for mi, m := range msgs {
		for pi := range m.Parts {
			im := m.Parts[pi].Image
			if im == nil {
				continue
			}
			at := fmt.Sprintf("%s: image %d (message %d, part %d)", where, len(e.images)+len(out), mi, pi)
			v := e.env.Vision
			if v == nil || v.Processor == nil {
				return nil, fmt.Errorf("%w: %s: the model has no image processor (Env.Vision)", ErrImage, at)
			}
			img, err := v.load(ctx, im, at, fetch && v.FetchImage)
			if err != nil {
				return nil, err
			}
			out = append(out, img)
		}
	}
	return out, nil
}

// load reads, decodes and processes one image (resized as fetch_image
// does first when fetch); at names it in errors.
func (v *Vision) load(ctx context.Context, im *chat.Image, at string, fetch bool) (episodeImage, error) {
	data := im.Data
	if len(data) == 0 {
		var err error
		if data, err = vision.ReadSource(ctx, im.URL, v.Limits.MaxBytes, v.Sources); err != nil {
			return episodeImage{}, fmt.Errorf("%w: %s: %w", ErrImage, at, err)
		}
	}
	rgb, err := vision.Decode(data, v.Limits)
	if err != nil {
		return episodeImage{}, fmt.Errorf("%w: %s: %w", ErrImage, at, err)
	}
	if fetch {
		if rgb, err = fetchResize(rgb, v.Processor.Config().Factor()); err != nil {
			return episodeImage{}, fmt.Errorf("%w: %s (%d×%d): %w", ErrImage, at, rgb.W, rgb.H, err)
		}
	}
	f, err := v.Processor.Process(rgb)
	if err != nil {
		return episodeImage{}, fmt.Errorf("%w: %s (%d×%d): %w", ErrImage, at, rgb.W, rgb.H, err)
	}
	return episodeImage{data: data, feat: f}, nil
}

// expand gives ids' collapsed image blocks the token counts of imgs, which
// are all the images ids stands for, in order.
func (e *Episode) expand(ids []int32, imgs []episodeImage, where string) ([]int32, error) {
	if len(imgs) == 0 {
		return ids, nil
	}
	place := e.env.Vision.Placeholders
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	counts := make([]int, len(imgs))
	for i, im := range imgs {
		counts[i] = im.feat.Tokens()
	}
	got, err := vision.CountPlaceholders(in, place)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrImage, where, err)
	}
	if len(got) != len(imgs) {
		return nil, fmt.Errorf("%w: %s: the chat template placed %d image blocks for %d images", ErrImage, where, len(got), len(imgs))
	}
	out, err := vision.ExpandPlaceholders(in, place, counts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrImage, where, err)
	}
	ids = make([]int32, len(out))
	for i, id := range out {
		ids[i] = int32(id)
	}
	return ids, nil
}

// visionRequest is the Vision of a generate call: every image so far.
func (e *Episode) visionRequest() *server.Vision {
	if len(e.images) == 0 {
		return nil
	}
	return e.env.Vision.serverVision(e.images)
}

// serverVision is imgs as a generate call carries them.
func (v *Vision) serverVision(imgs []episodeImage) *server.Vision {
	p := v.Placeholders
	sv := &server.Vision{VisionStart: int32(p.VisionStart), Pad: int32(p.Pad), VisionEnd: int32(p.VisionEnd),
		Images: make([]server.Image, len(imgs))}
	for i, im := range imgs {
		sv.Images[i] = server.Image{Data: im.data, Tokens: im.feat.Tokens(), Grid: im.feat.Grid}
	}
	return sv
}

// multiModal is the trajectory's images as the trainer reads them, with
// the M-RoPE position ids of seq (prompt and response).
func (e *Episode) multiModal(seq []int32) (*trajectory.MultiModal, error) {
	mm, err := e.env.Vision.multiModal(e.images, seq)
	if err != nil {
		return nil, fmt.Errorf("%w: M-RoPE position ids of %s: %w", ErrImage, e.s.ID, err)
	}
	return mm, nil
}

// multiModal is imgs as the trainer reads them, with the M-RoPE position
// ids of seq; nil without images.
func (v *Vision) multiModal(imgs []episodeImage, seq []int32) (*trajectory.MultiModal, error) {
	if len(imgs) == 0 {
		return nil, nil
	}
	mm := &trajectory.MultiModal{RowLen: imgs[0].feat.RowLen}
	vis := vision.Vision{}
	for _, im := range imgs {
		mm.ImageGridTHW = append(mm.ImageGridTHW, [3]int64{int64(im.feat.Grid[0]), int64(im.feat.Grid[1]), int64(im.feat.Grid[2])})
		mm.PixelValues = append(mm.PixelValues, im.feat.Pixels...)
		vis.Images = append(vis.Images, im.feat.Grid)
		if v.KeepImages {
			mm.Images = append(mm.Images, im.data)
		}
	}
	if v.Rope.Family == 0 {
		return mm, nil
	}
	ids := make([]int, len(seq))
	for i, id := range seq {
		ids[i] = int(id)
	}
	pos, err := v.Rope.VerlPositionIDs(ids, nil, vis)
	if err != nil {
		return nil, err
	}
	mm.PositionIDs = pos
	return mm, nil
}

// MultiModal is the images of a sequence that was rendered and expanded
// elsewhere (black-box capture: a harness's conversation as a server took
// it) as the trainer reads them: each image read (from Sources), decoded
// and processed as it came, without FetchImage's resize, and seq's
// M-RoPE position ids. seq's image blocks must hold the images' token
// counts, in order; where names the sequence in errors.
func (v *Vision) MultiModal(ctx context.Context, images []*chat.Image, seq []int32, where string) (*trajectory.MultiModal, error) {
	if len(images) == 0 {
		return nil, nil
	}
	if v == nil || v.Processor == nil {
		return nil, fmt.Errorf("%w: %s: %d images, and no image processor (Vision)", ErrImage, where, len(images))
	}
	imgs := make([]episodeImage, 0, len(images))
	for i, im := range images {
		img, err := v.load(ctx, im, fmt.Sprintf("%s: image %d", where, i), false)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	// The blocks as an engine checks a request's: one per image, each of
	// its image's count.
	if _, err := v.serverVision(imgs).ImageStarts(seq); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrImage, where, err)
	}
	mm, err := v.multiModal(imgs, seq)
	if err != nil {
		return nil, fmt.Errorf("%w: M-RoPE position ids of %s: %w", ErrImage, where, err)
	}
	return mm, nil
}

// fetchResize is qwen_vl_utils' fetch_image resize (vision_process.py:
// smart_resize with min_pixels 4·factor² and max_pixels 16384·factor²,
// then Image.resize, bicubic by default for RGB).
func fetchResize(img *vision.RGB, factor int) (*vision.RGB, error) {
	h, w, err := vision.SmartResize(img.H, img.W, factor, 4*factor*factor, 16384*factor*factor)
	if err != nil {
		return img, err
	}
	if h == img.H && w == img.W {
		return img, nil
	}
	return vision.ResizeBicubic(img, w, h)
}
