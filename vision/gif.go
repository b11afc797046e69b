package vision

import (
	"image"
	"image/color"
)

// gifFirstPalette reads, from a GIF's blocks, the colour table its first
// frame uses (the local one, else the global one) and that frame's
// transparent index (-1 if none). Go's GIF decoder blanks the transparent
// entry of the palette it returns; Pillow keeps the entry's colour, and
// convert("RGB") shows it. ok is false for anything this walk cannot read,
// which then keeps Go's palette.
func gifFirstPalette(data []byte) (pal [][3]uint8, transparent int, ok bool) {
	if len(data) < 13 {
		return nil, -1, false
	}
	table := func(at, packed int) ([][3]uint8, int, bool) {
		n := 1 << (packed&7 + 1)
		if at+3*n > len(data) {
			return nil, at, false
		}
		t := make([][3]uint8, n)
		for i := range t {
			t[i] = [3]uint8{data[at+3*i], data[at+3*i+1], data[at+3*i+2]}
		}
		return t, at + 3*n, true
	}
	pos := 13
	var global [][3]uint8
	if data[10]&0x80 != 0 {
		var good bool
		if global, pos, good = table(pos, int(data[10])); !good {
			return nil, -1, false
		}
	}
	transparent = -1
	for pos < len(data) {
		switch data[pos] {
		case 0x21: // extension: label, then sub-blocks
			if pos+2 >= len(data) {
				return nil, -1, false
			}
			label := data[pos+1]
			p := pos + 2
			if label == 0xf9 && p+5 < len(data) && data[p] == 4 {
				transparent = -1
				if data[p+1]&1 != 0 {
					transparent = int(data[p+4])
				}
			}
			for {
				if p >= len(data) {
					return nil, -1, false
				}
				n := int(data[p])
				p += 1 + n
				if n == 0 {
					break
				}
			}
			pos = p
		case 0x2c: // image descriptor: the first frame
			if pos+10 > len(data) {
				return nil, -1, false
			}
			packed := int(data[pos+9])
			if packed&0x80 != 0 {
				local, _, good := table(pos+10, packed)
				return local, transparent, good
			}
			return global, transparent, global != nil
		default:
			return nil, -1, false
		}
	}
	return nil, -1, false
}

// restoreGIFTransparent puts back the colour of the first frame's
// transparent palette entry, which Go's decoder replaced by transparent
// black.
func restoreGIFTransparent(data []byte, m *image.Paletted) {
	pal, ti, ok := gifFirstPalette(data)
	if !ok || ti < 0 || ti >= len(pal) || ti >= len(m.Palette) {
		return
	}
	c := pal[ti]
	m.Palette[ti] = color.RGBA{c[0], c[1], c[2], 0xff}
}
