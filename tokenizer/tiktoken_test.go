package tokenizer

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTiktoken(t *testing.T) {
	enc, err := LoadTiktoken("cl100k_base")
	require.NoError(t, err)
	var c Codec = enc
	// Reference ids from OpenAI's tiktoken (cl100k_base).
	require.Equal(t, []int32{15339, 1917}, c.Encode("hello world"))
	require.Equal(t, []int32{100257}, c.Encode("<|endoftext|>"))
	require.Equal(t, 100277, enc.VocabSize())

	for _, s := range []string{"", "hello world", "中文 🙂 naïve\n\tcode()", "a<|endoftext|>b"} {
		got, err := c.Decode(c.Encode(s), false)
		require.NoError(t, err)
		require.Equal(t, s, got)
	}
	got, err := c.Decode(c.Encode("a<|endoftext|>b"), true)
	require.NoError(t, err)
	require.Equal(t, "ab", got)

	got, err = c.Decode(c.Encode("x\xffy"), false)
	require.NoError(t, err)
	require.Equal(t, "x\uFFFDy", got)

	_, err = c.Decode([]int32{15339, 100270}, false)
	require.ErrorContains(t, err, "ids[1] = 100270")
	_, err = c.Decode([]int32{-3}, false)
	require.ErrorContains(t, err, "-3")

	_, err = LoadTiktoken("gpt5_base")
	require.ErrorContains(t, err, "unknown tiktoken encoding")
}
