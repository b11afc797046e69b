// Package exampletest gives the examples' tests the Qwen3 tokenizer.
package exampletest

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Qwen3Dir unpacks the Qwen3 tokenizer committed (gzipped) with the
// tokenizer package into a temporary directory and returns it.
func Qwen3Dir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		f, err := os.Open(filepath.Join("..", "..", "tokenizer", "testdata", "qwen3", name+".gz"))
		if err != nil {
			t.Fatalf("opening the Qwen3 tokenizer: %v", err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(zr)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
