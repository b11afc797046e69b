package vision

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSmartResize(t *testing.T) {
	for _, c := range []struct {
		h, w, factor, min, max int
		wantH, wantW           int
		err                    string
	}{
		{448, 448, 28, 3136, 1003520, 448, 448, ""},
		// Python's round() is half to even: 70/28 = 2.5 → 2, 126/28 = 4.5 → 4.
		{70, 126, 28, 3136, 1003520, 56, 112, ""},
		{98, 42, 28, 3136, 1003520, 112, 56, ""}, // 3.5 → 4, 1.5 → 2
		// Below min_pixels: the ceil branch (the side rounds to 0 first).
		{10, 10, 28, 3136, 1003520, 56, 56, ""},
		// Above max_pixels: the floor branch.
		{3600, 3600, 28, 3136, 1003520, 980, 980, ""},
		{3600, 3600, 32, 65536, 16777216, 3584, 3584, ""}, // 112.5 → 112
		{1000, 5, 28, 3136, 1003520, 0, 0, ""},            // aspect exactly 200 is allowed
		{1001, 5, 28, 3136, 1003520, 0, 0, "aspect ratio"},
		{1, 4000, 28, 3136, 1003520, 0, 0, "aspect ratio"},
		{0, 10, 28, 3136, 1003520, 0, 0, "positive"},
	} {
		h, w, err := SmartResize(c.h, c.w, c.factor, c.min, c.max)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("SmartResize(%d, %d): %d %d %v, want error with %q", c.h, c.w, h, w, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("SmartResize(%d, %d): %v", c.h, c.w, err)
			continue
		}
		if c.wantH == 0 {
			if h%c.factor != 0 || w%c.factor != 0 {
				t.Errorf("SmartResize(%d, %d) = %d, %d: not multiples of %d", c.h, c.w, h, w, c.factor)
			}
			continue
		}
		if h != c.wantH || w != c.wantW {
			t.Errorf("SmartResize(%d, %d) = %d, %d, want %d, %d", c.h, c.w, h, w, c.wantH, c.wantW)
		}
	}
}

// The released checkpoints' preprocessor_config.json (Qwen/Qwen2.5-VL-7B-Instruct,
// Qwen/Qwen3-VL-8B-Instruct).
const (
	qwen25Preprocessor = `{"min_pixels": 3136, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
 "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
 "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5_VLProcessor"}`
	qwen3Preprocessor = `{"size": {"longest_edge": 16777216, "shortest_edge": 65536}, "patch_size": 16,
 "temporal_patch_size": 2, "merge_size": 2, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5],
 "processor_class": "Qwen3VLProcessor", "image_processor_type": "Qwen2VLImageProcessorFast"}`
)

func TestParseConfig(t *testing.T) {
	c, err := ParseConfig([]byte(qwen25Preprocessor))
	if err != nil {
		t.Fatal(err)
	}
	want := Qwen2VLConfig()
	want.MaxPixels = 12845056
	if c != want {
		t.Errorf("Qwen2.5-VL config %+v, want %+v", c, want)
	}
	c, err = ParseConfig([]byte(qwen3Preprocessor))
	if err != nil {
		t.Fatal(err)
	}
	if c != Qwen3VLConfig() {
		t.Errorf("Qwen3-VL config %+v, want %+v", c, Qwen3VLConfig())
	}
	if c.RowLen() != 1536 {
		t.Errorf("Qwen3-VL row length %d, want 3·2·16·16 = 1536", c.RowLen())
	}
	// Top-level min/max_pixels override size, as in HF.
	c, err = ParseConfig([]byte(`{"size": {"shortest_edge": 100, "longest_edge": 200000}, "max_pixels": 300000}`))
	if err != nil || c.MinPixels != 100 || c.MaxPixels != 300000 {
		t.Errorf("override: %+v %v", c, err)
	}
	c, err = ParseConfig([]byte(`{"image_mean": 0.5, "image_std": 0.25}`))
	if err != nil || c.ImageMean != [3]float32{0.5, 0.5, 0.5} || c.ImageStd != [3]float32{0.25, 0.25, 0.25} {
		t.Errorf("scalar mean/std: %+v %v", c, err)
	}
	for _, bad := range []struct{ json, want string }{
		{`{"patch_size": 0}`, "patch_size 0"},
		{`{"merge_size": -2}`, "merge_size -2"},
		{`{"min_pixels": 5000, "max_pixels": 4000}`, "above max_pixels"},
		{`{"image_mean": [0.5, 0.5]}`, "image_mean: want 3 values"},
		{`{"image_std": [0.5, 0, 0.5]}`, "image_std[1] is 0"},
		{`{"resample": 2}`, "only 3 (bicubic)"},
		{`{"max_pixels": 67108864, "temporal_patch_size": 2}`, "× temporal_patch_size 2 is above"},
		{`{"min_pixels": 1e9}`, "cannot unmarshal"},
		{`{"rescale_factor": -1}`, "rescale_factor"},
		{`{"patch_size": "14"}`, "cannot unmarshal"},
		{`{`, "preprocessor config"},
	} {
		_, err := ParseConfig([]byte(bad.json))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseConfig(%s): %v, want an error with %q", bad.json, err, bad.want)
		}
	}
}

