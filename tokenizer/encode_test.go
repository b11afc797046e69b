package tokenizer

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

type encodeRecord struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

func TestEncodeGolden(t *testing.T) {
	cases := []struct {
		file string
		tok  func(testing.TB) *Tokenizer
		nfc  bool
	}{
		{filepath.Join(sharedGolden, "encode_qwen3.jsonl"), qwen, true},
		{filepath.Join(sharedGolden, "encode_llama3_1.jsonl"), llama, false},
		{filepath.Join("testdata", "qwen3_encode.jsonl"), qwen, true},
		{filepath.Join("testdata", "llama3_1_encode.jsonl"), llama, false},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			recs := readJSONL[encodeRecord](t, c.file)
			tok := c.tok(t)
			require.NotEmpty(t, recs)
			for i, r := range recs {
				got := tok.Encode(r.Text)
				if r.IDs == nil {
					r.IDs = []int32{}
				}
				if got == nil {
					got = []int32{}
				}
				require.Equal(t, r.IDs, got, "record %d: %q", i, r.Text)
				text, err := tok.Decode(got, false)
				require.NoError(t, err)
				want := r.Text
				if c.nfc {
					want = norm.NFC.String(want)
				}
				require.Equal(t, want, text, "record %d: decode", i)
			}
		})
	}
}

type decodeRecord struct {
	IDs         []int32 `json:"ids"`
	SkipSpecial bool    `json:"skip_special"`
	Text        string  `json:"text"`
}

// TestDecodeGolden checks Decode against HF on random id runs, which split
// UTF-8 sequences across tokens and mix in special tokens.
func TestDecodeGolden(t *testing.T) {
	for _, c := range []struct {
		file string
		tok  func(testing.TB) *Tokenizer
	}{
		{filepath.Join("testdata", "qwen3_decode.jsonl"), qwen},
		{filepath.Join("testdata", "llama3_1_decode.jsonl"), llama},
	} {
		t.Run(filepath.Base(c.file), func(t *testing.T) {
			tok := c.tok(t)
			for i, r := range readJSONL[decodeRecord](t, c.file) {
				// A record is a real case: ids to decode, and text unless
				// every id is a special token being skipped.
				require.NotEmpty(t, r.IDs, "record %d has no ids", i)
				require.True(t, r.Text != "" || r.SkipSpecial, "record %d decodes to nothing without skip_special", i)
				got, err := tok.Decode(r.IDs, r.SkipSpecial)
				require.NoError(t, err)
				require.Equal(t, r.Text, got, "record %d: %v skip=%v", i, r.IDs, r.SkipSpecial)
			}
		})
	}
}
