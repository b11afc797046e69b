package agentrl_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/agentrl/agentrl"

// importRules is ARCHITECTURE.md's dependency table: for each package
// (a path relative to the module; "x/..." is x and everything under it,
// the longest match wins) the packages of this module it may import.
// Tests may import more (test helpers such as server/servertest); these
// rules are about the code a user links. A package no rule matches fails
// the test: a new package gets a line here and in ARCHITECTURE.md, and
// TestArchitectureDocAgrees fails unless the two say the same.
var importRules = map[string][]string{
	"":                nil, // the module's doc package
	"chat":            nil,
	"safetensors":     nil,
	"trajectory":      {"safetensors"},
	"tokenizer":       {"chat", "tokenizer/jinja"},
	"tokenizer/jinja": nil,
	"tokenizer/...":   {"chat", "tokenizer"},
	"parser/...":      {"chat", "parser"},
	"tool/...":        {"chat", "tool/...", "internal/yamlline", "vision"},
	"server":          nil,
	"server/httpapi":  {"server", "server/internal/wire", "chat", "tokenizer", "parser", "vision"},
	"server/sglang":   {"server", "server/internal/httpclient", "server/internal/wire"},
	"server/vllm":     {"server", "server/internal/httpclient", "server/internal/wire"},
	"server/internal/...": {"server", "server/internal/...", "server/httpapi", "server/servertest",
		"internal/cputime"},
	"server/servertest": {"server"},
	"router":            {"server"},
	"cuda":              {"server", "cuda/kernels", "cuda/kvcache", "cuda/model"},
	"cuda/kernels":      nil,
	"cuda/gpu":          nil,
	"cuda/kvcache":      nil,
	"cuda/model":        {"cuda/kernels", "cuda/gpu", "safetensors"},
	"cuda/gguf":         {"cuda/model", "cuda/kernels", "safetensors"},
	"cuda/train":        {"cuda/kernels", "cuda/model", "server"},
	"cuda/internal/...": {"safetensors"},
	// agentloop gets engines as server.LLMServer, never router or cuda.
	"agentloop": {"chat", "trajectory", "tokenizer", "parser", "tool", "server", "vision"},
	"dataset":   {"agentloop", "chat", "trajectory"},
	"view":      {"trajectory", "tokenizer"},
	"vision":    nil,
	// capture wraps the serving path (httpapi's Recorder hook) and
	// rebuilds trajectories; nothing but binaries (and its collector)
	// imports it. It imports
	// agentloop for HarnessLoop, a harness run as an AgentLoop.
	"capture": {"agentloop", "chat", "server", "server/httpapi", "tokenizer", "trajectory"},
	// Observability adapters: each reads one package's hooks or stats.
	"agentloop/agentprom": {"agentloop", "tool"},
	"agentloop/otelagent": {"agentloop", "tool"},
	"cuda/cudaprom":       {"cuda"},
	"router/routerprom":   {"router"},
	"capture/captureprom": {"capture"},
	"trainer":             {"trajectory"},
	"trainer/reference":   {"trainer", "trajectory", "agentloop", "server", "cuda/train", "cuda/model"},
	"internal/cputime":    nil,
	"internal/yamlline":   nil,
	"internal/syncbuf":    nil,

	// The event streams the trace consumers' benchmarks feed (tests only).
	"agentloop/internal/tracestream": {"agentloop"},

	// The small test tokenizer: a merge-free bpetrain tokenizer (tests only).
	"tokenizer/tokenizertest": {"tokenizer", "tokenizer/bpetrain"},

	// The application behind agentrl demo/train: everything but the
	// binaries and examples.
	"internal/arith": {"agentloop", "chat", "cuda", "cuda/...", "parser", "server", "tokenizer", "tokenizer/...",
		"tool", "trainer", "trainer/...", "trajectory"},
	"cmd/...":      {"*"},
	"examples/...": {"*"},
	// Test programs the harness script builds (scripts/harnesses).
	"scripts/...": {"*"},
}

// grabBags are package names that say nothing about what is inside.
var grabBags = []string{"util", "utils", "common", "misc", "helpers", "shared", "base"}

type listedPackage struct {
	ImportPath string
	Name       string
	Imports    []string
}

