package vision

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"

	"golang.org/x/image/webp"
)

// Limits bound what Decode accepts. Both caps are checked from the file's
// header before any pixel memory is allocated, so a small file that claims
// a huge canvas (a "decompression bomb") is refused cheaply.
type Limits struct {
	// MaxBytes is the largest encoded image accepted; 0 means DefaultMaxBytes.
	MaxBytes int64
	// MaxPixels is the largest width*height accepted; 0 means DefaultMaxPixels.
	MaxPixels int64
}

// Default caps: 32 MiB encoded, 64 megapixels decoded (an 8K frame is 33
// megapixels). 64 Mpx of RGB is 192 MiB for the result; the decoder's own
// buffers are a small multiple of the pixel count on top (4 bytes a pixel
// for 8-bit PNG, 8 for 16-bit, about 12 for progressive JPEG's
// coefficients), so memory is bounded by MaxPixels.
const (
	DefaultMaxBytes  = 32 << 20
	DefaultMaxPixels = 64 << 20
)

// ErrTooLarge is wrapped by the errors for images over a Limits cap.
var ErrTooLarge = errors.New("vision: image too large")

// ErrFormat is wrapped by the error for data that is no supported image.
var ErrFormat = errors.New("vision: unknown image format (want PNG, JPEG, WebP or GIF)")

func (l Limits) maxBytes() int64 {
	if l.MaxBytes > 0 {
		return l.MaxBytes
	}
	return DefaultMaxBytes
}

func (l Limits) maxPixels() int64 {
	if l.MaxPixels > 0 {
		return l.MaxPixels
	}
	return DefaultMaxPixels
}

// RGB is an 8-bit RGB image, rows top to bottom, 3 bytes a pixel, no
// padding: the layout of a Pillow "RGB" image and of numpy's HWC array of it.
type RGB struct {
	W, H int
	Pix  []uint8
	// Format is the container the image was decoded from: "png", "jpeg",
	// "webp" or "gif"; empty for images made in memory.
	Format string
}

// NewRGB allocates a w×h black image.
func NewRGB(w, h int) *RGB {
	return &RGB{W: w, H: h, Pix: make([]uint8, 3*w*h)}
}

