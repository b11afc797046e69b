package vision_test

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"

	"github.com/agentrl/agentrl/vision"
)

func Example() {
	// An image as it arrives in a sample: encoded bytes.
	src := image.NewNRGBA(image.Rect(0, 0, 640, 480))
	for y := range 480 {
		for x := range 640 {
			src.Set(x, y, color.NRGBA{uint8(x), uint8(y), 128, 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, src); err != nil {
		panic(err)
	}

	img, err := vision.Decode(buf.Bytes(), vision.Limits{})
	if err != nil {
		panic(err)
	}
	p, err := vision.NewProcessor(vision.Qwen2VLConfig())
	if err != nil {
		panic(err)
	}
	f, err := p.Process(img)
	if err != nil {
		panic(err)
	}
	fmt.Println("resized", f.ResizedW, "x", f.ResizedH, "grid", f.Grid, "tokens", f.Tokens())
	fmt.Println("pixel_values", f.Rows(), "x", f.RowLen)

	// The prompt's one <|image_pad|> becomes the image's tokens.
	q := vision.QwenImagePlaceholders
	ids := []int{872, q.VisionStart, q.Pad, q.VisionEnd, 198}
	ids, err = vision.ExpandPlaceholders(ids, q, []int{f.Tokens()})
	if err != nil {
		panic(err)
	}
	pos, err := vision.QwenRopeConfig(vision.Qwen25VL).VerlPositionIDs(ids, nil, vision.Vision{Images: [][3]int{f.Grid}})
	if err != nil {
		panic(err)
	}
	fmt.Println("ids", len(ids), "last position ids", pos[0][len(ids)-1], pos[1][len(ids)-1])
	// Output:
	// resized 644 x 476 grid [1 34 46] tokens 391
	// pixel_values 1564 x 1176
	// ids 395 last position ids 394 26
}
