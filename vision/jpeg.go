package vision

import "image"

// libjpeg-turbo's output stage for YCbCr JPEGs, which Pillow's decode goes
// through: "fancy" (triangular) chroma upsampling (jdsample.c
// h2v1_fancy_upsample, h2v2_fancy_upsample; the image edges replicate the
// nearest sample row and column) and its table-driven YCbCr → RGB
// (jdcolor.c build_ycc_rgb_table, ycc_rgb_convert). Go's image/jpeg
// replicates chroma instead, and rounds its conversion differently. What
// is left between the two is the inverse DCT, which JPEG does not specify
// to the bit.

const (
	jScaleBits = 16
	jOneHalf   = 1 << (jScaleBits - 1)
)

func jFix(x float64) int64 { return int64(x*(1<<jScaleBits) + 0.5) }

// yccTables is build_ycc_rgb_table.
var yccTables = func() (t struct {
	crR, cbB [256]int32
	crG, cbG [256]int64
}) {
	for i := range 256 {
		x := int64(i - 128)
		t.crR[i] = int32((jFix(1.40200)*x + jOneHalf) >> jScaleBits)
		t.cbB[i] = int32((jFix(1.77200)*x + jOneHalf) >> jScaleBits)
		t.crG[i] = -jFix(0.71414) * x
		t.cbG[i] = -jFix(0.34414)*x + jOneHalf
	}
	return t
}()

func yccToRGB(y, cb, cr uint8, dst []uint8) {
	yy := int32(y)
	dst[0] = clip8(int(yy + yccTables.crR[cr]))
	dst[1] = clip8(int(yy + int32((yccTables.cbG[cb]+yccTables.crG[cr])>>jScaleBits)))
	dst[2] = clip8(int(yy + yccTables.cbB[cb]))
}

// h2v2Row is h2v2_fancy_upsample for one output row: column sums of
// 3·nearer chroma row + further row, then 3:1 across columns (weights out
// of 16), 2·len(in0) values written to out.
func h2v2Row(in0, in1 []uint8, out []uint8) {
	n := len(in0)
	sum := func(i int) int { return int(in0[i])*3 + int(in1[i]) }
	if n == 1 {
		// libjpeg uses plain replication below 3 samples; one sample is the same either way.
		v := uint8((sum(0)*4 + 8) >> 4)
		out[0], out[1] = v, v
		return
	}
	this, next := sum(0), sum(1)
	out[0] = uint8((this*4 + 8) >> 4)
	out[1] = uint8((this*3 + next + 7) >> 4)
	last := this
	this = next
	for i := 2; i < n; i++ {
		next = sum(i)
		out[2*i-2] = uint8((this*3 + last + 8) >> 4)
		out[2*i-1] = uint8((this*3 + next + 7) >> 4)
		last, this = this, next
	}
	out[2*n-2] = uint8((this*3 + last + 8) >> 4)
	out[2*n-1] = uint8((this*4 + 7) >> 4)
}

// h2v1Row is h2v1_fancy_upsample: 3:1 across columns, weights out of 4.
func h2v1Row(in []uint8, out []uint8) {
	n := len(in)
	if n == 1 {
		out[0], out[1] = in[0], in[0]
		return
	}
	out[0] = in[0]
	out[1] = uint8((int(in[0])*3 + int(in[1]) + 2) >> 2)
	for i := 1; i < n-1; i++ {
		v := int(in[i]) * 3
		out[2*i] = uint8((v + int(in[i-1]) + 1) >> 2)
		out[2*i+1] = uint8((v + int(in[i+1]) + 2) >> 2)
	}
	out[2*n-2] = uint8((int(in[n-1])*3 + int(in[n-2]) + 1) >> 2)
	out[2*n-1] = in[n-1]
}

// jpegFancyRGB converts a 4:4:4, 4:2:2 or 4:2:0 image as libjpeg-turbo
// does; false for other layouts (left to Go's conversion). libjpeg-turbo
// uses plain replication when the chroma plane is 2 samples wide or less,
// and so does this (Go's own conversion is replication).
func jpegFancyRGB(m *image.YCbCr, out *RGB) bool {
	if m.Rect.Min != (image.Point{}) {
		return false
	}
	w, h := out.W, out.H
	cw := (w + 1) / 2
	var ver bool
	switch m.SubsampleRatio {
	case image.YCbCrSubsampleRatio444:
		for y := range h {
			for x := range w {
				i := y*m.YStride + x
				c := y*m.CStride + x
				yccToRGB(m.Y[i], m.Cb[c], m.Cr[c], out.Pix[3*(y*w+x):])
			}
		}
		return true
	case image.YCbCrSubsampleRatio422:
	case image.YCbCrSubsampleRatio420:
		ver = true
	default:
		return false
	}
	if cw <= 2 {
		return false
	}
	ch := h
	if ver {
		ch = (h + 1) / 2
	}
	cRow := func(p []uint8, k int) []uint8 {
		k = min(max(k, 0), ch-1)
		return p[k*m.CStride : k*m.CStride+cw]
	}
	cb := make([]uint8, 2*cw)
	cr := make([]uint8, 2*cw)
	for y := range h {
		if ver {
			// Output row y lies nearest chroma row y/2; the further one is
			// above for even rows and below for odd ones.
			k := y / 2
			far := k - 1
			if y%2 == 1 {
				far = k + 1
			}
			h2v2Row(cRow(m.Cb, k), cRow(m.Cb, far), cb)
			h2v2Row(cRow(m.Cr, k), cRow(m.Cr, far), cr)
		} else {
			h2v1Row(cRow(m.Cb, y), cb)
			h2v1Row(cRow(m.Cr, y), cr)
		}
		yr := m.Y[y*m.YStride:]
		d := out.Pix[3*w*y:]
		for x := range w {
			yccToRGB(yr[x], cb[x], cr[x], d[3*x:])
		}
	}
	return true
}