// TestImportRules checks every package's imports of this module against
// importRules, with and without the cuda build tags (the GPU backend's
// files import package gpu), and that no package is named like a grab bag.
func TestImportRules(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the packages with")
	}
	for _, tags := range []string{"", "cuda,cudaemu"} {
		pkgs := listPackages(t, goBin, tags)
		if len(pkgs) < 10 {
			t.Fatalf("go list -tags %q found %d packages; is the test running in the module root?", tags, len(pkgs))
		}
		for _, p := range pkgs {
			rel := relative(p.ImportPath)
			if slices.Contains(grabBags, p.Name) {
				t.Errorf("%s: package name %q says nothing about its contents", rel, p.Name)
			}
			allowed, ok := rulesFor(rel)
			if !ok {
				t.Errorf("%s: no import rule; add one to importRules and to ARCHITECTURE.md", rel)
				continue
			}
			for _, imp := range p.Imports {
				if !strings.HasPrefix(imp+"/", module+"/") {
					continue // standard library or third party
				}
				dep := relative(imp)
				if (strings.HasPrefix(dep, "cmd/") || strings.HasPrefix(dep, "examples/")) &&
					!strings.HasPrefix(dep, "examples/internal/") {
					t.Errorf("%s imports %s: nothing imports the binaries or the examples", rel, dep)
					continue
				}
				if !permits(allowed, dep) {
					t.Errorf("%s imports %s (tags %q), which its rule does not allow (allowed: %v)", rel, dep, tags, allowed)
				}
			}
		}
	}
}

// TestImportRulesMatching pins down the rule matching itself.
func TestImportRulesMatching(t *testing.T) {
	for _, c := range []struct {
		pkg  string
		rule string
	}{
		{"tokenizer", "tokenizer"},
		{"tokenizer/bpetrain", "tokenizer/..."},
		{"tool/python", "tool/..."},
		{"server/internal/wire", "server/internal/..."},
		{"cmd/agentrl", "cmd/..."},
	} {
		got, ok := rulesFor(c.pkg)
		if !ok || !slices.Equal(got, importRules[c.rule]) {
			t.Errorf("rulesFor(%q) = %v, %v; want the rule %q", c.pkg, got, ok, c.rule)
		}
	}
	if _, ok := rulesFor("newpkg"); ok {
		t.Error("a package without a rule matched one")
	}
	if !permits([]string{"tool/..."}, "tool") || !permits([]string{"tool/..."}, "tool/mcp") || permits([]string{"tool"}, "tool/mcp") {
		t.Error(`"x/..." must cover x and its subpackages, "x" only x`)
	}
	if permits(importRules["agentloop"], "router") || permits(importRules["agentloop"], "cuda") {
		t.Error("agentloop may not import router or cuda")
	}
}

