package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// DeepSeek-V3's pre-tokenizer is a Sequence of three Isolated splits. Unlike
// the GPT-2 family, their matches do not tile the text, so these matchers
// search: where nothing matches they move on one rune, as a regex search
// does. FuzzFastPattern checks them against regexp2.
const (
	patternDeepSeekDigits = `\p{N}{1,3}`
	patternDeepSeekCJK    = "[一-龥\u3040-ゟ゠-ヿ]+"
	patternDeepSeekMain   = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

var knownSearchers = map[string]matcher{
	patternDeepSeekDigits: digitRuns{max: 3},
	patternDeepSeekCJK:    cjkRuns{},
	patternDeepSeekMain:   deepseekMain{},
}

// digitRuns matches \p{N}{1,max}.
type digitRuns struct{ max int }

func (d digitRuns) findAll(s string, dst []span) ([]span, error) {
	for i := 0; i < len(s); {
		r, n := runeAt(s, i)
		if class(r) != clsN {
			i += n
			continue
		}
		e := i + n
		for k := 1; k < d.max; k++ {
			r, m := runeAt(s, e)
			if m == 0 || class(r) != clsN {
				break
			}
			e += m
		}
		dst = append(dst, span{i, e})
		i = e
	}
	return dst, nil
}

// cjkRuns matches [一-龥\u3040-ゟ゠-ヿ]+.
type cjkRuns struct{}

func isCJKRange(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FA5) || (r >= 0x3040 && r <= 0x309F) || (r >= 0x30A0 && r <= 0x30FF)
}

func (cjkRuns) findAll(s string, dst []span) ([]span, error) {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !isCJKRange(r) {
			i += n
			continue
		}
		e := i + n
		for e < len(s) {
			r, m := utf8.DecodeRuneInString(s[e:])
			if !isCJKRange(r) {
				break
			}
			e += m
		}
		dst = append(dst, span{i, e})
		i = e
	}
	return dst, nil
}

// deepseekMain matches patternDeepSeekMain.
type deepseekMain struct{}

func isLM(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiClass[r] == clsL
	}
	return unicode.IsLetter(r) || unicode.IsMark(r)
}

func isPS(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

func isASCIIPunct(r rune) bool {
	return r < utf8.RuneSelf && r > ' ' && r != 0x7f && !(r >= '0' && r <= '9') && asciiClass[r] != clsL
}

func isASCIILetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }

func (deepseekMain) findAll(s string, dst []span) ([]span, error) {
	for i := 0; i < len(s); {
		if e := deepseekMatchAt(s, i); e > i {
			dst = append(dst, span{i, e})
			i = e
			continue
		}
		_, n := runeAt(s, i)
		i += n
	}
	return dst, nil
}

// deepseekMatchAt returns the end of the match starting at i, or -1.
func deepseekMatchAt(s string, i int) int {
	c, n := runeAt(s, i)
	next, nn := runeAt(s, i+n)
	runWhile := func(j int, f func(rune) bool) int {
		for j < len(s) {
			r, m := runeAt(s, j)
			if !f(r) {
				break
			}
			j += m
		}
		return j
	}
	// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
	if isASCIIPunct(c) && nn > 0 && isASCIILetter(next) {
		return runWhile(i+n+nn, isASCIILetter)
	}
	// [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+
	if isLM(c) {
		return runWhile(i+n, isLM)
	}
	if c != '\r' && c != '\n' && !isPS(c) && nn > 0 && isLM(next) {
		return runWhile(i+n+nn, isLM)
	}
	// ' ?[\p{P}\p{S}]+[\r\n]*'
	start := -1
	if isPS(c) {
		start = i
	} else if c == ' ' && nn > 0 && isPS(next) {
		start = i + n
	}
	if start >= 0 {
		e := runWhile(start, isPS)
		for e < len(s) && (s[e] == '\r' || s[e] == '\n') {
			e++
		}
		return e
	}
	if class(c) != clsS {
		return -1
	}
	// \s*[\r\n]+ | \s+(?!\S) | \s+
	end, lastNL, lastStart := i, -1, i
	for end < len(s) {
		r, m := runeAt(s, end)
		if class(r) != clsS {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end
		}
		lastStart = end
		end += m
	}
	if lastNL >= 0 {
		return lastNL + 1
	}
	if end == len(s) || lastStart == i {
		return end
	}
	return lastStart
}
