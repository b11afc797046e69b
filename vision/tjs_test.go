package vision

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// tjs_golden.json is written by testdata/gen_tjs.mjs with transformers.js
// (@huggingface/transformers 4.3.2): its Qwen2VLImageProcessor and
// Qwen2VLForConditionalGeneration.get_rope_index.
type tjsGolden struct {
	Version string `json:"transformers_js"`
	Images  []struct {
		File    string `json:"file"`
		Width   int    `json:"width"`
		Height  int    `json:"height"`
		Results map[string]struct {
			Error  string `json:"error"`
			Grid   [3]int `json:"grid"`
			Tokens int    `json:"tokens"`
			Shape  [2]int `json:"shape"`
		} `json:"results"`
	} `json:"images"`
	Rope []struct {
		Name        string     `json:"name"`
		IDs         []int      `json:"ids"`
		Mask        []int      `json:"mask"`
		Images      [][3]int   `json:"images"`
		Videos      [][3]int   `json:"videos"`
		PositionIDs [3][]int64 `json:"position_ids"`
		Delta       int64      `json:"delta"`
	} `json:"rope"`
}

// Where transformers.js and transformers (Python) disagree on a grid, this
// package follows Python (checked against golden.json). Each entry says why.
const (
	whyTies = "ties: JS Math.round rounds x.5 up, Python's round() to even"
	whyThin = "a side below the factor: transformers.js first scales the image up so that side equals the factor " +
		"(image_processors_utils.js smart_resize); Python's smart_resize has no such step"
)

var tjsGridDisagreements = map[string]string{
	"rgb_3600x3600_xor.png/qwen3vl":           whyTies + " (3600/32 = 112.5)",
	"rgb_70x126_smooth.png/qwen2vl":           whyTies + " (70/28 = 2.5, 126/28 = 4.5)",
	"rgb_1232x1176_smooth.png/qwen3vl":        whyTies + " (1232/32 = 38.5)",
	"webp_lossless_noise_130x70.webp/qwen2vl": whyTies + " (70/28 = 2.5)",
	"gif_trns_90x70.gif/qwen2vl":              whyTies + " (70/28 = 2.5)",
	"rgb_1000x5_xor.png/qwen2vl":              whyThin,
	"rgb_1000x5_xor.png/qwen3vl":              whyThin,
	"rgb_5x1000_noise.png/qwen2vl":            whyThin,
	"rgb_5x1000_noise.png/qwen3vl":            whyThin,
	"rgb_10x1500_xor.png/qwen2vl":             whyThin,
	"rgb_10x1500_xor.png/qwen3vl":             whyThin,
	"rgb_12x2000_noise.png/qwen2vl":           whyThin,
	"rgb_12x2000_noise.png/qwen3vl":           whyThin,
	"rgb_300x2_xor.png/qwen2vl":               whyThin,
	"rgb_300x2_xor.png/qwen3vl":               whyThin,
}

func loadTJS(t *testing.T) tjsGolden {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tjs_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g tjsGolden
	if err := json.Unmarshal(data, &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestTransformersJSGrids(t *testing.T) {
	g := loadTJS(t)
	if len(g.Images) < 50 {
		t.Fatalf("%d images in tjs_golden.json", len(g.Images))
	}
	agree := 0
	for _, im := range g.Images {
		for name, want := range im.Results {
			key := filepath.Base(im.File) + "/" + name
			p, err := NewProcessor(goldenConfigs[name])
			if err != nil {
				t.Fatal(err)
			}
			grid, _, _, err := p.Grid(im.Height, im.Width)
			f := &Features{Grid: grid, MergeSize: p.Config().MergeSize}
			same := (err != nil) == (want.Error != "") && (err != nil || (grid == want.Grid && f.Tokens() == want.Tokens))
			why, listed := tjsGridDisagreements[key]
			switch {
			case same && listed:
				t.Errorf("%s: now agrees with transformers.js (grid %v); drop it from the disagreements (%s)", key, grid, why)
			case !same && !listed:
				t.Errorf("%s: grid %v tokens %d err %v; transformers.js grid %v tokens %d err %q",
					key, grid, f.Tokens(), err, want.Grid, want.Tokens, want.Error)
			case same:
				agree++
				if err == nil && want.Shape != [2]int{f.Rows(), p.Config().RowLen()} {
					t.Errorf("%s: pixel_values shape %v, transformers.js %v", key, [2]int{f.Rows(), p.Config().RowLen()}, want.Shape)
				}
			}
		}
	}
	t.Logf("transformers.js %s: %d grids agree, %d differ for the listed reasons", g.Version, agree, len(tjsGridDisagreements))
}

func TestTransformersJSRopeIndex(t *testing.T) {
	g := loadTJS(t)
	for _, c := range g.Rope {
		t.Run(c.Name, func(t *testing.T) {
			hasVideo := len(c.Videos) > 0
			for _, fam := range []Family{Qwen2VL, Qwen25VL, Qwen3VL} {
				if hasVideo && fam != Qwen2VL {
					// transformers.js has Qwen2-VL's temporal index only:
					// Qwen2.5-VL scales it by time and Qwen3-VL splits videos
					// into frames (TestRopeQwen25Docstring, TestRopeQwen3Video).
					continue
				}
				pos, delta, err := QwenRopeConfig(fam).RopeIndex(c.IDs, c.Mask, Vision{Images: c.Images, Videos: c.Videos})
				if err != nil {
					t.Fatalf("%v: %v", fam, err)
				}
				for a := range 3 {
					for i := range c.IDs {
						want := c.PositionIDs[a][i]
						if c.Mask != nil && c.Mask[i] == 0 && (len(c.Images)+len(c.Videos) > 0) {
							// transformers.js leaves masked positions 0; HF
							// Python fills them with 1 (torch.ones, then the
							// unmasked ones written), and so does verl.
							want = 1
						}
						if pos[a][i] != want {
							t.Fatalf("%v: position_ids[%d][%d] = %d, transformers.js %d\n got %v\nwant %v",
								fam, a, i, pos[a][i], want, pos, c.PositionIDs)
						}
					}
				}
				wantDelta := c.Delta
				if c.Mask != nil && len(c.Images)+len(c.Videos) == 0 {
					// transformers.js' text-only branch adds the sequence
					// length where HF subtracts it (max + 1 − L).
					wantDelta = c.Delta - 2*int64(len(c.IDs))
				}
				if delta != wantDelta {
					t.Errorf("%v: rope delta %d, want %d (transformers.js %d)", fam, delta, wantDelta, c.Delta)
				}
			}
		})
	}
}
