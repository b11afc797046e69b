package vision

import (
	"fmt"
	"math"
)

// This file transcribes Pillow's resampling for 8-bit images
// (src/libImaging/Resample.c: precompute_coeffs, normalize_coeffs_8bpc,
// ImagingResampleHorizontal_8bpc / Vertical_8bpc, ImagingResampleInner) with
// its bicubic filter, so that a resize here gives Pillow's bytes. HF's Qwen-VL
// image processors resize with PIL.Image.resize(..., BICUBIC).

// precisionBits is Pillow's PRECISION_BITS: 8 bits for the result and two
// for the overflow of the filter's negative lobes within an int32.
const precisionBits = 32 - 8 - 2

// bicubicSupport is Pillow's BICUBIC support.
const bicubicSupport = 2.0

// bicubic is Pillow's bicubic_filter, a = -0.5.
func bicubic(x float64) float64 {
	const a = -0.5
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return ((a+2)*x-(a+3))*x*x + 1
	}
	if x < 2 {
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// coeffs is precompute_coeffs followed by normalize_coeffs_8bpc: for each
// output pixel the first input pixel and the fixed-point weights.
type coeffs struct {
	ksize  int
	bounds []int   // xmin, xmax (count) per output pixel
	k      []int32 // ksize weights per output pixel
}

// precompute is Pillow's precompute_coeffs for the box [in0, in1) of an
// input of inSize pixels, then normalize_coeffs_8bpc. in0 and in1 are
// float32 in Pillow (the box is float[4]); they are whole numbers here.
func precompute(inSize int, in0, in1 float32, outSize int) coeffs {
	scale := float64(in1-in0) / float64(outSize)
	filterscale := scale
	if filterscale < 1 {
		filterscale = 1
	}
	support := bicubicSupport * filterscale
	ksize := int(math.Ceil(support))*2 + 1
	c := coeffs{ksize: ksize, bounds: make([]int, 2*outSize), k: make([]int32, outSize*ksize)}
	kk := make([]float64, ksize)
	inv := 1.0 / filterscale
	for xx := range outSize {
		center := float64(in0) + (float64(xx)+0.5)*scale
		ww := 0.0
		// C's (int) conversion truncates toward zero.
		xmin := int(center - support + 0.5)
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		xmax -= xmin
		for x := range xmax {
			w := bicubic((float64(x+xmin) - center + 0.5) * inv)
			kk[x] = w
			ww += w
		}
		for x := xmax; x < ksize; x++ {
			kk[x] = 0
		}
		if ww != 0 {
			for x := range xmax {
				kk[x] /= ww
			}
		}
		for x := range ksize {
			v := kk[x]
			if v < 0 {
				c.k[xx*ksize+x] = int32(-0.5 + v*(1<<precisionBits))
			} else {
				c.k[xx*ksize+x] = int32(0.5 + v*(1<<precisionBits))
			}
		}
		c.bounds[2*xx] = xmin
		c.bounds[2*xx+1] = xmax
	}
	return c
}

// clip8fixed is Pillow's clip8: the fixed-point sum shifted down and
// clamped (Pillow's lookup table covers -640..639, all a sum can reach).
func clip8fixed(ss int32) uint8 {
	v := ss >> precisionBits
	if v < 0 {
		return 0
	}
	if v > 255 {
		return 255
	}
	return uint8(v)
}

// horizontal is ImagingResampleHorizontal_8bpc on rows offset..offset+outH-1.
func horizontal(src *RGB, offset, outH int, c coeffs, outW int) *RGB {
	out := NewRGB(outW, outH)
	for yy := range outH {
		in := src.Pix[(yy+offset)*3*src.W : (yy+offset+1)*3*src.W]
		o := out.Pix[yy*3*outW : (yy+1)*3*outW]
		for xx := range outW {
			xmin, xmax := c.bounds[2*xx], c.bounds[2*xx+1]
			k := c.k[xx*c.ksize : xx*c.ksize+xmax]
			ss0, ss1, ss2 := int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1)), int32(1<<(precisionBits-1))
			px := in[3*xmin : 3*(xmin+xmax)]
			for x, w := range k {
				ss0 += int32(px[3*x]) * w
				ss1 += int32(px[3*x+1]) * w
				ss2 += int32(px[3*x+2]) * w
			}
			o[3*xx], o[3*xx+1], o[3*xx+2] = clip8fixed(ss0), clip8fixed(ss1), clip8fixed(ss2)
		}
	}
	return out
}