func TestProcessLayout(t *testing.T) {
	// A 56×28 image with no resize: pixel (x, y) channel c holds a
	// distinct value, so every pixel_values entry says where it came from.
	img := NewRGB(56, 28)
	for y := range 28 {
		for x := range 56 {
			for c := range 3 {
				img.Pix[3*(y*56+x)+c] = uint8((x + 2*y + 85*c) % 256)
			}
		}
	}
	c := Qwen2VLConfig()
	c.DoNormalize, c.DoRescale, c.DoResize = false, false, false
	p, err := NewProcessor(c)
	if err != nil {
		t.Fatal(err)
	}
	f, err := p.Process(img)
	if err != nil {
		t.Fatal(err)
	}
	if f.Grid != [3]int{1, 2, 4} || f.Tokens() != 2 || f.Rows() != 8 || f.RowLen != 3*2*14*14 {
		t.Fatalf("grid %v tokens %d rows %d rowlen %d", f.Grid, f.Tokens(), f.Rows(), f.RowLen)
	}
	// Rows go (merged block row, merged block column, row in block, column
	// in block); a row is (channel, frame, y, x).
	for r := range 8 {
		bw, mh, mw := r/4, (r/2)%2, r%2
		y0, x0 := mh*14, (bw*2+mw)*14
		for ch := range 3 {
			for tp := range 2 {
				for py := range 14 {
					for px := range 14 {
						got := f.Pixels[r*f.RowLen+((ch*2+tp)*14+py)*14+px]
						want := float32(img.Pix[3*((y0+py)*56+x0+px)+ch])
						if got != want {
							t.Fatalf("row %d c%d t%d (%d,%d): %v, want %v", r, ch, tp, py, px, got, want)
						}
					}
				}
			}
		}
	}
}

