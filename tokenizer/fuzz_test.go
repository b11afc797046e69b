package tokenizer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"golang.org/x/text/unicode/norm"
)

var fuzzSeeds = []string{
	"", "hello world", "don't STOP'LL", "  \n\n\t x  ", "12345 ٣٤ ²", "<|im_start|>user\nhi<|im_end|>",
	"中文 日本語 한국어", "e\u0301\u0301", "🙂👩\u200d💻", "\r\n\r\n  \n", "a\u00a0\u3000b", "<think>x</think>",
	strings.Repeat("ab", 40), "'s's'S", "\x00\x01\x7f",
}

// FuzzEncodeDecode checks Decode(Encode(s)) == NFC(s) for valid UTF-8 with
// Qwen3 (whose normalizer is NFC) and that encoding never panics.
func FuzzEncodeDecode(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	tok := qwen(f)
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		got, err := tok.Decode(ids, false)
		require.NoError(t, err)
		if !utf8.ValidString(s) {
			require.True(t, utf8.ValidString(got))
			return
		}
		// NFC is applied to the text between added tokens, as HF does.
		var want strings.Builder
		for _, p := range tok.rawAdded.split(s, nil) {
			if p.id >= 0 {
				want.WriteString(p.text)
			} else {
				want.WriteString(norm.NFC.String(p.text))
			}
		}
		require.Equal(t, want.String(), got)
	})
}

// FuzzFastPattern checks the hand-written pre-tokenizer matchers against
// regexp2 running the same regex.
func FuzzFastPattern(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	type pair struct {
		fast matcher
		ref  *regexp2Matcher
	}
	var pairs []pair
	for pat, fast := range knownPatterns {
		ref, err := compileRegexp2(pat)
		require.NoError(f, err)
		pairs = append(pairs, pair{fast, ref})
	}
	for pat, fast := range knownSearchers {
		ref, err := compileRegexp2(pat)
		require.NoError(f, err)
		pairs = append(pairs, pair{fast, ref})
	}
	for _, s := range []string{"3D x1 ab12cd", ".append(x)\n\n", "\u200b\u200bz", "中文ひらがなカタカナ", "é\u0301\u0301 a", "$$ ++\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // text is made valid before pre-tokenization
		}
		for _, p := range pairs {
			got, err := p.fast.findAll(s, nil)
			require.NoError(t, err)
			want, err := p.ref.findAll(s, nil)
			require.NoError(t, err)
			require.Equal(t, want, got, "%q", s)
		}
	})
}

// FuzzLoad feeds arbitrary bytes to the tokenizer.json loader: it must
// return a tokenizer or an error, never panic or hang.
func FuzzLoad(f *testing.F) {
	small := `{"version":"1.0","added_tokens":[{"id":3,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],` +
		`"normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},` +
		`"post_processor":null,"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`
	f.Add([]byte(small))
	f.Add([]byte(strings.Replace(small, `["a b"]`, `[["a","b"]]`, 1)))
	f.Add([]byte(strings.Replace(small, `"NFC"`, `"Lowercase"`, 1)))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"model":{"vocab":{"a":1e3}}}`))
	f.Add([]byte(`[`))
	f.Add([]byte(small[:len(small)/2]))
	f.Add([]byte(strings.Replace(small, `{"type":"NFC"}`, `{"type":"Sequence","normalizers":[{"type":"Replace","pattern":{"String":"a"},"content":"aaaa"},{"type":"Replace","pattern":{"Regex":"a+"},"content":"bb"},{"type":"Prepend","prepend":"x"}]}`, 1)))
	f.Add([]byte(strings.Replace(small, `{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true}`,
		`{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(a+)+b|\\s"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}]}`, 1)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromJSON(data)
		if err != nil {
			require.NotEmpty(t, err.Error())
			return
		}
		ids, err := tok.EncodeChecked("ab <s> ba")
		if err != nil {
			require.ErrorIs(t, err, ErrLimit)
			return
		}
		_, err = tok.Decode(ids, true)
		require.NoError(t, err)
	})
}

