package tokenizer

import (
	"fmt"
	"sort"
	"sync"
	"unicode/utf8"

	tiktoken "github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// Codec is what every tokenizer of this package offers: text to ids and
// back. *Tokenizer (HF tokenizer.json) and *Tiktoken (OpenAI encodings)
// implement it.
type Codec interface {
	Encode(text string) []int32
	Decode(ids []int32, skipSpecial bool) (string, error)
}

var (
	_ Codec = (*Tokenizer)(nil)
	_ Codec = (*Tiktoken)(nil)
)

// Tiktoken is an OpenAI tiktoken encoding (cl100k_base, o200k_base,
// p50k_base, r50k_base) through github.com/pkoukk/tiktoken-go. The BPE
// ranks come from github.com/pkoukk/tiktoken-go-loader, which embeds them:
// nothing is downloaded at run time.
type Tiktoken struct {
	enc     *tiktoken.Tiktoken
	valid   []bool // by id
	special map[int32]bool
}

var installOfflineLoader sync.Once

// TiktokenEncodings lists the encodings LoadTiktoken accepts.
func TiktokenEncodings() []string {
	return []string{"cl100k_base", "o200k_base", "p50k_base", "r50k_base"}
}

// LoadTiktoken returns the named OpenAI encoding. It installs
// tiktoken-go's offline loader process-wide, so that no tiktoken-go caller
// in the process downloads ranks.
func LoadTiktoken(encoding string) (*Tiktoken, error) {
	known := false
	for _, e := range TiktokenEncodings() {
		known = known || e == encoding
	}
	if !known {
		return nil, fmt.Errorf("tokenizer: unknown tiktoken encoding %q (known: %v)", encoding, TiktokenEncodings())
	}
	installOfflineLoader.Do(func() { tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader()) })
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: tiktoken %s: %w", encoding, err)
	}
	t := &Tiktoken{enc: enc, special: map[int32]bool{}}
	// tiktoken-go skips unknown ids silently; record the valid ones so that
	// Decode can name a bad id. Ranks are dense from 0; special tokens sit
	// above them.
	specials := enc.Encode(specialTokenText(encoding), []string{"all"}, nil)
	maxID := 0
	for _, id := range specials {
		t.special[int32(id)] = true
		maxID = max(maxID, id)
	}
	t.valid = make([]bool, maxID+1)
	for id := 0; id <= maxID; id++ {
		t.valid[id] = t.special[int32(id)] || enc.Decode([]int{id}) != ""
	}
	return t, nil
}

// specialTokenText is all special tokens of an encoding, concatenated.
func specialTokenText(encoding string) string {
	toks := []string{tiktoken.ENDOFTEXT}
	switch encoding {
	case "cl100k_base":
		toks = append(toks, tiktoken.FIM_PREFIX, tiktoken.FIM_MIDDLE, tiktoken.FIM_SUFFIX, tiktoken.ENDOFPROMPT)
	case "o200k_base":
		toks = append(toks, tiktoken.ENDOFPROMPT)
	}
	sort.Strings(toks)
	s := ""
	for _, tok := range toks {
		s += tok
	}
	return s
}

// Encode tokenizes text; special tokens written in it (<|endoftext|>) are
// recognized, as Tokenizer.Encode does. Invalid UTF-8 is replaced with
// U+FFFD first.
func (t *Tiktoken) Encode(text string) []int32 {
	if !utf8.ValidString(text) {
		text = string(appendLossy(nil, []byte(text)))
	}
	ids := t.enc.Encode(text, []string{"all"}, nil)
	out := make([]int32, len(ids))
	for i, id := range ids {
		out[i] = int32(id)
	}
	return out
}

// Decode turns ids into text; an unknown id is an error naming it.
// Invalid UTF-8 (a character cut between ids) becomes U+FFFD.
func (t *Tiktoken) Decode(ids []int32, skipSpecial bool) (string, error) {
	conv := make([]int, 0, len(ids))
	for i, id := range ids {
		if id < 0 || int(id) >= len(t.valid) || !t.valid[id] {
			return "", fmt.Errorf("tokenizer: decode: ids[%d] = %d is not in the encoding", i, id)
		}
		if skipSpecial && t.special[id] {
			continue
		}
		conv = append(conv, int(id))
	}
	s := t.enc.Decode(conv)
	if !utf8.ValidString(s) {
		s = string(appendLossy(nil, []byte(s)))
	}
	return s, nil
}

// VocabSize is one more than the largest id.
func (t *Tiktoken) VocabSize() int { return len(t.valid) }
