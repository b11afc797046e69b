package dataset

import (
	"encoding/base64"
	"fmt"
	"regexp"

	"github.com/agentrl/agentrl/chat"
)

// mediaMarker is where verl's RLHFDataset._build_messages places a row's
// images in its messages' text (verl/utils/dataset/rl_dataset.py).
var mediaMarker = regexp.MustCompile(`<image>|<video>|<audio>`)

// attachImages places the row's images column in the prompt as verl's
// _build_messages does: each string content is split at its <image>
// markers, and the i-th marker of the prompt becomes an image part holding
// the i-th image. An entry is {"bytes": …} (Parquet binary, or base64 in
// JSONL), {"path": …}, {"image": …} (a data URL, a file or a URL), or a
// plain string source. Counts that do not match are an error: verl asserts
// on too few images, and an image without a marker would be trained on
// without being in the prompt.
func attachImages(msgs []chat.Message, v any, col string) error {
	l, ok := v.([]any)
	if !ok {
		return ferr(col, "must be a list of images, got %s", kind(v))
	}
	imgs := make([]chat.Image, len(l))
	for i, x := range l {
		im, err := imageEntry(x, fmt.Sprintf("%s[%d]", col, i))
		if err != nil {
			return err
		}
		imgs[i] = im
	}
	next := 0
	for mi := range msgs {
		m := &msgs[mi]
		if len(m.Parts) > 0 || !mediaMarker.MatchString(m.Content) {
			continue
		}
		var parts []chat.ContentPart
		text := m.Content
		for text != "" {
			loc := mediaMarker.FindStringIndex(text)
			if loc == nil {
				parts = append(parts, chat.ContentPart{Type: "text", Text: text})
				break
			}
			if loc[0] > 0 {
				parts = append(parts, chat.ContentPart{Type: "text", Text: text[:loc[0]]})
			}
			switch marker := text[loc[0]:loc[1]]; marker {
			case "<image>":
				if next >= len(imgs) {
					return ferr(col, "the prompt has more <image> markers than the %d images", len(imgs))
				}
				parts = append(parts, chat.ImagePart(imgs[next]))
				next++
			default:
				return ferr(col, "message %d has a %s marker: only images are supported", mi, marker)
			}
			text = text[loc[1]:]
		}
		m.Content, m.Parts = "", parts
	}
	if next != len(imgs) {
		return ferr(col, "%d images but %d <image> markers in the prompt", len(imgs), next)
	}
	return nil
}

// imageEntry reads one entry of the images column.
func imageEntry(x any, at string) (chat.Image, error) {
	switch v := x.(type) {
	case string:
		if v == "" {
			return chat.Image{}, ferr(at, "empty image source")
		}
		return chat.Image{URL: v}, nil
	case map[string]any:
		switch b := v["bytes"].(type) {
		case []byte:
			if len(b) > 0 {
				return chat.Image{Data: b}, nil
			}
		case string:
			if b != "" {
				// JSONL holds bytes as base64; a Parquet binary that
				// happens to be valid UTF-8 arrives as a string of the
				// bytes themselves.
				if d, err := base64.StdEncoding.DecodeString(b); err == nil {
					return chat.Image{Data: d}, nil
				}
				return chat.Image{Data: []byte(b)}, nil
			}
		case nil:
		default:
			return chat.Image{}, ferr(at+".bytes", "must be binary or base64, got %s", kind(b))
		}
		for _, k := range []string{"path", "image", "image_url", "url"} {
			switch s := v[k].(type) {
			case string:
				if s != "" {
					return chat.Image{URL: s}, nil
				}
			case map[string]any: // {"image_url": {"url": …}}
				if u, ok := s["url"].(string); ok && u != "" {
					return chat.Image{URL: u}, nil
				}
			case nil:
			default:
				return chat.Image{}, ferr(at+"."+k, "must be a string, got %s", kind(s))
			}
		}
		return chat.Image{}, ferr(at, `an image needs "bytes", "path" or "image" (keys: %v)`, sortedKeys(v))
	}
	return chat.Image{}, ferr(at, "must be an image object or a source string, got %s", kind(x))
}