// vertical is ImagingResampleVertical_8bpc.
func vertical(src *RGB, c coeffs, outH int) *RGB {
	w := src.W
	out := NewRGB(w, outH)
	acc := make([]int32, 3*w)
	for yy := range outH {
		ymin, ymax := c.bounds[2*yy], c.bounds[2*yy+1]
		k := c.k[yy*c.ksize : yy*c.ksize+ymax]
		for i := range acc {
			acc[i] = 1 << (precisionBits - 1)
		}
		// Row by row rather than Pillow's column by column: each output
		// value still sums the same products in the same order.
		for y, kw := range k {
			row := src.Pix[(y+ymin)*3*w : (y+ymin+1)*3*w]
			for i, v := range row {
				acc[i] += int32(v) * kw
			}
		}
		o := out.Pix[yy*3*w : (yy+1)*3*w]
		for i, s := range acc {
			o[i] = clip8fixed(s)
		}
	}
	return out
}

// resampleInner is ImagingResampleInner for the box [x0,x1)×[y0,y1) of src.
func resampleInner(src *RGB, outW, outH int, box [4]float32) *RGB {
	needH := outW != src.W || box[0] != 0 || box[2] != float32(outW)
	needV := outH != src.H || box[1] != 0 || box[3] != float32(outH)
	cv := precompute(src.H, box[1], box[3], outH)
	yFirst := cv.bounds[0]
	yLast := cv.bounds[2*outH-2] + cv.bounds[2*outH-1]
	img := src
	var out *RGB
	if needH {
		ch := precompute(src.W, box[0], box[2], outW)
		for i := range outH {
			cv.bounds[2*i] -= yFirst
		}
		img = horizontal(src, yFirst, yLast-yFirst, ch, outW)
		out = img
	}
	if needV {
		out = vertical(img, cv, outH)
	}
	if out == nil {
		out = &RGB{W: img.W, H: img.H, Pix: append([]uint8(nil), img.Pix...)}
	}
	return out
}

// ResizeBicubic resizes src to w×h as PIL.Image.resize((w, h), BICUBIC)
// does for an RGB image (no reducing_gap, the default, as HF calls it).
func ResizeBicubic(src *RGB, w, h int) (*RGB, error) {
	if w <= 0 || h <= 0 || src.W <= 0 || src.H <= 0 {
		return nil, fmt.Errorf("vision: resize %dx%d to %dx%d: sizes must be positive", src.W, src.H, w, h)
	}
	if len(src.Pix) != 3*src.W*src.H {
		return nil, fmt.Errorf("vision: resize: %dx%d image has %d bytes, want %d", src.W, src.H, len(src.Pix), 3*src.W*src.H)
	}
	if w == src.W && h == src.H {
		return &RGB{W: w, H: h, Pix: append([]uint8(nil), src.Pix...)}, nil
	}
	full := [4]float32{0, 0, float32(src.W), float32(src.H)}
	// Pillow ≥ 12.2 (Image.resize) shrinks a very tall image vertically
	// first, over the full width, and then horizontally.
	if src.H > src.W*100 && h < src.H {
		tmp := resampleInner(src, src.W, h, [4]float32{0, full[1], float32(src.W), full[3]})
		return resampleInner(tmp, w, h, [4]float32{full[0], 0, full[2], float32(h)}), nil
	}
	return resampleInner(src, w, h, full), nil
}
