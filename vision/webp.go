package vision

import "image"

// libwebp's output stage (src/dec/io_dec.c EmitFancyRGB, src/dsp/
// upsampling.c UpsampleRgbLinePair, src/dsp/yuv.h VP8YuvToRgb), which
// Pillow's WebP decode goes through and golang.org/x/image/webp does not:
// x/image/webp hands back the 4:2:0 planes, and Go's YCbCr → RGB is JPEG's
// full-range one, while VP8 is BT.601 studio range. Transcribed here so a
// lossy WebP decodes to libwebp's bytes.

const (
	yuvFix2  = 6
	yuvMask2 = (256 << yuvFix2) - 1
)

func multHi(v, coeff int) int { return (v * coeff) >> 8 }

func vp8Clip8(v int) uint8 {
	if v&^yuvMask2 == 0 {
		return uint8(v >> yuvFix2)
	}
	if v < 0 {
		return 0
	}
	return 255
}

func vp8YUVToRGB(y, u, v uint8, dst []uint8) {
	yy, uu, vv := int(y), int(u), int(v)
	dst[0] = vp8Clip8(multHi(yy, 19077) + multHi(vv, 26149) - 14234)
	dst[1] = vp8Clip8(multHi(yy, 19077) - multHi(uu, 6419) - multHi(vv, 13320) + 8708)
	dst[2] = vp8Clip8(multHi(yy, 19077) + multHi(uu, 33050) - 17685)
}

func loadUV(u, v uint8) uint32 { return uint32(u) | uint32(v)<<16 }

// upsampleLinePair is UPSAMPLE_FUNC(UpsampleRgbLinePair_C, VP8YuvToRgb, 3):
// two output rows (bottom may be nil) from their luma rows and the chroma
// rows above (top) and below (cur) them, u and v packed in one uint32 as
// libwebp does.
func upsampleLinePair(topY, bottomY, topU, topV, curU, curV []uint8, topDst, bottomDst []uint8, n int) {
	lastPair := (n - 1) >> 1
	tl := loadUV(topU[0], topV[0])
	l := loadUV(curU[0], curV[0])
	{
		uv0 := (3*tl + l + 0x00020002) >> 2
		vp8YUVToRGB(topY[0], uint8(uv0&0xff), uint8(uv0>>16), topDst)
	}
	if bottomY != nil {
		uv0 := (3*l + tl + 0x00020002) >> 2
		vp8YUVToRGB(bottomY[0], uint8(uv0&0xff), uint8(uv0>>16), bottomDst)
	}
	for x := 1; x <= lastPair; x++ {
		t := loadUV(topU[x], topV[x])
		uv := loadUV(curU[x], curV[x])
		avg := tl + t + l + uv + 0x00080008
		diag12 := (avg + 2*(t+l)) >> 3
		diag03 := (avg + 2*(tl+uv)) >> 3
		{
			uv0 := (diag12 + tl) >> 1
			uv1 := (diag03 + t) >> 1
			vp8YUVToRGB(topY[2*x-1], uint8(uv0&0xff), uint8(uv0>>16), topDst[3*(2*x-1):])
			vp8YUVToRGB(topY[2*x], uint8(uv1&0xff), uint8(uv1>>16), topDst[3*(2*x):])
		}
		if bottomY != nil {
			uv0 := (diag03 + l) >> 1
			uv1 := (diag12 + uv) >> 1
			vp8YUVToRGB(bottomY[2*x-1], uint8(uv0&0xff), uint8(uv0>>16), bottomDst[3*(2*x-1):])
			vp8YUVToRGB(bottomY[2*x], uint8(uv1&0xff), uint8(uv1>>16), bottomDst[3*(2*x):])
		}
		tl, l = t, uv
	}
	if n&1 == 0 {
		{
			uv0 := (3*tl + l + 0x00020002) >> 2
			vp8YUVToRGB(topY[n-1], uint8(uv0&0xff), uint8(uv0>>16), topDst[3*(n-1):])
		}
		if bottomY != nil {
			uv0 := (3*l + tl + 0x00020002) >> 2
			vp8YUVToRGB(bottomY[n-1], uint8(uv0&0xff), uint8(uv0>>16), bottomDst[3*(n-1):])
		}
	}
}

// webpFancyRGB is EmitFancyRGB over the whole picture: row 0 alone with
// its chroma row mirrored, then rows (2k−1, 2k) between chroma rows k−1 and
// k, then the last row of an even height alone.
func webpFancyRGB(m *image.YCbCr, out *RGB) {
	w, h := out.W, out.H
	yRow := func(y int) []uint8 { return m.Y[y*m.YStride : y*m.YStride+w] }
	cRow := func(p []uint8, k int) []uint8 { return p[k*m.CStride : k*m.CStride+(w+1)/2] }
	dRow := func(y int) []uint8 { return out.Pix[3*w*y : 3*w*(y+1)] }
	upsampleLinePair(yRow(0), nil, cRow(m.Cb, 0), cRow(m.Cr, 0), cRow(m.Cb, 0), cRow(m.Cr, 0), dRow(0), nil, w)
	y := 0
	for ; y+2 < h; y += 2 {
		k := y/2 + 1
		upsampleLinePair(yRow(y+1), yRow(y+2), cRow(m.Cb, k-1), cRow(m.Cr, k-1), cRow(m.Cb, k), cRow(m.Cr, k),
			dRow(y+1), dRow(y+2), w)
	}
	if h&1 == 0 {
		k := (h - 1) / 2
		upsampleLinePair(yRow(h-1), nil, cRow(m.Cb, k), cRow(m.Cr, k), cRow(m.Cb, k), cRow(m.Cr, k), dRow(h-1), nil, w)
	}
}
