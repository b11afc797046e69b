package vision

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

// Config is a Qwen-VL image processor's preprocessor_config.json: the
// fields HF's Qwen2VLImageProcessor reads (Qwen2-VL, Qwen2.5-VL and Qwen3-VL
// all use it, with different values).
type Config struct {
	PatchSize         int
	MergeSize         int
	TemporalPatchSize int
	// MinPixels and MaxPixels bound the resized area (HF's size.shortest_edge
	// and size.longest_edge; the older top-level min_pixels and max_pixels
	// override them, as in HF).
	MinPixels, MaxPixels int
	ImageMean, ImageStd  [3]float32
	RescaleFactor        float64
	DoResize             bool
	DoRescale            bool
	DoNormalize          bool
}

// OpenAI CLIP's mean and std (transformers' OPENAI_CLIP_MEAN/STD), the
// Qwen2-VL and Qwen2.5-VL defaults.
var (
	clipMean = [3]float32{0.48145466, 0.4578275, 0.40821073}
	clipStd  = [3]float32{0.26862954, 0.26130258, 0.27577711}
)

// Qwen2VLConfig is Qwen2VLImageProcessor's defaults, which Qwen2-VL and
// Qwen2.5-VL use: 14-pixel patches merged 2×2, temporal patch 2, between
// 56·56 and 28·28·1280 pixels, CLIP's mean and std. (The Qwen2.5-VL
// checkpoints' own preprocessor_config.json raise max_pixels to 12845056;
// load it with ParseConfig to get that.)
func Qwen2VLConfig() Config {
	return Config{
		PatchSize: 14, MergeSize: 2, TemporalPatchSize: 2,
		MinPixels: 56 * 56, MaxPixels: 28 * 28 * 1280,
		ImageMean: clipMean, ImageStd: clipStd,
		RescaleFactor: 1.0 / 255, DoResize: true, DoRescale: true, DoNormalize: true,
	}
}

// Qwen3VLConfig is the Qwen3-VL checkpoints' preprocessor_config.json:
// 16-pixel patches merged 2×2, temporal patch 2, size.shortest_edge 65536
// and size.longest_edge 16777216 pixels, mean and std 0.5.
func Qwen3VLConfig() Config {
	return Config{
		PatchSize: 16, MergeSize: 2, TemporalPatchSize: 2,
		MinPixels: 65536, MaxPixels: 16777216,
		ImageMean: [3]float32{0.5, 0.5, 0.5}, ImageStd: [3]float32{0.5, 0.5, 0.5},
		RescaleFactor: 1.0 / 255, DoResize: true, DoRescale: true, DoNormalize: true,
	}
}

// Limits on a config's numbers, far above any released model's, so that a
// hostile config cannot ask for absurd patch rows.
// maxFrameValues bounds pixels × temporal_patch_size, the float32 count of
// one image's pixel_values over 3 (2^26: 768 MiB of pixel_values); the
// released configs ask for at most 16777216 × 2.
const (
	maxPatchSize    = 1024
	maxMergeSize    = 64
	maxTemporal     = 16
	maxConfigPixels = 1 << 26
	maxFrameValues  = 1 << 26
)

