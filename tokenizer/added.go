package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of tokenizer.json "added_tokens".
type addedToken struct {
	ID         int32  `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// addedMatcher finds added tokens in text the way HF's AddedVocabulary
// does: Aho-Corasick leftmost-longest matching, then the single_word,
// lstrip and rstrip rules. A byte trie gives the same leftmost-longest
// matches; added vocabularies are small (tens to hundreds of tokens).
type addedMatcher struct {
	first [256]bool
	nodes []trieNode
	toks  []*addedToken
}

type trieNode struct {
	next  []trieEdge
	token int32 // index into toks, -1 if no token ends here
}

type trieEdge struct {
	b    byte
	node int32
}

func newAddedMatcher(toks []*addedToken, content func(*addedToken) string) *addedMatcher {
	m := &addedMatcher{nodes: []trieNode{{token: -1}}, toks: toks}
	for i, t := range toks {
		c := content(t)
		if c == "" {
			continue
		}
		m.first[c[0]] = true
		n := int32(0)
		for j := 0; j < len(c); j++ {
			n = m.child(n, c[j], true)
		}
		if m.nodes[n].token < 0 {
			m.nodes[n].token = int32(i)
		}
	}
	return m
}

func (m *addedMatcher) child(n int32, b byte, create bool) int32 {
	for _, e := range m.nodes[n].next {
		if e.b == b {
			return e.node
		}
	}
	if !create {
		return -1
	}
	m.nodes = append(m.nodes, trieNode{token: -1})
	id := int32(len(m.nodes) - 1)
	m.nodes[n].next = append(m.nodes[n].next, trieEdge{b, id})
	return id
}

// longestAt returns the token index and end of the longest token starting
// at s[i], or -1.
func (m *addedMatcher) longestAt(s string, i int) (tok int32, end int) {
	tok = -1
	n := int32(0)
	for j := i; j < len(s); j++ {
		n = m.child(n, s[j], false)
		if n < 0 {
			break
		}
		if t := m.nodes[n].token; t >= 0 {
			tok, end = t, j+1
		}
	}
	return tok, end
}

// piece is a part of the input: either an added token (id >= 0) or text to
// run through the normal pipeline.
type piece struct {
	text string
	id   int32
}

// split appends the pieces of s: text between tokens and the tokens found,
// with HF's flag rules (find_matches in added_vocabulary.rs).
func (m *addedMatcher) split(s string, dst []piece) []piece {
	if len(m.toks) == 0 {
		if s != "" {
			dst = append(dst, piece{s, -1})
		}
		return dst
	}
	startOffset := 0
	for i := 0; i < len(s); i++ {
		if !m.first[s[i]] {
			continue
		}
		ti, stop := m.longestAt(s, i)
		if ti < 0 {
			continue
		}
		t := m.toks[ti]
		start := i
		if t.SingleWord {
			startSpace := start == 0 || !endsWithWord(s[:start])
			stopSpace := stop == len(s) || !startsWithWord(s[stop:])
			if !startSpace || !stopSpace {
				// HF's Aho-Corasick iterator has already moved past
				// this match: the search resumes after it.
				i = stop - 1
				continue
			}
		}
		if t.LStrip {
			ns := len(trimRightSpace(s[:start]))
			start = max(ns, startOffset)
		}
		if t.RStrip {
			stop = len(s) - len(trimLeftSpace(s[stop:]))
		}
		if startOffset < start {
			dst = append(dst, piece{s[startOffset:start], -1})
		}
		dst = append(dst, piece{s[start:stop], t.ID})
		startOffset = stop
		i = stop - 1
	}
	if startOffset < len(s) {
		dst = append(dst, piece{s[startOffset:], -1})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return isAlnum(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return isAlnum(r)
}

func isAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

func trimRightSpace(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeLastRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[:len(s)-n]
	}
	return s
}

func trimLeftSpace(s string) string {
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		if !unicode.IsSpace(r) {
			break
		}
		s = s[n:]
	}
	return s
}
