package tokenizer

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenizerInfo(t *testing.T) {
	q := qwen(t)
	require.Equal(t, 151669, q.VocabSize())
	require.Equal(t, []int32{151645, 151643}, q.EOSTokenIDs(), "<|im_end|> (eos_token), <|endoftext|>")
	id, ok := q.TokenID("<|im_start|>")
	require.True(t, ok)
	require.Equal(t, int32(151644), id)
	id, ok = q.TokenID("Ġhello")
	require.True(t, ok)
	require.Equal(t, int32(23811), id)
	_, ok = q.TokenID("no such token")
	require.False(t, ok)
	tok, ok := q.Token(23811)
	require.True(t, ok)
	require.Equal(t, "Ġhello", tok)
	require.True(t, q.IsSpecial(151644))
	require.False(t, q.IsSpecial(151667), "<think> is added but not special")
	eos, ok := q.SpecialToken("eos_token")
	require.True(t, ok)
	require.Equal(t, "<|im_end|>", eos)
	_, ok = q.SpecialToken("bos_token")
	require.False(t, ok, "Qwen3 has bos_token: null")
	require.False(t, q.AddBOSToken())
	// Qwen3's post-processor adds nothing.
	require.Equal(t, q.Encode("hi"), q.EncodeWithSpecialTokens("hi"))

	require.False(t, q.CleanUpTokenizationSpaces())
	// transformers' clean_up_tokenization, applied in its order.
	require.Equal(t, "Hello, world! It's ok. Don't 're", CleanUpTokenizationSpaces("Hello , world ! It 's ok . Do n't  're"))

	l := llama(t)
	require.True(t, l.CleanUpTokenizationSpaces())
	require.Equal(t, 128256, l.VocabSize())
	require.Equal(t, []int32{128009, 128001}, l.EOSTokenIDs(), "<|eot_id|> (eos_token), <|end_of_text|>")
	// Llama 3's TemplateProcessing adds <|begin_of_text|> (as HF encode() does by default).
	require.Equal(t, append([]int32{128000}, l.Encode("hi there")...), l.EncodeWithSpecialTokens("hi there"))
}

// TestConcurrentEncode runs Encode from many goroutines (the word cache is
// shared) and checks every result; run with -race.
func TestConcurrentEncode(t *testing.T) {
	tok := qwen(t)
	texts := make([]string, 64)
	want := make([][]int32, len(texts))
	for i := range texts {
		texts[i] = fmt.Sprintf("request %d: %s 你好 %d", i, strings.Repeat("lorem ipsum ", i%7), i*i)
		want[i] = tok.Encode(texts[i])
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := 0; k < 200; k++ {
				i := (g*31 + k) % len(texts)
				got := tok.Encode(texts[i])
				if fmt.Sprint(got) != fmt.Sprint(want[i]) {
					errs <- fmt.Errorf("goroutine %d: text %d: got %v want %v", g, i, got, want[i])
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