// Validate says what is wrong with c, if anything.
func (c Config) Validate() error {
	var errs []error
	if c.PatchSize <= 0 || c.PatchSize > maxPatchSize {
		errs = append(errs, fmt.Errorf("patch_size %d: want 1..%d", c.PatchSize, maxPatchSize))
	}
	if c.MergeSize <= 0 || c.MergeSize > maxMergeSize {
		errs = append(errs, fmt.Errorf("merge_size %d: want 1..%d", c.MergeSize, maxMergeSize))
	}
	if c.TemporalPatchSize <= 0 || c.TemporalPatchSize > maxTemporal {
		errs = append(errs, fmt.Errorf("temporal_patch_size %d: want 1..%d", c.TemporalPatchSize, maxTemporal))
	}
	if c.MinPixels <= 0 || c.MinPixels > maxConfigPixels {
		errs = append(errs, fmt.Errorf("min_pixels (size.shortest_edge) %d: want 1..%d", c.MinPixels, maxConfigPixels))
	}
	if c.MaxPixels <= 0 || c.MaxPixels > maxConfigPixels {
		errs = append(errs, fmt.Errorf("max_pixels (size.longest_edge) %d: want 1..%d", c.MaxPixels, maxConfigPixels))
	}
	if int64(c.MaxPixels)*int64(max(c.TemporalPatchSize, 1)) > maxFrameValues {
		errs = append(errs, fmt.Errorf("max_pixels %d × temporal_patch_size %d is above %d", c.MaxPixels, c.TemporalPatchSize, maxFrameValues))
	}
	if c.MinPixels > c.MaxPixels {
		errs = append(errs, fmt.Errorf("min_pixels %d is above max_pixels %d", c.MinPixels, c.MaxPixels))
	}
	for i, s := range c.ImageStd {
		if s == 0 || math.IsNaN(float64(s)) || math.IsInf(float64(s), 0) {
			errs = append(errs, fmt.Errorf("image_std[%d] is %v", i, s))
		}
	}
	for i, m := range c.ImageMean {
		if math.IsNaN(float64(m)) || math.IsInf(float64(m), 0) {
			errs = append(errs, fmt.Errorf("image_mean[%d] is %v", i, m))
		}
	}
	if !(c.RescaleFactor > 0) || math.IsInf(c.RescaleFactor, 0) {
		errs = append(errs, fmt.Errorf("rescale_factor %v: want a positive number", c.RescaleFactor))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("vision: preprocessor config: %w", err)
	}
	return nil
}

// RowLen is the length of one row of pixel_values: channels (3) × temporal
// patch × patch².
func (c Config) RowLen() int { return 3 * c.TemporalPatchSize * c.PatchSize * c.PatchSize }

// Factor is the side every resized dimension is a multiple of: patch × merge.
func (c Config) Factor() int { return c.PatchSize * c.MergeSize }

// rawConfig is preprocessor_config.json as written; pointers tell absent
// from zero.
type rawConfig struct {
	PatchSize         *int             `json:"patch_size"`
	MergeSize         *int             `json:"merge_size"`
	TemporalPatchSize *int             `json:"temporal_patch_size"`
	MinPixels         *int             `json:"min_pixels"`
	MaxPixels         *int             `json:"max_pixels"`
	Size              *rawSize         `json:"size"`
	ImageMean         *json.RawMessage `json:"image_mean"`
	ImageStd          *json.RawMessage `json:"image_std"`
	RescaleFactor     *float64         `json:"rescale_factor"`
	DoResize          *bool            `json:"do_resize"`
	DoRescale         *bool            `json:"do_rescale"`
	DoNormalize       *bool            `json:"do_normalize"`
	Resample          *int             `json:"resample"`
	ImageProcessor    string           `json:"image_processor_type"`
}

type rawSize struct {
	ShortestEdge *int `json:"shortest_edge"`
	LongestEdge  *int `json:"longest_edge"`
	MinPixels    *int `json:"min_pixels"`
	MaxPixels    *int `json:"max_pixels"`
}

// pilBicubic is PIL.Image.Resampling.BICUBIC, the only resample supported.
const pilBicubic = 3