func TestLoadErrors(t *testing.T) {
	valid := readGunzip(t, "testdata/qwen3/tokenizer.json.gz")
	// Component errors are checked on a small tokenizer.json (loading the
	// full one is slow under -race); the pre-tokenizer is Qwen3's.
	small := []byte(`{"added_tokens":[],"normalizer":{"type":"NFC"},
		"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"(?i:'s)|\\s+"},"behavior":"Isolated","invert":false},
		{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},
		"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":["a b"]}}`)
	_, err := FromJSON(small)
	require.NoError(t, err)
	replace := func(old, new string) []byte {
		require.Contains(t, string(small), old)
		return bytes.Replace(small, []byte(old), []byte(new), 1)
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "unexpected end"},
		{"truncated", valid[:len(valid)/2], "invalid tokenizer file: at byte"},
		{"not an object", []byte(`[1,2]`), "want '{'"},
		{"no model", []byte(`{"added_tokens":[]}`), "no \"model\""},
		{"unknown model", []byte(`{"model":{"type":"Unigram","vocab":{}}}`), `unsupported model type "Unigram"`},
		{"unknown normalizer", replace(`{"type":"NFC"}`, `{"type":"Lowercase"}`), `unsupported normalizer type "Lowercase"`},
		{"unknown pre-tokenizer", replace(`"type":"Split"`, `"type":"Metaspace"`), `unsupported pre_tokenizer type "Metaspace"`},
		{"unknown decoder", []byte(`{"decoder":{"type":"WordPiece"},"model":{"vocab":{}}}`), `unsupported decoder type "WordPiece"`},
		{"unknown post-processor", []byte(`{"post_processor":{"type":"Fancy"},"model":{"vocab":{}}}`), `unsupported post_processor type "Fancy"`},
		{"bad split behavior", replace(`"behavior":"Isolated"`, `"behavior":"Sideways"`), `unknown behavior "Sideways"`},
		{"bad regex", replace(`"Regex":"(?i:`, `"Regex":"(?<`), "regex"},
		{"merge not in vocab", []byte(`{"model":{"vocab":{"a":0},"merges":["a b"]}}`), `merges[0]: "b" is not in the vocab`},
		{"merge result not in vocab", []byte(`{"model":{"vocab":{"a":0,"b":1},"merges":["a b"]}}`), `"ab" is not in the vocab`},
		{"merge not a pair", []byte(`{"model":{"vocab":{"a":0},"merges":["ab"]}}`), "not a pair"},
		{"merge triple", []byte(`{"model":{"vocab":{"a":0},"merges":[["a","a","a"]]}}`), "3 elements"},
		{"vocab id not integer", []byte(`{"model":{"vocab":{"a":"x"}}}`), "want an integer"},
		{"negative id", []byte(`{"model":{"vocab":{"a":-1}}}`), "invalid id -1"},
		{"duplicate id", []byte(`{"model":{"vocab":{"a":0,"b":0}}}`), "vocab id 0 is used"},
		{"dropout", []byte(`{"model":{"dropout":0.1,"vocab":{}}}`), "dropout"},
		{"unk not in vocab", []byte(`{"model":{"unk_token":"<unk>","vocab":{"a":0}}}`), "unk_token"},
		{"added tokens not a list", []byte(`{"added_tokens":5,"model":{"vocab":{}}}`), "added_tokens"},
		{"trailing data", []byte(`{"model":{"vocab":{}}} x`), "trailing data"},
		{"ByteLevel not last", []byte(`{"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"ByteLevel"},{"type":"Digits"}]},"model":{"vocab":{}}}`), "after ByteLevel"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromJSON(c.data)
			require.Error(t, err)
			require.ErrorContains(t, err, c.want)
		})
	}
	_, err = FromJSON([]byte(`{"model":{"type":"WordPiece","vocab":{}}}`))
	require.ErrorIs(t, err, ErrUnsupported)
	_, err = FromJSON(valid[:100])
	require.ErrorIs(t, err, ErrInvalid)
}

func TestEncodeBadInput(t *testing.T) {
	tok := qwen(t)
	// Invalid UTF-8 becomes U+FFFD (one per maximal invalid subpart).
	ids := tok.Encode("a\xffb\xe4\xb8c")
	got, err := tok.Decode(ids, false)
	require.NoError(t, err)
	require.Equal(t, "a\uFFFDb\uFFFDc", got)

	_, err = tok.Decode([]int32{1, -1}, false)
	require.ErrorContains(t, err, "ids[1] = -1")
	_, err = tok.Decode([]int32{int32(tok.VocabSize())}, false)
	require.ErrorContains(t, err, "not in the vocabulary")
}

var hugeInputs = map[string]func(n int) string{
	"letters": func(n int) string { return strings.Repeat("abcdefghij", n/10) },
	"spaces":  func(n int) string { return strings.Repeat(" ", n-1) + "x" },
	"mixed":   func(n int) string { return strings.Repeat("héllo wörld 12 ,.; 中文 ", n/32) },
}

func BenchmarkEncodeHuge(b *testing.B) {
	tok := qwen(b)
	for _, name := range []string{"letters", "spaces", "mixed"} {
		s := hugeInputs[name](10 << 20)
		b.Run(name+"-10MB", func(b *testing.B) {
			b.SetBytes(int64(len(s)))
			for i := 0; i < b.N; i++ {
				tok.Encode(s)
			}
		})
	}
}

// FuzzContinuousConfig feeds arbitrary config.json bytes and family names
// to the continuous-token family lookup: a model_type or an error naming
// the file, a family or an error, never a panic.
func FuzzContinuousConfig(f *testing.F) {
	f.Add([]byte(`{"model_type": "qwen3"}`), "auto")
	f.Add([]byte(`{"model_type": null}`), "Qwen_3.5")
	f.Add([]byte(`{"text_config": {"model_type": "gemma4"}}`), "glm-4.7")
	f.Add([]byte(`{"model_type": 7}`), "")
	f.Add([]byte(`[`), "\xff")
	f.Fuzz(func(t *testing.T, cfg []byte, family string) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
		mt, err := ReadModelType(dir)
		if err != nil {
			require.Contains(t, err.Error(), "config.json")
		} else {
			fam, ok := ContinuousFamilyForModelType(mt)
			require.Equal(t, ok, fam != FamilyDefault, "no model_type maps to the default family: it is the fallback")
		}
		fam, err := ParseContinuousFamily(family)
		if err != nil {
			require.ErrorIs(t, err, ErrContinuous)
			return
		}
		require.Contains(t, ContinuousFamilies(), fam)
	})
}
