package bpetrain_test

import (
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"

	"github.com/agentrl/agentrl/tokenizer"
	"github.com/agentrl/agentrl/tokenizer/bpetrain"
)

// FuzzTrain trains on arbitrary text and checks the written tokenizer.json
// loads and round-trips that text (NFC-normalized, as the normalizer does).
func FuzzTrain(f *testing.F) {
	for _, s := range []string{"", "aaaa bbbb aaaa", "12 * 34 = 408\n\n", "héllo <|im_end|> wörld", "\t\r\n  x", "'s 'S ’s", "中文中文"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || len(s) > 2000 {
			t.Skip()
		}
		bt, err := bpetrain.Train([]string{s, s}, bpetrain.Options{VocabSize: 280})
		require.NoError(t, err)
		js, err := bt.TokenizerJSON()
		require.NoError(t, err)
		tok, err := tokenizer.FromJSON(js)
		require.NoError(t, err)
		got, err := tok.Decode(tok.Encode(s), false)
		require.NoError(t, err)
		require.Equal(t, norm.NFC.String(s), got)
	})
}
