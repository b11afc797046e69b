package httpapi

import (
	"context"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/server"
	"github.com/agentrl/agentrl/vision"
)

// ImageProcessor is a vision-language model's image processor as the chat
// endpoint uses it (Chat.Images).
type ImageProcessor interface {
	// Image reads the image an image_url part names and returns its
	// encoded bytes, the number of pad tokens it stands for and its grid.
	// It decides which sources it reads: a request comes from the
	// network, so local files and remote URLs should be refused (data
	// URLs only). An error is the client's: answered 400 naming the part.
	Image(url string) (server.Image, error)
	// Placeholders are the ids of a vision block:
	// <|vision_start|>, <|image_pad|>, <|vision_end|>.
	Placeholders() (start, pad, end int32)
}

// hasImages reports whether m has an image part.
func hasImages(m chat.Message) bool {
	for _, p := range m.Parts {
		if p.Image != nil {
			return true
		}
	}
	return false
}

// expandImages processes the image parts of msgs (rendered into ids, one
// collapsed block each) and expands their blocks; nil Vision without
// images.
func expandImages(ip ImageProcessor, msgs []chat.Message, ids []int32) ([]int32, *server.Vision, error) {
	var v *server.Vision
	for i, m := range msgs {
		for j, p := range m.Parts {
			if p.Image == nil {
				continue
			}
			im, err := ip.Image(p.Image.URL)
			if err != nil {
				return nil, nil, badRequest(`field "messages[%d].content[%d].image_url": %v`, i, j, err)
			}
			if v == nil {
				v = &server.Vision{}
				v.VisionStart, v.Pad, v.VisionEnd = ip.Placeholders()
			}
			v.Images = append(v.Images, im)
		}
	}
	if v == nil {
		return ids, nil, nil
	}
	out, err := v.Expand(ids)
	if err != nil {
		return nil, nil, badRequest("the chat template's image blocks do not match the images: %v", err)
	}
	return out, v, nil
}

// VisionImages is the ImageProcessor of a Qwen2/2.5/3-VL model on the
// vision package: an image_url part must be a data URL (a request comes
// from the network, so local files and remote URLs are refused), decoded
// within Limits; its token count and grid are the Processor's, the same
// ones agentloop gives the images of samples and tool results.
type VisionImages struct {
	Processor    *vision.Processor
	Tokens       vision.PlaceholderTokens
	Limits       vision.Limits
	MaxImageSize int64 // encoded bytes; vision.DefaultMaxBytes when 0
}

// Image implements ImageProcessor.
func (v *VisionImages) Image(url string) (server.Image, error) {
	data, err := vision.ReadSource(context.Background(), url, v.MaxImageSize, vision.Sources{NoFiles: true})
	if err != nil {
		return server.Image{}, err
	}
	img, err := vision.Decode(data, v.Limits)
	if err != nil {
		return server.Image{}, err
	}
	grid, _, _, err := v.Processor.Grid(img.H, img.W)
	if err != nil {
		return server.Image{}, err
	}
	m := v.Processor.Config().MergeSize
	return server.Image{Data: data, Tokens: grid[0] * grid[1] * grid[2] / (m * m), Grid: grid}, nil
}

// Placeholders implements ImageProcessor.
func (v *VisionImages) Placeholders() (start, pad, end int32) {
	return int32(v.Tokens.VisionStart), int32(v.Tokens.Pad), int32(v.Tokens.VisionEnd)
}
