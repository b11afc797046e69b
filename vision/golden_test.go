package vision

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// golden.json and images/ are written by testdata/gen_golden.py (Pillow and
// numpy running HF's Qwen2VLImageProcessor steps); see its docstring.
type golden struct {
	Pillow string        `json:"pillow"`
	Images []goldenImage `json:"images"`
}

type goldenImage struct {
	File          string                  `json:"file"`
	Mode          string                  `json:"mode"`
	Width         int                     `json:"width"`
	Height        int                     `json:"height"`
	Lossy         bool                    `json:"lossy"`
	DecodedSHA256 string                  `json:"decoded_sha256"`
	RefPNG        string                  `json:"ref_png"`
	Note          string                  `json:"note"`
	Results       map[string]goldenResult `json:"results"`
}

type goldenResult struct {
	Error         string    `json:"error"`
	Resized       [2]int    `json:"resized"`
	ResizedSHA256 string    `json:"resized_sha256"`
	Grid          [3]int    `json:"grid"`
	Tokens        int       `json:"tokens"`
	Shape         [2]int    `json:"shape"`
	PixelSHA256   string    `json:"pixel_sha256"`
	First         []float32 `json:"first"`
	Mean          float64   `json:"mean"`
	RMS           float64   `json:"rms"`
}

// JPEG tolerances against Pillow's libjpeg-turbo decode, in 8-bit levels
// (the package doc states them): what is left is the inverse DCT. Lossy
// WebP decodes to libwebp's bytes exactly.
const (
	lossyMaxAbs  = 4    // largest per-sample difference
	lossyMeanAbs = 0.15 // mean absolute difference
)

func loadGolden(t testing.TB) golden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Images) < 50 {
		t.Fatalf("golden corpus has %d images, want at least 50", len(g.Images))
	}
	return g
}

func shaHex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func floatsSHA(v []float32) string {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return shaHex(b)
}

func decodeFile(t *testing.T, path string) *RGB {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", path))
	if err != nil {
		t.Fatal(err)
	}
	img, err := Decode(data, Limits{})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

var goldenConfigs = map[string]Config{"qwen2vl": Qwen2VLConfig(), "qwen3vl": Qwen3VLConfig()}

func TestGoldenDecode(t *testing.T) {
	g := loadGolden(t)
	for _, im := range g.Images {
		t.Run(filepath.Base(im.File), func(t *testing.T) {
			got := decodeFile(t, im.File)
			if got.W != im.Width || got.H != im.Height {
				t.Fatalf("decoded %dx%d, Pillow %dx%d", got.W, got.H, im.Width, im.Height)
			}
			if !im.Lossy || got.Format == "webp" {
				if s := shaHex(got.Pix); s != im.DecodedSHA256 {
					ref := got
					if im.RefPNG != "" {
						ref = decodeFile(t, im.RefPNG)
					}
					m, mean := diff8(got.Pix, ref.Pix)
					t.Fatalf("decoded RGB differs from Pillow's (mode %s): sha256 %s, want %s (max |Δ| %d, mean %.3f)",
						im.Mode, s, im.DecodedSHA256, m, mean)
				}
				return
			}
			ref := decodeFile(t, im.RefPNG)
			if s := shaHex(ref.Pix); s != im.DecodedSHA256 {
				t.Fatalf("reference PNG decodes to sha256 %s, want %s", s, im.DecodedSHA256)
			}
			maxAbs, meanAbs := diff8(got.Pix, ref.Pix)
			t.Logf("%s vs Pillow: max |Δ| %d, mean |Δ| %.3f", im.File, maxAbs, meanAbs)
			if maxAbs > lossyMaxAbs || meanAbs > lossyMeanAbs {
				t.Errorf("decode differs from Pillow's by max %d (limit %d), mean %.3f (limit %.1f)",
					maxAbs, lossyMaxAbs, meanAbs, lossyMeanAbs)
			}
		})
	}
}

func diff8(a, b []uint8) (int, float64) {
	maxAbs, sum := 0, 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		if d < 0 {
			d = -d
		}
		maxAbs = max(maxAbs, d)
		sum += d
	}
	return maxAbs, float64(sum) / float64(len(a))
}