func TestPlaceholders(t *testing.T) {
	q := QwenImagePlaceholders
	S, P, E := q.VisionStart, q.Pad, q.VisionEnd
	ids := []int{1, S, P, E, 2, S, P, E, 3}
	got, err := ExpandPlaceholders(ids, q, []int{3, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{1, S, P, P, P, E, 2, S, P, P, E, 3}
	if !slices.Equal(got, want) {
		t.Fatalf("expanded %v, want %v", got, want)
	}
	// Already expanded history stays; a new collapsed block is expanded.
	more := append(slices.Clone(got), S, P, E)
	got2, err := ExpandPlaceholders(more, q, []int{3, 2, 4})
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := CountPlaceholders(got2, q); !slices.Equal(n, []int{3, 2, 4}) {
		t.Fatalf("counts %v", n)
	}
	if c, _ := CollapsePlaceholders(got2, q); !slices.Equal(c, append(slices.Clone(ids), S, P, E)) {
		t.Fatalf("collapsed %v", c)
	}
	// A video block is not an image block.
	v := QwenVideoPlaceholders
	mixed := []int{S, v.Pad, v.Pad, E, S, P, E}
	if n, err := CountPlaceholders(mixed, q); err != nil || !slices.Equal(n, []int{1}) {
		t.Fatalf("image blocks of %v: %v %v", mixed, n, err)
	}
	for _, bad := range []struct {
		ids    []int
		counts []int
		want   string
	}{
		{[]int{1, P, 2}, nil, "outside a vision block"},
		{[]int{S, P, P, 2}, []int{2}, "not closed"},
		{[]int{S, P, E}, []int{1, 2}, "1 vision blocks in the ids, 2 placeholder counts"},
		{[]int{S, P, P, E}, []int{3}, "has 2 pad tokens, want 1 (to expand) or 3"},
		{[]int{S, P, E}, []int{0}, "placeholder count 0"},
	} {
		_, err := ExpandPlaceholders(bad.ids, q, bad.counts)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ExpandPlaceholders(%v, %v): %v, want error with %q", bad.ids, bad.counts, err, bad.want)
		}
	}
}

// TestRopeQwen25Docstring is the example in the docstring of HF's
// Qwen2_5_VLModel.get_rope_index (modeling_qwen2_5_vl.py): a video of 3
// temporal patches of 2×2 merged patches, tokens_per_second 25 and 2 seconds
// a temporal patch, then 5 text tokens. The docstring leaves out the
// <|vision_start|> the code needs in front of the video; with it every
// position is one higher, and <|vision_end|> is the first text token.
func TestRopeQwen25Docstring(t *testing.T) {
	c := QwenRopeConfig(Qwen25VL)
	c.TokensPerSecond = 25
	ids := []int{c.VisionStartTokenID}
	for range 12 {
		ids = append(ids, c.VideoTokenID)
	}
	ids = append(ids, 151653, 7, 7, 7, 7)
	pos, delta, err := c.RopeIndex(ids, nil, Vision{Videos: [][3]int{{3, 4, 4}}, SecondPerGridT: []float32{2}})
	if err != nil {
		t.Fatal(err)
	}
	shift := func(v []int64) []int64 {
		out := []int64{0}
		for _, x := range v {
			out = append(out, x+1)
		}
		return out
	}
	text := []int64{101, 102, 103, 104, 105}
	want := [3][]int64{
		shift(append([]int64{0, 0, 0, 0, 50, 50, 50, 50, 100, 100, 100, 100}, text...)),
		shift(append([]int64{0, 0, 1, 1, 0, 0, 1, 1, 0, 0, 1, 1}, text...)),
		shift(append([]int64{0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1}, text...)),
	}
	for a := range 3 {
		if !slices.Equal(pos[a], want[a]) {
			t.Errorf("row %d: %v\nwant   %v", a, pos[a], want[a])
		}
	}
	if delta != 107-int64(len(ids)) {
		t.Errorf("delta %d", delta)
	}
	// Images have no duration: Qwen2.5-VL's temporal index stays 0.
	img := []int{c.VisionStartTokenID, c.ImageTokenID, c.ImageTokenID, 151653}
	p2, _, err := c.RopeIndex(img, nil, Vision{Images: [][3]int{{1, 2, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p2[0], []int64{0, 1, 1, 3}) || !slices.Equal(p2[2], []int64{0, 1, 2, 3}) {
		t.Errorf("image positions %v", p2)
	}
}

// TestRopeQwen3Video: Qwen3-VL's processor writes a video of t temporal
// patches as t blocks, each behind its timestamp text, and get_rope_index
// splits video_grid_thw to match (repeat_interleave by t, t set to 1), so
// every frame's temporal index is 0 from its own start.
func TestRopeQwen3Video(t *testing.T) {
	c := QwenRopeConfig(Qwen3VL)
	S, V, E := c.VisionStartTokenID, c.VideoTokenID, 151653
	ids := []int{9, S, V, V, E, 8, S, V, V, E}
	pos, _, err := c.RopeIndex(ids, nil, Vision{Videos: [][3]int{{2, 2, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	want := [3][]int64{
		{0, 1, 2, 2, 4, 5, 6, 7, 7, 9},
		{0, 1, 2, 2, 4, 5, 6, 7, 7, 9},
		{0, 1, 2, 3, 4, 5, 6, 7, 8, 9},
	}
	if !rowsEqual(pos[:], want[:]) {
		t.Errorf("got  %v\nwant %v", pos, want)
	}
	// Qwen2-VL on the same ids wants one block of 2 frames.
	if _, _, err := QwenRopeConfig(Qwen2VL).RopeIndex(ids, nil, Vision{Videos: [][3]int{{2, 2, 4}}}); err == nil {
		t.Error("Qwen2-VL accepted two one-frame blocks for a two-frame video")
	}
}

func TestVerlPositionIDs(t *testing.T) {
	c := QwenRopeConfig(Qwen2VL)
	S, P, E := c.VisionStartTokenID, c.ImageTokenID, 151653
	ids := []int{0, 0, 5, S, P, P, E, 6}
	mask := []int{0, 0, 1, 1, 1, 1, 1, 1}
	p, err := c.VerlPositionIDs(ids, mask, Vision{Images: [][3]int{{1, 2, 4}}})
	if err != nil {
		t.Fatal(err)
	}
	want := [4][]int64{
		{1, 1, 0, 1, 2, 3, 4, 5},
		{1, 1, 0, 1, 2, 2, 4, 5},
		{1, 1, 0, 1, 2, 2, 4, 5},
		{1, 1, 0, 1, 2, 3, 4, 5},
	}
	if !rowsEqual(p[:], want[:]) {
		t.Errorf("got  %v\nwant %v", p, want)
	}
	for _, bad := range []struct {
		ids  []int
		vis  Vision
		want string
	}{
		{[]int{S, P, E}, Vision{}, "1 image and 0 video blocks"},
		{[]int{S, P, E}, Vision{Images: [][3]int{{1, 2, 4}}}, "needs 2 pad tokens"},
		{[]int{S, P, 7, E}, Vision{Images: [][3]int{{1, 2, 4}}}, "position 2 holds 7"},
		{[]int{S, P, E}, Vision{Images: [][3]int{{1, 1, 4}}}, "multiples of merge size"},
	} {
		if _, err := c.VerlPositionIDs(bad.ids, nil, bad.vis); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v %v: %v, want error with %q", bad.ids, bad.vis, err, bad.want)
		}
	}
}

// pngHeader is a PNG signature and an IHDR chunk claiming w×h, and no data:
// what a decompression bomb's header looks like.
func pngHeader(w, h uint32) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = 8, 6
	chunk := append([]byte("IHDR"), ihdr...)
	binary.Write(&b, binary.BigEndian, uint32(13))
	b.Write(chunk)
	binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(chunk))
	return b.Bytes()
}

func TestDecodeLimits(t *testing.T) {
	_, err := Decode(pngHeader(100000, 100000), Limits{})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "100000x100000") {
		t.Errorf("bomb header: %v", err)
	}
	var buf bytes.Buffer
	small := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	small.Set(3, 4, color.NRGBA{10, 20, 30, 255})
	if err := png.Encode(&buf, small); err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(buf.Bytes(), Limits{MaxPixels: 1199}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("1200 pixels under a 1199 cap: %v", err)
	}
	if _, err := Decode(buf.Bytes(), Limits{MaxBytes: int64(buf.Len() - 1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the byte cap: %v", err)
	}
	img, err := Decode(buf.Bytes(), Limits{MaxPixels: 1200})
	if err != nil {
		t.Fatal(err)
	}
	if i := 3 * (4*40 + 3); !bytes.Equal(img.Pix[i:i+3], []byte{10, 20, 30}) || img.Format != "png" {
		t.Errorf("pixel %v format %q", img.Pix[i:i+3], img.Format)
	}
	if _, err := Decode(buf.Bytes()[:buf.Len()/2], Limits{}); err == nil || !strings.Contains(err.Error(), "decoding png") {
		t.Errorf("truncated: %v", err)
	}
	if _, err := Decode([]byte("BM not a bitmap we take"), Limits{}); !errors.Is(err, ErrFormat) {
		t.Errorf("bmp: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, name := range []string{"rgba_96x80.png", "palette_trns_77x55.png", "gif_anim_50x40.gif", "gif_trns_90x70.gif",
		"webp_lossless_rgba_64x64.webp", "webp_lossy_99x67.webp", "jpeg_10x10.jpg", "jpeg_prog_200x300.jpg"} {
		data, err := os.ReadFile(filepath.Join("testdata", "images", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(pngHeader(1<<20, 1<<20))
	f.Add([]byte("RIFF\x00\x00\x00\x00WEBPVP8X"))
	f.Add([]byte("GIF89a\xff\xff\xff\xff"))
	lim := Limits{MaxBytes: 1 << 20, MaxPixels: 1 << 20}
	f.Fuzz(func(t *testing.T, data []byte) {
		img, err := Decode(data, lim)
		if err != nil {
			return
		}
		if img.W <= 0 || img.H <= 0 || int64(img.W)*int64(img.H) > lim.MaxPixels || len(img.Pix) != 3*img.W*img.H {
			t.Fatalf("decoded %dx%d with %d bytes under %d pixels", img.W, img.H, len(img.Pix), lim.MaxPixels)
		}
	})
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(qwen25Preprocessor))
	f.Add([]byte(qwen3Preprocessor))
	f.Add([]byte(`{"size": {"min_pixels": 1, "max_pixels": 1}, "patch_size": 1, "merge_size": 1}`))
	f.Add([]byte(`{"image_mean": 1e40, "rescale_factor": 1e-320}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		p, err := NewProcessor(c)
		if err != nil {
			t.Fatalf("ParseConfig accepted a config NewProcessor refuses: %v", err)
		}
		// Grids for a few shapes never panic and stay whole merged patches.
		for _, s := range [][2]int{{1, 1}, {28, 28}, {480, 640}, {5, 1000}} {
			g, h, w, err := p.Grid(s[0], s[1])
			if err == nil && (h%c.Factor() != 0 || w%c.Factor() != 0 || g[1]%c.MergeSize != 0) {
				t.Fatalf("%v: grid %v from %dx%d", s, g, w, h)
			}
		}
	})
}

func FuzzRopeIndex(f *testing.F) {
	f.Add([]byte{1, 2, 0, 0, 3, 4}, uint8(2), uint8(4), uint8(0))
	f.Add([]byte{2, 1, 1, 3, 2, 0, 3}, uint8(2), uint8(2), uint8(1))
	f.Fuzz(func(t *testing.T, toks []byte, gh, gw, fam uint8) {
		c := QwenRopeConfig(Family(fam%3 + 1))
		// Byte b is a token: 0 image pad, 1 video pad, 2 vision start, 3 vision end, else text.
		ids := make([]int, len(toks))
		for i, b := range toks {
			ids[i] = [...]int{c.ImageTokenID, c.VideoTokenID, c.VisionStartTokenID, 151653, 5, 6}[b%6]
		}
		g := [3]int{1, int(gh%8) + 1, int(gw%8) + 1}
		pos, _, err := c.RopeIndex(ids, nil, Vision{Images: [][3]int{g}, Videos: [][3]int{g}})
		if err == nil && len(pos[0]) != len(ids) {
			t.Fatalf("%d positions for %d ids", len(pos[0]), len(ids))
		}
	})
}

func rowsEqual(a, b [][]int64) bool {
	return slices.EqualFunc(a, b, func(x, y []int64) bool { return slices.Equal(x, y) })
}

func FuzzProcess(f *testing.F) {
	f.Add(uint16(40), uint16(30), uint8(14), uint8(2), uint8(2), uint32(3136), uint32(1003520), []byte{1, 2, 3})
	f.Add(uint16(1), uint16(300), uint8(16), uint8(2), uint8(2), uint32(65536), uint32(16777216), []byte{255})
	f.Add(uint16(500), uint16(3), uint8(1), uint8(1), uint8(1), uint32(1), uint32(64), []byte{})
	f.Fuzz(func(t *testing.T, w, h uint16, patch, merge, temporal uint8, minPx, maxPx uint32, seed []byte) {
		c := Qwen2VLConfig()
		c.PatchSize, c.MergeSize, c.TemporalPatchSize = int(patch%32)+1, int(merge%4)+1, int(temporal%3)+1
		// Keep the work small: at most 2^16 pixels out, 2^16 in.
		c.MinPixels, c.MaxPixels = int(minPx%(1<<16))+1, int(maxPx%(1<<16))+1
		if c.Validate() != nil {
			return
		}
		img := NewRGB(int(w%256)+1, int(h%256)+1)
		for i := range img.Pix {
			if len(seed) > 0 {
				img.Pix[i] = seed[i%len(seed)] + uint8(i)
			}
		}
		p, err := NewProcessor(c)
		if err != nil {
			t.Fatal(err)
		}
		feat, err := p.Process(img)
		if err != nil {
			return
		}
		if len(feat.Pixels) != feat.Rows()*feat.RowLen || feat.RowLen != c.RowLen() ||
			feat.Tokens()*c.MergeSize*c.MergeSize != feat.Rows() {
			t.Fatalf("grid %v rows %d rowlen %d pixels %d", feat.Grid, feat.Rows(), feat.RowLen, len(feat.Pixels))
		}
	})
}
