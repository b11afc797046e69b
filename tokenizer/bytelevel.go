package tokenizer

import "unicode/utf8"

// GPT-2's byte-level alphabet: every byte is shown as a printable rune so that
// vocabularies can be stored as text. Printable Latin-1 bytes map to
// themselves; the other 68 bytes map to U+0100 and up, in byte order.
var (
	byteToRune [256]rune
	// runeToByte[r] is the byte rune r stands for plus one; 0 when r is not
	// in the alphabet. An array: loading a vocabulary does a million lookups.
	runeToByte [324]int16
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = int16(b) + 1
	}
}

// appendLossy appends b to dst as valid UTF-8 the way Rust's
// String::from_utf8_lossy does: each maximal invalid subpart (the longest
// prefix of a possibly valid sequence, at least one byte) becomes one U+FFFD.
// Go's own conversion replaces byte by byte, which differs on truncated
// sequences, so HF-exact decoding needs this.
func appendLossy(dst, b []byte) []byte {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			dst = append(dst, b[i:i+size]...)
			i += size
			continue
		}
		i += invalidSubpartLen(b[i:])
		dst = append(dst, "\uFFFD"...)
	}
	return dst
}

// invalidSubpartLen returns the length of the maximal subpart at the start of
// b, which does not start a valid sequence. It is 1 for a byte that cannot
// start a sequence, else the number of leading bytes that are a valid prefix.
func invalidSubpartLen(b []byte) int {
	need, lo, hi := seqShape(b[0])
	if need == 0 {
		return 1
	}
	n := 1
	for n < len(b) && n <= need {
		c := b[n]
		if n == 1 {
			if c < lo || c > hi {
				break
			}
		} else if c < 0x80 || c > 0xBF {
			break
		}
		n++
	}
	return n
}

// seqShape returns, for a lead byte, how many continuation bytes follow and
// the allowed range of the first continuation byte (Unicode Table 3-7).
func seqShape(c byte) (need int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 1, 0x80, 0xBF
	case c == 0xE0:
		return 2, 0xA0, 0xBF
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		return 2, 0x80, 0xBF
	case c == 0xED:
		return 2, 0x80, 0x9F
	case c == 0xF0:
		return 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 3, 0x80, 0xBF
	case c == 0xF4:
		return 3, 0x80, 0x8F
	}
	return 0, 0, 0
}

// incompleteTail returns how many bytes at the end of b are a valid but
// unfinished UTF-8 sequence that more bytes could still complete.
func incompleteTail(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c >= 0x80 && c <= 0xBF {
			continue // continuation byte: keep looking for the lead
		}
		need, _, _ := seqShape(c)
		if need == 0 || back > need {
			return 0
		}
		// The lead is followed by back-1 bytes; they must form a valid prefix.
		if invalidSubpartLen(b[len(b)-back:]) == back {
			return back
		}
		return 0
	}
	return 0
}

// runeByte returns the byte a byte-level rune stands for.
func runeByte(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] == 0 {
		return 0, false
	}
	return byte(runeToByte[r] - 1), true
}