// Decode decodes a PNG, JPEG, WebP or GIF (its first frame) and converts it
// to RGB the way qwen_vl_utils' to_rgb does with Pillow, which is what verl
// feeds the Qwen-VL processors:
//
//   - an image with an alpha channel of its own (PNG RGBA, WebP with
//     alpha) is composited onto white, with Pillow's paste arithmetic
//     (out = DIV255(255·(255−a) + c·a), DIV255 rounding as Pillow's);
//   - every other mode goes through Pillow's convert("RGB"): a palette is
//     looked up (its transparency ignored), gray is replicated, gray+alpha
//     loses its alpha, 16-bit gray is clipped at 255 (Pillow's I→RGB), 16-bit
//     colour keeps the high byte, CMYK uses Pillow's cmyk2rgb.
//
// PNG, GIF and WebP (lossy too: libwebp's fancy upsampling and YUV → RGB are
// transcribed in webp.go) decode to Pillow's bytes. JPEG gets
// libjpeg-turbo's fancy upsampling and colour conversion (jpeg.go) on Go's
// inverse DCT, and is within a few levels of Pillow: see the package doc
// for the measured tolerance.
func Decode(data []byte, lim Limits) (*RGB, error) {
	if int64(len(data)) > lim.maxBytes() {
		return nil, fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrTooLarge, len(data), lim.maxBytes())
	}
	format := sniff(data)
	var cfg image.Config
	var err error
	switch format {
	case "png":
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	case "jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case "gif":
		cfg, err = gif.DecodeConfig(bytes.NewReader(data))
	case "webp":
		cfg, err = webp.DecodeConfig(bytes.NewReader(data))
	default:
		return nil, ErrFormat
	}
	if err != nil {
		return nil, fmt.Errorf("vision: %s header: %w", format, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return nil, fmt.Errorf("vision: %s header: empty image %dx%d", format, cfg.Width, cfg.Height)
	}
	if px := int64(cfg.Width) * int64(cfg.Height); px > lim.maxPixels() {
		return nil, fmt.Errorf("%w: %s of %dx%d is %d pixels, the limit is %d",
			ErrTooLarge, format, cfg.Width, cfg.Height, px, lim.maxPixels())
	}
	var img image.Image
	switch format {
	case "png":
		img, err = png.Decode(bytes.NewReader(data))
	case "jpeg":
		img, err = jpeg.Decode(bytes.NewReader(data))
	case "gif":
		img, err = gif.Decode(bytes.NewReader(data))
	case "webp":
		img, err = webp.Decode(bytes.NewReader(data))
	}
	if err != nil {
		return nil, fmt.Errorf("vision: decoding %s: %w", format, err)
	}
	b := img.Bounds()
	if b.Dx() <= 0 || b.Dy() <= 0 || int64(b.Dx())*int64(b.Dy()) > lim.maxPixels() {
		return nil, fmt.Errorf("%w: decoded %s frame is %dx%d", ErrTooLarge, format, b.Dx(), b.Dy())
	}
	var out *RGB
	switch m := img.(type) {
	case *image.YCbCr:
		if format == "webp" && m.SubsampleRatio == image.YCbCrSubsampleRatio420 && m.Rect.Min == (image.Point{}) {
			out = NewRGB(b.Dx(), b.Dy())
			webpFancyRGB(m, out)
		} else if format == "jpeg" {
			out = NewRGB(b.Dx(), b.Dy())
			if !jpegFancyRGB(m, out) {
				out = nil
			}
		}
	case *image.NYCbCrA:
		if format == "webp" && m.SubsampleRatio == image.YCbCrSubsampleRatio420 && m.Rect.Min == (image.Point{}) {
			out = NewRGB(b.Dx(), b.Dy())
			webpFancyRGB(&m.YCbCr, out)
			for i, a := range m.A[:b.Dx()*b.Dy()] {
				for c := range 3 {
					out.Pix[3*i+c] = blendWhite(out.Pix[3*i+c], a)
				}
			}
		}
	}
	if m, ok := img.(*image.Paletted); ok && format == "gif" {
		restoreGIFTransparent(data, m)
	}
	if out == nil {
		out = toRGB(img, compositeAlpha(format, data))
	}
	out.Format = format
	return out, nil
}

func sniff(data []byte) string {
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		return "png"
	case bytes.HasPrefix(data, []byte("\xff\xd8")):
		return "jpeg"
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return "gif"
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return "webp"
	}
	return ""
}

// compositeAlpha says whether Pillow opens the file in mode RGBA, the one
// mode qwen_vl_utils composites onto white. A PNG says so in its IHDR colour
// type (6: RGBA; 4, gray+alpha, opens as LA and only loses its alpha); a
// WebP's alpha arrives through Go's decoder as NRGBA or NYCbCrA, which are
// composited, and alpha 255 composites to itself exactly.
func compositeAlpha(format string, data []byte) bool {
	switch format {
	case "png":
		// signature(8) length(4) "IHDR"(4) width(4) height(4) depth(1) colour type(1)
		return len(data) > 25 && string(data[12:16]) == "IHDR" && data[25] == 6
	case "webp":
		return true
	}
	return false
}

// div255 is Pillow's DIV255: a/255 rounded, exact for 0 ≤ a ≤ 255·255.
func div255(a int) uint8 {
	t := a + 128
	return uint8(((t >> 8) + t) >> 8)
}

// blendWhite is Pillow's BLEND(a, 255, c): c painted with alpha a over white.
func blendWhite(c, a uint8) uint8 {
	return div255(255*(255-int(a)) + int(c)*int(a))
}

