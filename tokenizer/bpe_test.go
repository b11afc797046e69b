package tokenizer

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
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
		words = append(words, []string{"internationalization", "hello", " the", "ааааааааа", "中文分词器", "🙂🙂🙂🙂",
			strings.Repeat("ab", 30), strings.Repeat("a", 100), "supercalifragilisticexpialidocious"}...)
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

// TestKnownPatternsRecognized makes sure the pre-tokenizer regexes of the
// variants file (copied from real tokenizer.json files) select the fast
// matchers rather than regexp2.
func TestKnownPatternsRecognized(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "variants.json"))
	require.NoError(t, err)
	var variants []struct {
		Name         string `json:"name"`
		PreTokenizer struct {
			Pretokenizers []struct {
				Pattern struct{ Regex string } `json:"pattern"`
			} `json:"pretokenizers"`
		} `json:"pre_tokenizer"`
	}
	require.NoError(t, json.Unmarshal(data, &variants))
	n := 0
	for _, v := range variants {
		if v.Name != "deepseek_v3_pattern" && v.Name != "llama3_pattern_on_qwen" {
			continue
		}
		for _, p := range v.PreTokenizer.Pretokenizers {
			if p.Pattern.Regex == "" {
				continue
			}
			m, err := newRegexMatcher(p.Pattern.Regex)
			require.NoError(t, err)
			_, slow := m.(*regexp2Matcher)
			require.False(t, slow, "%s: %q", v.Name, p.Pattern.Regex)
			n++
		}
	}
	require.Equal(t, 4, n)
	m, err := newRegexMatcher(patternQwen2)
	require.NoError(t, err)
	require.IsType(t, &fastPattern{}, m)
}
