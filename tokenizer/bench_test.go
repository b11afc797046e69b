package tokenizer

import (
	"os"
	"path/filepath"
	"sort"
	"testing"
	"unicode/utf8"
)

// benchCorpus is the mixed corpus of the encode benchmark, built the same
// way by scripts/bench_hf.js: the shared seed documents (Chinese prose with
// English terms and Python code), the shared design and reference docs
// (English prose) and this package's Go sources (code), concatenated in
// sorted path order and cut into pieces of 2,000 characters.
func benchCorpus(b testing.TB) []string {
	b.Helper()
	var paths []string
	for _, pat := range []string{"../../shared/seeds/*.txt", "../../shared/reference/*.md", "../../shared/DESIGN.md", "*.go"} {
		m, _ := filepath.Glob(pat)
		for _, p := range m {
			if !isTestFile(p) {
				paths = append(paths, p)
			}
		}
	}
	sort.Strings(paths)
	var all []byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, data...)
	}
	if !utf8.Valid(all) {
		b.Fatal("corpus is not UTF-8")
	}
	var pieces []string
	s := string(all)
	for len(s) > 0 {
		n, i := 0, 0
		for i < len(s) && n < 2000 {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			n++
		}
		pieces = append(pieces, s[:i])
		s = s[i:]
	}
	return pieces
}

func isTestFile(p string) bool {
	return len(p) > 8 && p[len(p)-8:] == "_test.go"
}

func BenchmarkEncodeQwen3(b *testing.B) {
	tok := qwen(b)
	pieces := benchCorpus(b)
	total := 0
	for _, p := range pieces {
		total += len(p)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	var dst []int32
	for i := 0; i < b.N; i++ {
		for _, p := range pieces {
			dst = tok.AppendEncode(dst[:0], p)
		}
	}
}

// BenchmarkEncodeQwen3Cold measures encoding without the word cache's help:
// a fresh tokenizer copy per iteration.
func BenchmarkEncodeQwen3Cold(b *testing.B) {
	tok := qwen(b)
	pieces := benchCorpus(b)
	total := 0
	for _, p := range pieces {
		total += len(p)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tok.model.cache = wordCache{}
		tok.model.cache.init()
		b.StartTimer()
		for _, p := range pieces {
			tok.Encode(p)
		}
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	dir := qwenTokDir(b)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeQwen3(b *testing.B) {
	tok := qwen(b)
	pieces := benchCorpus(b)
	var ids [][]int32
	total := 0
	for _, p := range pieces {
		ids = append(ids, tok.Encode(p))
		total += len(p)
	}
	b.SetBytes(int64(total))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, x := range ids {
			if _, err := tok.Decode(x, false); err != nil {
				b.Fatal(err)
			}
		}
	}
}
