package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/vision"
)

// tokenizeVision is what `agentrl tokenize` needs for chat contexts with
// image parts: the model directory's image processor
// (preprocessor_config.json) and M-RoPE settings (config.json).
type tokenizeVision struct {
	proc  *vision.Processor
	rope  vision.RopeConfig
	place vision.PlaceholderTokens
}

// loadTokenizeVision reads dir's preprocessor_config.json and config.json;
// nil without a preprocessor config (a text-only model).
func loadTokenizeVision(dir string, tok *tokenizer.Tokenizer) (*tokenizeVision, error) {
	data, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cfg, err := vision.ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "preprocessor_config.json"), err)
	}
	proc, err := vision.NewProcessor(cfg)
	if err != nil {
		return nil, err
	}
	var model struct {
		ModelType          string `json:"model_type"`
		ImageTokenID       *int   `json:"image_token_id"`
		VideoTokenID       *int   `json:"video_token_id"`
		VisionStartTokenID *int   `json:"vision_start_token_id"`
		VisionConfig       struct {
			SpatialMergeSize *int     `json:"spatial_merge_size"`
			TokensPerSecond  *float32 `json:"tokens_per_second"`
		} `json:"vision_config"`
	}
	cfgPath := filepath.Join(dir, "config.json")
	data, err = os.ReadFile(cfgPath)
	if err != nil {
		return nil, fmt.Errorf("a preprocessor_config.json needs the model's config.json beside it (for M-RoPE): %w", err)
	}
	if err := json.Unmarshal(data, &model); err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	var fam vision.Family
	switch model.ModelType {
	case "qwen2_vl":
		fam = vision.Qwen2VL
	case "qwen2_5_vl":
		fam = vision.Qwen25VL
	case "qwen3_vl", "qwen3_vl_moe":
		fam = vision.Qwen3VL
	default:
		return nil, fmt.Errorf("%s: model_type %q: image contexts support qwen2_vl, qwen2_5_vl, qwen3_vl and qwen3_vl_moe", cfgPath, model.ModelType)
	}
	rope := vision.QwenRopeConfig(fam)
	id := func(dst *int, cfgID *int, token string) error {
		if cfgID != nil {
			*dst = *cfgID
			return nil
		}
		v, ok := tok.TokenID(token)
		if !ok {
			return fmt.Errorf("the tokenizer has no %s token and config.json gives no id for it", token)
		}
		*dst = int(v)
		return nil
	}
	if err := errors.Join(
		id(&rope.ImageTokenID, model.ImageTokenID, "<|image_pad|>"),
		id(&rope.VideoTokenID, model.VideoTokenID, "<|video_pad|>"),
		id(&rope.VisionStartTokenID, model.VisionStartTokenID, "<|vision_start|>"),
	); err != nil {
		return nil, err
	}
	if v := model.VisionConfig.SpatialMergeSize; v != nil {
		rope.SpatialMergeSize = *v
	}
	if v := model.VisionConfig.TokensPerSecond; v != nil {
		rope.TokensPerSecond = *v
	}
	end, ok := tok.TokenID("<|vision_end|>")
	if !ok {
		return nil, errors.New("the tokenizer has no <|vision_end|> token")
	}
	return &tokenizeVision{proc: proc, rope: rope,
		place: vision.PlaceholderTokens{VisionStart: rope.VisionStartTokenID, Pad: rope.ImageTokenID, VisionEnd: int(end)}}, nil
}

// contextImages lists a chat context's image parts in message order, as
// the Qwen-VL chat templates place their placeholders: {"type": "image",
// "image": SRC} and {"type": "image_url", "image_url": {"url": SRC}}.
func contextImages(raw json.RawMessage) ([]string, error) {
	var ctx struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &ctx); err != nil {
		return nil, fmt.Errorf(`"context": %w`, err)
	}
	var out []string
	for mi, m := range ctx.Messages {
		var parts []map[string]json.RawMessage
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, fmt.Errorf("message %d: content: %w", mi, err)
		}
		for pi, p := range parts {
			var typ string
			_ = json.Unmarshal(p["type"], &typ)
			var src string
			switch {
			case p["image_url"] != nil:
				var u struct {
					URL string `json:"url"`
				}
				if json.Unmarshal(p["image_url"], &u) != nil {
					if err := json.Unmarshal(p["image_url"], &u.URL); err != nil {
						return nil, fmt.Errorf("message %d part %d: image_url: want {\"url\": ...} or a string", mi, pi)
					}
				}
				src = u.URL
			case typ == "image" || p["image"] != nil:
				if err := json.Unmarshal(p["image"], &src); err != nil {
					return nil, fmt.Errorf("message %d part %d: image: want a data URL or a file path", mi, pi)
				}
			default:
				continue
			}
			out = append(out, src)
		}
	}
	return out, nil
}