// ParseConfig reads a preprocessor_config.json. Fields it omits take
// Qwen2VLImageProcessor's defaults (Qwen2VLConfig), as in HF; the result is
// validated.
func ParseConfig(data []byte) (Config, error) {
	var r rawConfig
	if err := json.Unmarshal(data, &r); err != nil {
		return Config{}, fmt.Errorf("vision: preprocessor config: %w", err)
	}
	c := Qwen2VLConfig()
	setInt := func(dst *int, src *int) {
		if src != nil {
			*dst = *src
		}
	}
	setInt(&c.PatchSize, r.PatchSize)
	setInt(&c.MergeSize, r.MergeSize)
	setInt(&c.TemporalPatchSize, r.TemporalPatchSize)
	if r.Size != nil {
		setInt(&c.MinPixels, r.Size.MinPixels)
		setInt(&c.MaxPixels, r.Size.MaxPixels)
		setInt(&c.MinPixels, r.Size.ShortestEdge)
		setInt(&c.MaxPixels, r.Size.LongestEdge)
	}
	setInt(&c.MinPixels, r.MinPixels)
	setInt(&c.MaxPixels, r.MaxPixels)
	var err error
	if r.ImageMean != nil {
		if c.ImageMean, err = parseTriple(*r.ImageMean); err != nil {
			return Config{}, fmt.Errorf("vision: preprocessor config: image_mean: %w", err)
		}
	}
	if r.ImageStd != nil {
		if c.ImageStd, err = parseTriple(*r.ImageStd); err != nil {
			return Config{}, fmt.Errorf("vision: preprocessor config: image_std: %w", err)
		}
	}
	if r.RescaleFactor != nil {
		c.RescaleFactor = *r.RescaleFactor
	}
	for _, b := range []struct {
		dst *bool
		src *bool
	}{{&c.DoResize, r.DoResize}, {&c.DoRescale, r.DoRescale}, {&c.DoNormalize, r.DoNormalize}} {
		if b.src != nil {
			*b.dst = *b.src
		}
	}
	if r.Resample != nil && *r.Resample != pilBicubic {
		return Config{}, fmt.Errorf("vision: preprocessor config: resample %d: only 3 (bicubic) is supported", *r.Resample)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// parseTriple reads a mean or std: a list of three numbers, or one number
// for all channels (HF accepts both).
func parseTriple(raw json.RawMessage) ([3]float32, error) {
	var one float64
	if err := json.Unmarshal(raw, &one); err == nil {
		f := float32(one)
		return [3]float32{f, f, f}, nil
	}
	var list []float64
	if err := json.Unmarshal(raw, &list); err != nil {
		return [3]float32{}, fmt.Errorf("want a number or a list of 3 numbers: %w", err)
	}
	if len(list) != 3 {
		return [3]float32{}, fmt.Errorf("want 3 values (one a channel), got %d", len(list))
	}
	// numpy casts the list to the image's dtype, float32.
	return [3]float32{float32(list[0]), float32(list[1]), float32(list[2])}, nil
}

// SmartResize is transformers' smart_resize (image_processing_qwen2_vl.py):
// the height and width, multiples of factor, nearest the image's with an
// area within [minPixels, maxPixels]. Python's round() rounds half to even
// and so does this. Like HF it refuses an aspect ratio above 200.
func SmartResize(height, width, factor, minPixels, maxPixels int) (int, int, error) {
	if height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("vision: smart_resize: image is %dx%d (width x height); both sides must be positive", width, height)
	}
	if factor <= 0 {
		return 0, 0, fmt.Errorf("vision: smart_resize: factor %d must be positive", factor)
	}
	h, w, f := float64(height), float64(width), float64(factor)
	if r := math.Max(h, w) / math.Min(h, w); r > 200 {
		return 0, 0, fmt.Errorf("vision: smart_resize: absolute aspect ratio must be smaller than 200, got %v (image %dx%d)", r, width, height)
	}
	hBar := int(math.RoundToEven(h/f)) * factor
	wBar := int(math.RoundToEven(w/f)) * factor
	// height*width is an exact integer product in Python; so it is here for
	// any image Decode accepts (below 2^53).
	area := float64(height) * float64(width)
	switch {
	case hBar*wBar > maxPixels:
		beta := math.Sqrt(area / float64(maxPixels))
		hBar = max(factor, int(math.Floor(h/beta/f))*factor)
		wBar = max(factor, int(math.Floor(w/beta/f))*factor)
	case hBar*wBar < minPixels:
		beta := math.Sqrt(float64(minPixels) / area)
		hBar = int(math.Ceil(h*beta/f)) * factor
		wBar = int(math.Ceil(w*beta/f)) * factor
	}
	if hBar <= 0 || wBar <= 0 {
		return 0, 0, fmt.Errorf("vision: smart_resize: image %dx%d resizes to %dx%d", width, height, wBar, hBar)
	}
	return hBar, wBar, nil
}

// Features is one image through the processor: HF's image_grid_thw row and
// its rows of pixel_values.
type Features struct {
	// Grid is image_grid_thw: temporal, height and width in patches.
	Grid [3]int
	// Pixels is pixel_values, Grid[0]·Grid[1]·Grid[2] rows of RowLen
	// float32, in the processor's patch order.
	Pixels []float32
	// ResizedH and ResizedW are the image's size after smart_resize.
	ResizedH, ResizedW int
	// RowLen is the length of one row of Pixels.
	RowLen int
	// MergeSize is the processor's merge_size: merge² patches make a token.
	MergeSize int
}

// Rows is the number of rows of Pixels (patches): t·h·w.
func (f *Features) Rows() int { return f.Grid[0] * f.Grid[1] * f.Grid[2] }

// Tokens is the number of <|image_pad|> tokens the image stands for:
// t·h·w / merge² (a MergeSize of 0 counts as 1).
func (f *Features) Tokens() int {
	m := max(f.MergeSize, 1)
	return f.Rows() / (m * m)
}

// Processor is a Qwen-VL image processor for one validated Config.
type Processor struct {
	cfg Config
}

// NewProcessor validates c and returns its processor.
func NewProcessor(c Config) (*Processor, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &Processor{cfg: c}, nil
}

// Config is the processor's configuration.
func (p *Processor) Config() Config { return p.cfg }

// Grid is the image_grid_thw and the resized size for an image of
// height×width, without processing pixels (what vLLM's
// get_number_of_image_patches computes).
func (p *Processor) Grid(height, width int) (grid [3]int, resizedH, resizedW int, err error) {
	c := p.cfg
	resizedH, resizedW = height, width
	if c.DoResize {
		resizedH, resizedW, err = SmartResize(height, width, c.Factor(), c.MinPixels, c.MaxPixels)
		if err != nil {
			return grid, 0, 0, err
		}
	}
	if int64(resizedH)*int64(resizedW)*int64(c.TemporalPatchSize) > 2*maxFrameValues {
		// smart_resize's ceil branch can overshoot max_pixels a little; not this much.
		return grid, 0, 0, fmt.Errorf("vision: %dx%d image resizes to %dx%d, too large", width, height, resizedW, resizedH)
	}
	gh, gw := resizedH/c.PatchSize, resizedW/c.PatchSize
	if gh%c.MergeSize != 0 || gw%c.MergeSize != 0 || gh == 0 || gw == 0 {
		return grid, 0, 0, fmt.Errorf("vision: %dx%d image is not a whole number of %d-pixel merged patches",
			resizedW, resizedH, c.Factor())
	}
	return [3]int{1, gh, gw}, resizedH, resizedW, nil
}

// Process runs HF Qwen2VLImageProcessor._preprocess on one image: resize
// (smart_resize, Pillow bicubic), rescale (in float64, then float32 as HF's
// rescale), normalize (float32, (x − mean)/std), repeat the frame to the
// temporal patch size, and lay the patches out as HF's reshape to
// (grid_t, temporal, channel, grid_h/merge, merge, patch, grid_w/merge,
// merge, patch) and transpose (0, 3, 6, 4, 7, 2, 1, 5, 8) do.
func (p *Processor) Process(img *RGB) (*Features, error) {
	c := p.cfg
	grid, rh, rw, err := p.Grid(img.H, img.W)
	if err != nil {
		return nil, err
	}
	if rh != img.H || rw != img.W {
		img, err = ResizeBicubic(img, rw, rh)
		if err != nil {
			return nil, err
		}
	}
	// Per-byte lookup: the pixel pipeline is a function of (channel, value).
	var lut [3][256]float32
	for ch := range 3 {
		for v := range 256 {
			x := float32(v)
			if c.DoRescale {
				x = float32(float64(v) * c.RescaleFactor)
			}
			if c.DoNormalize {
				x = float32(x-c.ImageMean[ch]) / c.ImageStd[ch]
			}
			lut[ch][v] = x
		}
	}
	ps, m, tp := c.PatchSize, c.MergeSize, c.TemporalPatchSize
	gh, gw := grid[1], grid[2]
	rowLen := c.RowLen()
	f := &Features{Grid: grid, ResizedH: rh, ResizedW: rw, RowLen: rowLen, MergeSize: m,
		Pixels: make([]float32, gh*gw*rowLen)}
	out := f.Pixels
	row := 0
	for bh := 0; bh < gh/m; bh++ {
		for bw := 0; bw < gw/m; bw++ {
			for mh := range m {
				for mw := range m {
					y0, x0 := (bh*m+mh)*ps, (bw*m+mw)*ps
					dst := out[row*rowLen : (row+1)*rowLen]
					i := 0
					plane := ps * ps
					for ch := range 3 {
						l := &lut[ch]
						first := dst[i : i+plane]
						for py := range ps {
							src := img.Pix[3*((y0+py)*rw+x0)+ch:]
							d := first[py*ps : (py+1)*ps]
							for px := range d {
								d[px] = l[src[3*px]]
							}
						}
						i += plane
						// The frame repeated temporal_patch_size times.
						for range tp - 1 {
							copy(dst[i:i+plane], first)
							i += plane
						}
					}
					row++
				}
			}
		}
	}
	return f, nil
}
