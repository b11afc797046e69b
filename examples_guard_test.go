package agentrl_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocSnippetsHaveExamples: every package whose doc.go shows code has a
// runnable Example next to it, so that `go test` compiles (and, with an
// Output comment, checks) what the documentation tells users to write.
// Internal packages are not documentation for users; cuda/gpu's API
// exists only under the cuda build tag (its tests run there).
func TestDocSnippetsHaveExamples(t *testing.T) {
	snippet := regexp.MustCompile(`(?m)^//\t\S`)
	example := regexp.MustCompile(`(?m)^func Example\w*\(\)`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal") {
				return filepath.SkipDir
			}
			if path == filepath.Join("cuda", "gpu") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Name() != "doc.go" {
			return nil
		}
		doc, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !snippet.Match(doc) {
			return nil
		}
		dir := filepath.Dir(path)
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			return err
		}
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			if example.Match(src) {
				return nil
			}
		}
		t.Errorf("%s shows code in its package doc but has no runnable Example in %s/*_test.go", path, dir)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDocSnippetsAreExamples: in the packages listed, every code line of
// the package doc's sketch appears, as written, in the package's tests
// (its runnable Example), so the compiler checks the sketch: no name in it
// is undefined or out of date. Comment lines of a sketch are exempt, and
// so is leading white space.
func TestDocSnippetsAreExamples(t *testing.T) {
	for _, dir := range []string{"trainer"} {
		doc, err := os.ReadFile(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Fatal(err)
		}
		tests, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, f := range tests {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(src), "\n") {
				have[strings.TrimSpace(l)] = true
			}
		}
		n := 0
		for _, l := range strings.Split(string(doc), "\n") {
			code, ok := strings.CutPrefix(l, "//\t")
			code = strings.TrimSpace(code)
			if !ok || code == "" || strings.HasPrefix(code, "//") {
				continue
			}
			n++
			if !have[code] {
				t.Errorf("%s/doc.go's sketch line %q is in none of %s/*_test.go: the compiler does not check it", dir, code, dir)
			}
		}
		if n == 0 {
			t.Errorf("%s/doc.go shows no code", dir)
		}
	}
}
