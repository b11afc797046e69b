package tokenizer

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMergeHeapEqualsScan checks that the two merge loops (a scan for short
// words, a heap for long ones) agree, on real words and random byte strings.
func TestMergeHeapEqualsScan(t *testing.T) {
	for _, tok := range []*Tokenizer{qwen(t)} {
		m := tok.model
		var words []string
		for _, s := range []string{"internationalization", "hello", " the", "ааааааааа", "中文分词器", "🙂🙂🙂🙂",
			strings.Repeat("ab", 30), strings.Repeat("a", 100), "supercalifragilisticexpialidocious"} {
			words = append(words, s)
		}
		rng := rand.New(rand.NewPCG(7, 9))
		alphabet := []byte("aeinrstl ĠtheingЖ中")
		n := 2000
		if raceEnabled {
			n = 300
		}
		for i := 0; i < n; i++ {
			n := 1 + rng.IntN(60)
			b := make([]byte, n)
			for j := range b {
				if rng.IntN(4) == 0 {
					b[j] = byte(rng.IntN(256))
				} else {
					b[j] = alphabet[rng.IntN(len(alphabet))]
				}
			}
			words = append(words, string(b))
		}
		for _, w := range words {
			small := m.mergeSmall(m.initialSymbols(nil, w))
			big := m.mergeHeap(m.initialSymbols(nil, w))
			require.Equal(t, small, big, "%q", w)
		}
	}
}