func listPackages(t *testing.T, goBin, tags string) []listedPackage {
	t.Helper()
	args := []string{"list", "-json=ImportPath,Name,Imports"}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command(goBin, append(args, "./...")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func relative(importPath string) string {
	if importPath == module {
		return ""
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// rulesFor returns the rule of the exact package, else of its longest
// "x/..." pattern.
func rulesFor(pkg string) ([]string, bool) {
	if r, ok := importRules[pkg]; ok {
		return r, true
	}
	best, found := "", false
	for pat := range importRules {
		base, ok := strings.CutSuffix(pat, "/...")
		if ok && (pkg == base || strings.HasPrefix(pkg, base+"/")) && len(pat) > len(best) {
			best, found = pat, true
		}
	}
	return importRules[best], found
}

// permits reports whether dep matches one of the allowed patterns.
func permits(allowed []string, dep string) bool {
	for _, a := range allowed {
		if a == "*" || a == dep {
			return true
		}
		if base, ok := strings.CutSuffix(a, "/..."); ok && (dep == base || strings.HasPrefix(dep, base+"/")) {
			return true
		}
	}
	return false
}

// docRules parses the dependency-rule block of ARCHITECTURE.md (the first
// code block after "## Dependency rules"): each line holds one or more
// rules separated by ';', a rule is "a, b ──▶ c, d" (any run of ─ before
// ▶, or ->), text in parentheses is a comment (it may run onto the next
// lines), an indented line without an arrow continues the previous rule's
// list. "anything" is "*", "nothing of ours" the empty list, and the root
// package is named "agentrl". Lines it cannot read are errors, so that a
// rule the test would skip cannot slip in.
func docRules(doc string) (map[string][]string, error) {
	_, rest, ok := strings.Cut(doc, "\n## Dependency rules\n")
	if !ok {
		return nil, errors.New(`no "## Dependency rules" section`)
	}
	_, rest, ok = strings.Cut(rest, "```\n")
	if !ok {
		return nil, errors.New("no code block in the dependency rules section")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		return nil, errors.New("the dependency rules' code block is not closed")
	}
	arrow := regexp.MustCompile(`\s*(─+▶|->)\s*`)
	list := func(s string) []string {
		var out []string
		for _, f := range strings.Split(s, ",") {
			f = strings.Trim(strings.TrimSpace(f), "`")
			f = strings.ReplaceAll(f, "/*", "/...")
			if f == "agentrl" {
				f = ""
			}
			if f != "" || strings.TrimSpace(s) == "agentrl" {
				out = append(out, f)
			}
		}
		return out
	}
	rules := map[string][]string{}
	var last []string // the importers of the previous rule, for continuations
	depth := 0
	for n, line := range strings.Split(block, "\n") {
		// Drop comments, which may span lines.
		var b strings.Builder
		for _, r := range line {
			switch {
			case r == '(':
				depth++
			case r == ')' && depth > 0:
				depth--
			case depth == 0:
				b.WriteRune(r)
			}
		}
		text := strings.TrimRight(b.String(), " \t")
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !arrow.MatchString(text) {
			if last == nil || !strings.HasPrefix(text, " ") {
				return nil, fmt.Errorf("ARCHITECTURE.md rule block line %d: %q has no arrow and continues no rule", n+1, line)
			}
			for _, imp := range last {
				rules[imp] = append(rules[imp], list(text)...)
			}
			continue
		}
		for _, part := range strings.Split(text, ";") {
			lr := arrow.Split(part, -1)
			if len(lr) != 2 {
				return nil, fmt.Errorf("ARCHITECTURE.md rule block line %d: %q is not \"importers ──▶ imported\"", n+1, part)
			}
			var deps []string
			switch r := strings.TrimSpace(lr[1]); r {
			case "anything":
				deps = []string{"*"}
			case "nothing of ours", "nothing":
			default:
				deps = list(r)
			}
			last = list(lr[0])
			if len(last) == 0 {
				return nil, fmt.Errorf("ARCHITECTURE.md rule block line %d: %q names no importer", n+1, part)
			}
			for _, imp := range last {
				if _, dup := rules[imp]; dup {
					return nil, fmt.Errorf("ARCHITECTURE.md rule block line %d: %q has a second rule", n+1, imp)
				}
				rules[imp] = slices.Clone(deps)
			}
		}
	}
	return rules, nil
}

// TestArchitectureDocAgrees: ARCHITECTURE.md's rule block and importRules
// name the same packages with the same allowed imports (as sets).
func TestArchitectureDocAgrees(t *testing.T) {
	data, err := os.ReadFile("ARCHITECTURE.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := docRules(string(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range ruleDiff(doc, importRules) {
		t.Error(d)
	}
}

// ruleDiff lists how the doc's rules and the test's table differ.
func ruleDiff(doc, table map[string][]string) []string {
	sorted := func(s []string) []string {
		s = slices.Clone(s)
		slices.Sort(s)
		return slices.Compact(s)
	}
	var out []string
	for pkg, want := range table {
		got, ok := doc[pkg]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%q: in importRules, no rule line in ARCHITECTURE.md", pkg))
		case !slices.Equal(sorted(got), sorted(want)):
			out = append(out, fmt.Sprintf("%q: ARCHITECTURE.md allows %v, importRules %v", pkg, sorted(got), sorted(want)))
		}
	}
	for pkg := range doc {
		if _, ok := table[pkg]; !ok {
			out = append(out, fmt.Sprintf("%q: a rule line in ARCHITECTURE.md, none in importRules", pkg))
		}
	}
	slices.Sort(out)
	return out
}

// TestDocRulesParsing pins the parser on the forms the doc uses, and shows
// that a drift either way is reported.
func TestDocRulesParsing(t *testing.T) {
	doc := "x\n## Dependency rules\n\ntext\n```\n" +
		"a, b/* ──▶ anything (a comment\n" +
		"                     that goes on)\n" +
		"c ─▶ a, `b/...` (why);  d -> nothing of ours\n" +
		"e ──▶ a,\n" +
		"      c\n" +
		"agentrl ──▶ nothing of ours\n" +
		"```\nafter\n```\nz ──▶ y\n```\n"
	got, err := docRules(doc)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"*"}, "b/...": {"*"}, "c": {"a", "b/..."}, "d": nil, "e": {"a", "c"}, "": nil}
	if d := ruleDiff(got, want); len(d) > 0 {
		t.Fatalf("parsed %v: %v", got, d)
	}
	// Drift: a package only in the table, one only in the doc, and a
	// differing list are each reported.
	drift := map[string][]string{"a": {"*"}, "b/...": {"*"}, "c": {"a"}, "d": nil, "": nil, "f": nil}
	if d := ruleDiff(got, drift); len(d) != 3 {
		t.Fatalf("drift reported as %v, want 3 differences", d)
	}
	for _, bad := range []string{
		"x\n## Dependency rules\n```\na b\n```\n",           // no arrow, no rule to continue
		"x\n## Dependency rules\n```\na ──▶ b ──▶ c\n```\n", // two arrows
		"x\n## Dependency rules\n```\na ──▶ b\na ──▶ c\n```\n",
		"x\n## Dependency rules\nno block\n",
	} {
		if _, err := docRules(bad); err == nil {
			t.Errorf("docRules accepted %q", bad)
		}
	}
}