func TestGoldenProcess(t *testing.T) {
	g := loadGolden(t)
	exact := 0
	for _, im := range g.Images {
		src := im.File
		if im.Lossy {
			// The processor's own exactness, on Pillow's decode of the file.
			src = im.RefPNG
		}
		for name, want := range im.Results {
			t.Run(filepath.Base(im.File)+"/"+name, func(t *testing.T) {
				img := decodeFile(t, src)
				p, err := NewProcessor(goldenConfigs[name])
				if err != nil {
					t.Fatal(err)
				}
				f, err := p.Process(img)
				if want.Error != "" {
					if err == nil {
						t.Fatalf("processed to grid %v; HF raises %q", f.Grid, want.Error)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if f.ResizedH != want.Resized[0] || f.ResizedW != want.Resized[1] {
					t.Fatalf("resized to %dx%d (h x w), HF %dx%d", f.ResizedH, f.ResizedW, want.Resized[0], want.Resized[1])
				}
				r, err := ResizeBicubic(img, f.ResizedW, f.ResizedH)
				if err != nil {
					t.Fatal(err)
				}
				if s := shaHex(r.Pix); s != want.ResizedSHA256 {
					t.Errorf("bicubic resize differs from Pillow's: sha256 %s, want %s", s, want.ResizedSHA256)
				}
				if f.Grid != want.Grid || f.Tokens() != want.Tokens {
					t.Errorf("grid %v tokens %d, HF %v %d", f.Grid, f.Tokens(), want.Grid, want.Tokens)
				}
				if f.Rows() != want.Shape[0] || f.RowLen != want.Shape[1] || len(f.Pixels) != want.Shape[0]*want.Shape[1] {
					t.Fatalf("pixel_values %dx%d (%d values), HF %v", f.Rows(), f.RowLen, len(f.Pixels), want.Shape)
				}
				for i, v := range want.First {
					if f.Pixels[i] != v {
						t.Errorf("pixel_values[%d] = %v, HF %v", i, f.Pixels[i], v)
					}
				}
				if s := floatsSHA(f.Pixels); s != want.PixelSHA256 {
					t.Errorf("pixel_values sha256 %s, HF %s", s, want.PixelSHA256)
				} else {
					exact++
				}
				if m := meanF32(f.Pixels); math.Abs(m-want.Mean) > 1e-9*math.Max(1, math.Abs(want.Mean)) {
					t.Errorf("pixel_values mean %v, HF %v", m, want.Mean)
				}
				if im.Lossy {
					lossyPixels(t, p, decodeFile(t, im.File), f, want)
				}
			})
		}
	}
	t.Logf("%d (image, config) pairs bit-exact", exact)
}

// lossyPixels compares the processor's output on Go's decode of a lossy
// file with HF's on Pillow's decode: the difference is the decoder's, spread
// by the resize and scaled by 1/(255·std).
func lossyPixels(t *testing.T, p *Processor, img *RGB, ref *Features, want goldenResult) {
	t.Helper()
	f, err := p.Process(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Grid != ref.Grid {
		t.Fatalf("lossy decode gives grid %v, reference %v", f.Grid, ref.Grid)
	}
	maxAbs, sum := 0.0, 0.0
	for i, v := range f.Pixels {
		d := math.Abs(float64(v - ref.Pixels[i]))
		maxAbs = math.Max(maxAbs, d)
		sum += d
	}
	meanAbs := sum / float64(len(f.Pixels))
	// In pixel_values units: a level is 1/(255·std) ≈ 0.0151 (CLIP) or 0.0078 (0.5).
	std := float64(p.Config().ImageStd[2])
	level := 1 / (255 * std)
	t.Logf("pixel_values vs HF on Pillow's decode: max |Δ| %.4f (%.1f levels), mean |Δ| %.5f, mean %v vs %v",
		maxAbs, maxAbs/level, meanAbs, meanF32(f.Pixels), want.Mean)
	if maxAbs > lossyMaxAbs*level*1.001 || meanAbs > lossyMeanAbs*level {
		t.Errorf("pixel_values differ by max %.4f, mean %.5f: over %d and %.2f levels", maxAbs, meanAbs, lossyMaxAbs, lossyMeanAbs)
	}
	if d := math.Abs(meanF32(f.Pixels) - want.Mean); d > lossyMeanAbs*level {
		t.Errorf("pixel_values mean off by %v", d)
	}
}

func meanF32(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s / float64(len(v))
}
