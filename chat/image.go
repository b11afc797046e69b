package chat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
)

// Image is the image of a content part: where it is (URL) or its encoded
// bytes (Data), one of the two. URL is what OpenAI's image_url parts and
// verl's {"image": …} entries give: a data URL, a local file (a path or
// file://…) or an http(s) URL; whoever reads it decides which of those it
// accepts (vision.ReadSource). Data is a PNG, JPEG, WebP or GIF file, as
// verl's {"bytes": …} entries and tools that return images hold it.
type Image struct {
	URL  string
	Data []byte
}

// DataURL is the image as OpenAI's image_url takes it: URL as it is, Data
// as a base64 data URL with the media type sniffed from the bytes.
func (im *Image) DataURL() string {
	if im.URL != "" || len(im.Data) == 0 {
		return im.URL
	}
	return "data:" + http.DetectContentType(im.Data) + ";base64," + base64.StdEncoding.EncodeToString(im.Data)
}

// ImagePart is a content part holding im, written as OpenAI's
// {"type": "image_url", "image_url": {"url": …}}.
func ImagePart(im Image) ContentPart {
	return ContentPart{Type: "image_url", Image: &im}
}

// Images lists the images of m's content parts, in order: the order in
// which chat templates place their placeholders.
func (m Message) Images() []*Image {
	var out []*Image
	for i := range m.Parts {
		if m.Parts[i].Image != nil {
			out = append(out, m.Parts[i].Image)
		}
	}
	return out
}

// partImage reads the image of an image part: OpenAI's
// {"type": "image_url", "image_url": {"url": U}} (or "image_url": U) and
// the Qwen-VL/verl form {"type": "image", "image": U}. nil for a part
// that is no image; an image part whose source is not a string is an
// error, so that a malformed part is not rendered as text.
func partImage(typ string, raw json.RawMessage) (*Image, error) {
	var p struct {
		ImageURL json.RawMessage `json:"image_url"`
		Image    json.RawMessage `json:"image"`
	}
	if typ != "image_url" && typ != "image" {
		return nil, nil
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, err
	}
	switch {
	case typ == "image_url":
		u := bytes.TrimSpace(p.ImageURL)
		var url string
		if len(u) > 0 && u[0] == '{' {
			var o struct {
				URL string `json:"url"`
			}
			if err := json.Unmarshal(u, &o); err != nil {
				return nil, fmt.Errorf("image_url: %w", err)
			}
			url = o.URL
		} else if err := json.Unmarshal(u, &url); err != nil {
			return nil, fmt.Errorf(`image_url: want {"url": ...} or a string`)
		}
		if url == "" {
			return nil, fmt.Errorf("image_url: no url")
		}
		return &Image{URL: url}, nil
	default: // "image"
		if len(p.Image) == 0 {
			// {"type": "image"} alone: a placeholder whose image the
			// caller supplies (verl's <image> split before the images
			// are attached). Kept as a part without an image.
			return nil, nil
		}
		var url string
		if err := json.Unmarshal(p.Image, &url); err != nil {
			return nil, fmt.Errorf("image: want a data URL, a file path or a URL")
		}
		if url == "" {
			return nil, fmt.Errorf("image: empty")
		}
		return &Image{URL: url}, nil
	}
}
