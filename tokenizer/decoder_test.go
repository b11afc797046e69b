package tokenizer

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

func TestDecoderStreamsValidUTF8(t *testing.T) {
	tok := qwen(t)
	recs := readJSONL[decodeRecord](t, filepath.Join("testdata", "qwen3_decode.jsonl"))
	texts := []string{"🙂🙃🤖👩‍💻 中文 naïve", "<|im_start|>user\n你好<|im_end|>", strings.Repeat("é中🙂", 50)}
	var streams [][]int32
	for _, s := range texts {
		streams = append(streams, tok.Encode(s))
	}
	for _, r := range recs {
		streams = append(streams, r.IDs)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, ids := range streams {
		for _, skip := range []bool{false, true} {
			d := tok.NewDecoder(skip)
			var got strings.Builder
			for j := 0; j < len(ids); {
				n := 1 + rng.IntN(3)
				n = min(n, len(ids)-j)
				piece, err := d.Add(ids[j : j+n]...)
				require.NoError(t, err)
				require.True(t, utf8.ValidString(piece))
				got.WriteString(piece)
				j += n
			}
			got.WriteString(d.Flush())
			want, err := tok.Decode(ids, skip)
			require.NoError(t, err)
			require.Equal(t, want, got.String(), "stream %d skip=%v", i, skip)
		}
	}
}

func TestDecoderHoldsPartialCharacter(t *testing.T) {
	tok := qwen(t)
	ids := tok.Encode("𓀀") // a rare character: one byte token per UTF-8 byte
	require.Greater(t, len(ids), 1, "the character should span byte tokens")
	d := tok.NewDecoder(false)
	for _, id := range ids[:len(ids)-1] {
		s, err := d.Add(id)
		require.NoError(t, err)
		require.Empty(t, s)
	}
	s, err := d.Add(ids[len(ids)-1])
	require.NoError(t, err)
	require.Equal(t, "𓀀", s)
	require.Empty(t, d.Flush())

	// A stream cut mid-character flushes as U+FFFD, like Decode.
	_, err = d.Add(ids[0])
	require.NoError(t, err)
	require.Equal(t, "\uFFFD", d.Flush())

	_, err = d.Add(1 << 30)
	require.ErrorContains(t, err, "1073741824")
}