func clip8(v int) uint8 {
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

func toRGB(img image.Image, composite bool) *RGB {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	out := NewRGB(w, h)
	p := out.Pix
	switch m := img.(type) {
	case *image.NRGBA:
		for y := range h {
			row := m.Pix[(y)*m.Stride : (y)*m.Stride+4*w]
			for x := range w {
				r, g, bb, a := row[4*x], row[4*x+1], row[4*x+2], row[4*x+3]
				if composite {
					r, g, bb = blendWhite(r, a), blendWhite(g, a), blendWhite(bb, a)
				}
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = r, g, bb
			}
		}
	case *image.NRGBA64:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+8*w]
			for x := range w {
				// Pillow unpacks 16-bit PNG colour to 8 bits by its high byte.
				r, g, bb, a := row[8*x], row[8*x+2], row[8*x+4], row[8*x+6]
				if composite {
					r, g, bb = blendWhite(r, a), blendWhite(g, a), blendWhite(bb, a)
				}
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = r, g, bb
			}
		}
	case *image.RGBA:
		// Opaque colour (Go's PNG decoder uses RGBA for truecolour without
		// alpha): premultiplied equals straight at alpha 255.
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := range w {
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = row[4*x], row[4*x+1], row[4*x+2]
			}
		}
	case *image.RGBA64:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+8*w]
			for x := range w {
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = row[8*x], row[8*x+2], row[8*x+4]
			}
		}
	case *image.Gray:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			for x, v := range row {
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = v, v, v
			}
		}
	case *image.Gray16:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+2*w]
			for x := range w {
				// Pillow opens 16-bit gray as mode I and its convert("RGB")
				// clips at 255 instead of scaling.
				v := clip8(int(binary.BigEndian.Uint16(row[2*x:])))
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = v, v, v
			}
		}
	case *image.Paletted:
		// Palette entries' own colour, alpha ignored, as convert("RGB") of a
		// P image (a GIF's transparent entry was restored by Decode).
		pal := make([][3]uint8, 256)
		for i, c := range m.Palette {
			pal[i] = straight(c)
		}
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+w]
			for x, v := range row {
				i := 3 * (y*w + x)
				c := pal[v]
				p[i], p[i+1], p[i+2] = c[0], c[1], c[2]
			}
		}
	case *image.YCbCr:
		for y := range h {
			for x := range w {
				yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
				ci := m.COffset(b.Min.X+x, b.Min.Y+y)
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = r, g, bb
			}
		}
	case *image.NYCbCrA:
		for y := range h {
			for x := range w {
				yi := m.YOffset(b.Min.X+x, b.Min.Y+y)
				ci := m.COffset(b.Min.X+x, b.Min.Y+y)
				a := m.A[m.AOffset(b.Min.X+x, b.Min.Y+y)]
				r, g, bb := color.YCbCrToRGB(m.Y[yi], m.Cb[ci], m.Cr[ci])
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = blendWhite(r, a), blendWhite(g, a), blendWhite(bb, a)
			}
		}
	case *image.CMYK:
		for y := range h {
			row := m.Pix[y*m.Stride : y*m.Stride+4*w]
			for x := range w {
				nk := 255 - int(row[4*x+3])
				i := 3 * (y*w + x)
				for c := range 3 {
					// Pillow's cmyk2rgb: nk − MULDIV255(c, nk).
					p[i+c] = clip8(nk - int(div255(int(row[4*x+c])*nk)))
				}
			}
		}
	default:
		for y := range h {
			for x := range w {
				c := straight(img.At(b.Min.X+x, b.Min.Y+y))
				i := 3 * (y*w + x)
				p[i], p[i+1], p[i+2] = c[0], c[1], c[2]
			}
		}
	}
	return out
}

// straight is a colour's 8-bit non-premultiplied RGB, alpha dropped.
func straight(c color.Color) [3]uint8 {
	switch v := c.(type) {
	case color.NRGBA:
		return [3]uint8{v.R, v.G, v.B}
	case color.RGBA:
		if v.A == 0xff || v.A == 0 {
			return [3]uint8{v.R, v.G, v.B}
		}
	}
	n := color.NRGBAModel.Convert(c).(color.NRGBA)
	return [3]uint8{n.R, n.G, n.B}
}
