package parser

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsListEveryFormat: the package doc, ARCHITECTURE.md's and the
// README's parser rows name every format New accepts, so that a format
// added later is not missing from the places a user looks first.
func TestDocsListEveryFormat(t *testing.T) {
	row := func(file string) string {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "| `parser` |") {
				return l
			}
		}
		t.Fatalf("%s has no `parser` row", file)
		return ""
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	places := map[string]string{
		"doc.go":             string(doc),
		"../ARCHITECTURE.md": row("../ARCHITECTURE.md"),
		"../README.md":       row("../README.md"),
	}
	for _, name := range Formats() {
		for file, text := range places {
			// The name as a word of its own: deepseek_v3 is not in deepseek_v31.
			if !regexp.MustCompile(`(^|[^a-z0-9_])` + regexp.QuoteMeta(name) + `([^a-z0-9_]|$)`).MatchString(text) {
				t.Errorf("%s does not list the format %q", file, name)
			}
		}
	}
}