// readImageSource is a data URL's bytes or a local file's (file:// or a
// path). Remote URLs are refused: tokenize does not fetch.
func readImageSource(src string, maxBytes int64) ([]byte, error) {
	return vision.ReadSource(context.Background(), src, maxBytes, vision.Sources{})
}

// visionImage is one image's report line.
type visionImage struct {
	Source      string         `json:"source"`
	Size        [2]int         `json:"size"`    // width, height as decoded
	Resized     [2]int         `json:"resized"` // width, height after smart_resize
	GridTHW     [3]int         `json:"image_grid_thw"`
	Tokens      int            `json:"placeholder_tokens"`
	PixelValues pixelValuesDig `json:"pixel_values"`
}

type pixelValuesDig struct {
	Shape [2]int    `json:"shape"`
	Mean  float64   `json:"mean"`
	RMS   float64   `json:"rms"`
	First []float32 `json:"first"`
}

// digestOf is pixel_values' shape, mean, root mean square and first 8
// values: enough to compare with another implementation from outside.
func digestOf(f *vision.Features) pixelValuesDig {
	var s, s2 float64
	for _, v := range f.Pixels {
		s += float64(v)
		s2 += float64(v) * float64(v)
	}
	n := float64(len(f.Pixels))
	return pixelValuesDig{Shape: [2]int{f.Rows(), f.RowLen}, Mean: s / n, RMS: math.Sqrt(s2 / n),
		First: f.Pixels[:min(8, len(f.Pixels))]}
}

// expand processes a context's images and expands ids' placeholders: the
// expanded ids, each image's report and verl's (4, L) position ids.
func (v *tokenizeVision) expand(ctx json.RawMessage, ids []int32) ([]int32, []visionImage, [4][]int64, error) {
	var pos [4][]int64
	srcs, err := contextImages(ctx)
	if err != nil {
		return nil, nil, pos, err
	}
	in := make([]int, len(ids))
	for i, id := range ids {
		in[i] = int(id)
	}
	counts, err := vision.CountPlaceholders(in, v.place)
	if err != nil {
		return nil, nil, pos, err
	}
	if len(counts) != len(srcs) {
		return nil, nil, pos, fmt.Errorf("the rendered prompt has %d image placeholders for %d image parts", len(counts), len(srcs))
	}
	images := make([]visionImage, len(srcs))
	grids := make([][3]int, len(srcs))
	tokens := make([]int, len(srcs))
	for i, src := range srcs {
		name := src
		if strings.HasPrefix(name, "data:") {
			name = name[:min(len(name), strings.IndexByte(name, ',')+1)] + "…"
		}
		data, err := readImageSource(src, vision.DefaultMaxBytes)
		if err != nil {
			return nil, nil, pos, fmt.Errorf("image %d (%s): %w", i, name, err)
		}
		img, err := vision.Decode(data, vision.Limits{})
		if err != nil {
			return nil, nil, pos, fmt.Errorf("image %d (%s): %w", i, name, err)
		}
		f, err := v.proc.Process(img)
		if err != nil {
			return nil, nil, pos, fmt.Errorf("image %d (%s): %w", i, name, err)
		}
		grids[i], tokens[i] = f.Grid, f.Tokens()
		images[i] = visionImage{Source: name, Size: [2]int{img.W, img.H}, Resized: [2]int{f.ResizedW, f.ResizedH},
			GridTHW: f.Grid, Tokens: f.Tokens(), PixelValues: digestOf(f)}
	}
	out, err := vision.ExpandPlaceholders(in, v.place, tokens)
	if err != nil {
		return nil, nil, pos, err
	}
	pos, err = v.rope.VerlPositionIDs(out, nil, vision.Vision{Images: grids})
	if err != nil {
		return nil, nil, pos, err
	}
	exp := make([]int32, len(out))
	for i, id := range out {
		exp[i] = int32(id)
	}
	return exp, images, pos, nil
}
