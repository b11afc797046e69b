package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Python's str.upper/lower/title use Unicode's full case mappings, where a
// few characters map to several (ß → SS, ﬁ → FI), and lower() applies the
// final-sigma rule. Go's unicode package has only the one-to-one mappings,
// so the unconditional multi-character entries of SpecialCasing.txt that
// occur in practice are listed here.
var (
	upperSpecial = map[rune]string{
		'ß': "SS", 'ŉ': "ʼN", 'ǰ': "J̌", 'ΐ': "Ϊ́", 'ΰ': "Ϋ́", 'և': "ԵՒ",
		'ẖ': "H̱", 'ẗ': "T̈", 'ẘ': "W̊", 'ẙ': "Y̊", 'ẚ': "Aʾ",
		'ﬀ': "FF", 'ﬁ': "FI", 'ﬂ': "FL", 'ﬃ': "FFI", 'ﬄ': "FFL", 'ﬅ': "ST", 'ﬆ': "ST",
		'ﬓ': "ՄՆ", 'ﬔ': "ՄԵ", 'ﬕ': "ՄԻ", 'ﬖ': "ՎՆ", 'ﬗ': "ՄԽ",
	}
	titleSpecial = map[rune]string{
		'ß': "Ss", 'ŉ': "ʼN", 'ǰ': "J̌", 'և': "Եւ",
		'ﬀ': "Ff", 'ﬁ': "Fi", 'ﬂ': "Fl", 'ﬃ': "Ffi", 'ﬄ': "Ffl", 'ﬅ': "St", 'ﬆ': "St",
		'ﬓ': "Մն", 'ﬔ': "Մե", 'ﬕ': "Մի", 'ﬖ': "Վն", 'ﬗ': "Մխ",
	}
)

func pyUpper(s string) string {
	if isASCII(s) {
		return strings.ToUpper(s)
	}
	var b strings.Builder
	for _, r := range s {
		if m, ok := upperSpecial[r]; ok {
			b.WriteString(m)
			continue
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

// pyLower is str.lower: İ becomes i + combining dot, and Σ becomes ς at
// the end of a word (preceded by a cased letter, not followed by one).
func pyLower(s string) string {
	if isASCII(s) {
		return strings.ToLower(s)
	}
	var b strings.Builder
	for i, r := range s {
		switch r {
		case 'İ':
			b.WriteString("i̇")
			continue
		case 'Σ':
			if finalSigma(s, i) {
				b.WriteRune('ς')
				continue
			}
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

func isCased(r rune) bool { return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) }

func isCaseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) || r == '\'' || r == '.' || r == ':' || r == '·' || r == '’'
}

func finalSigma(s string, i int) bool {
	before := false
	for j := i; j > 0; {
		r, n := utf8.DecodeLastRuneInString(s[:j])
		j -= n
		if isCaseIgnorable(r) {
			continue
		}
		before = isCased(r)
		break
	}
	if !before {
		return false
	}
	for j := i + len("Σ"); j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		j += n
		if isCaseIgnorable(r) {
			continue
		}
		return !isCased(r)
	}
	return true
}

func writeTitle(b *strings.Builder, r rune) {
	if m, ok := titleSpecial[r]; ok {
		b.WriteString(m)
		return
	}
	b.WriteRune(unicode.ToTitle(r))
}
