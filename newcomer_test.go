package agentrl_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestNewcomer walks the first hour of a new user from a fresh clone of the
// committed repository (not the working tree): the README's "Try it"
// commands, run as written (the clone URL replaced by this checkout, as
// there may be no network), must work and print the demo's table; so must
// its "Use it from your module" commands and program; the examples build
// and run with no flags; every command and subcommand of the built binary
// answers --help with exit status 0, its usage and flags.
//
// It needs git and the go command and skips outside a git checkout (e.g.
// in a module cache or an unpacked archive) and with -short.
func TestNewcomer(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the newcomer test builds the command from a fresh clone")
	}
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	top, err := exec.Command(gitBin, "-C", wd, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skip("not in a git checkout")
	}
	root := strings.TrimSpace(string(top))
	goBin := goCommand(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	tmp := t.TempDir()

	// The README's commands, as a newcomer types them.
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds := shellBlock(t, string(readme), "## Try it")
	dir := tmp
	var clone, demoOut string
	for _, line := range cmds {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "git" && f[1] == "clone":
			clone = filepath.Join(dir, strings.TrimSuffix(filepath.Base(f[2]), ".git"))
			run(ctx, t, dir, gitBin, "clone", "--quiet", "--no-hardlinks", root, clone)
		case len(f) == 2 && f[0] == "cd":
			dir = filepath.Join(dir, f[1])
		case len(f) >= 3 && f[0] == "go" && f[1] == "run":
			demoOut = run(ctx, t, dir, goBin, f[1:]...)
		default:
			t.Fatalf("README's Try it has a command this test does not know how to check: %q", line)
		}
	}
	if clone == "" || dir != clone || demoOut == "" {
		t.Fatalf("README's Try it should clone, cd into the clone and go run the demo; got %q", cmds)
	}
	checkDemo(t, demoOut)
	checkUseFromModule(ctx, t, string(readme), root, gitBin, goBin)

	// The examples build, and each runs from the clone with no flags.
	run(ctx, t, clone, goBin, "build", "./examples/...")
	for _, ex := range []string{"customloop", "remoterouter", "usersim"} {
		if out := run(ctx, t, clone, goBin, "run", "./examples/"+ex); strings.TrimSpace(out) == "" {
			t.Errorf("examples/%s printed nothing", ex)
		}
	}

	// Every command's and subcommand's --help.
	bin := filepath.Join(tmp, "bin", "agentrl")
	run(ctx, t, clone, goBin, "build", "-o", bin, "./cmd/agentrl")
	usage := run(ctx, t, clone, bin, "--help")
	names := commandNames(t, usage)
	subs := map[string][]string{"model": {"init", "info", "gguf"}, "bench": {"engine"}}
	flagLine := regexp.MustCompile(`(?m)^\s+-[a-z][a-z0-9-]*`)
	for _, name := range names {
		args := [][]string{{name, "--help"}}
		for _, s := range subs[name] {
			args = append(args, []string{name, s, "--help"})
		}
		for _, a := range args {
			out := run(ctx, t, clone, bin, a...)
			if !strings.Contains(out, "usage: agentrl "+strings.Join(a[:len(a)-1], " ")) {
				t.Errorf("agentrl %s: no usage line:\n%s", strings.Join(a, " "), out)
			}
			if name != "version" && !flagLine.MatchString(out) {
				t.Errorf("agentrl %s lists no flags:\n%s", strings.Join(a, " "), out)
			}
		}
	}
	for _, want := range []string{"demo", "rollout", "serve", "model", "bench", "version"} {
		if !strings.Contains(" "+strings.Join(names, " ")+" ", " "+want+" ") {
			t.Errorf("agentrl --help does not list %q:\n%s", want, usage)
		}
	}
}

// goCommand finds the go command: `go test` puts the running toolchain's
// bin directory first on PATH.
func goCommand(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	return p
}

// checkUseFromModule runs the README's "Use it from your module" commands
// as written, in a fresh directory, with its main.go: a module of the
// user's own that reaches a clone through a replace directive must tidy,
// build and print what the README says. The go command runs with no
// network (GOPROXY=off: the modules agentrl needs are in the module cache
// once it has been built; GOSUMDB=off: a user's go command checks the new
// go.sum lines against sum.golang.org, which a test cannot reach).
func checkUseFromModule(ctx context.Context, t *testing.T, readme, root, gitBin, goBin string) {
	t.Helper()
	const heading = "## Use it from your module"
	sec := readme[strings.Index(readme, "\n"+heading+"\n"):]
	mainGo, ok := codeBlock(sec, "go")
	if !ok {
		t.Fatalf("README's %q has no go block", heading)
	}
	m := regexp.MustCompile("It prints `([^`]+)`").FindStringSubmatch(sec)
	if m == nil {
		t.Fatalf("README's %q does not say what the program prints", heading)
	}
	env := append(os.Environ(), "GOPROXY=off", "GOSUMDB=off")
	dir := t.TempDir()
	var out string
	for _, line := range shellBlock(t, readme, heading) {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "git" && f[1] == "clone":
			run(ctx, t, dir, gitBin, "clone", "--quiet", "--no-hardlinks", root, filepath.Join(dir, strings.TrimSuffix(filepath.Base(f[2]), ".git")))
		case len(f) == 5 && f[0] == "mkdir" && f[2] == "&&" && f[3] == "cd" && f[1] == f[4]:
			dir = filepath.Join(dir, f[1])
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(mainGo), 0o644); err != nil {
				t.Fatal(err)
			}
		case len(f) >= 2 && f[0] == "go":
			out = runEnv(ctx, t, dir, env, goBin, f[1:]...)
		default:
			t.Fatalf("README's %q has a command this test does not know how to check: %q", heading, line)
		}
	}
	if got := strings.TrimSpace(out); got != m[1] {
		t.Errorf("README's %q program printed %q, the README says %q", heading, got, m[1])
	}
}

// codeBlock returns the body of the first ```lang block in doc.
func codeBlock(doc, lang string) (string, bool) {
	_, rest, ok := strings.Cut(doc, "```"+lang+"\n")
	if !ok {
		return "", false
	}
	body, _, ok := strings.Cut(rest, "```")
	return body, ok
}

// run runs name with args in dir and returns its stdout and stderr
// together; a non-zero exit fails the test.
func run(ctx context.Context, t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	return runEnv(ctx, t, dir, nil, name, args...)
}

// runEnv is run with the environment env (nil: this process's).
func runEnv(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s %s (in %s): exit %d:\n%s", name, strings.Join(args, " "), dir, ee.ExitCode(), out.String())
		}
		t.Fatalf("%s %s: %v", name, strings.Join(args, " "), err)
	}
	return out.String()
}

// shellBlock returns the command lines of the first ```sh block after the
// heading.
func shellBlock(t *testing.T, doc, heading string) []string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("README has no %q section", heading)
	}
	rest := doc[i:]
	start := strings.Index(rest, "```sh\n")
	if start < 0 {
		t.Fatalf("README's %q section has no sh block", heading)
	}
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	if end < 0 {
		t.Fatalf("README's %q sh block is not closed", heading)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(rest[:end]))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines
}

// checkDemo checks the demo's output as the README describes it: a table
// of tasks with tool calls, answers, rewards and turns, then
// trajectories/s, tool-call success and accuracy.
func checkDemo(t *testing.T, out string) {
	t.Helper()
	for _, col := range []string{"task", "tool calls", "answer", "reward", "turns"} {
		if !strings.Contains(out, col) {
			t.Errorf("demo output has no %q column:\n%s", col, out)
		}
	}
	rows := regexp.MustCompile(`(?m)^\d+  .*\d+$`).FindAllString(out, -1)
	if len(rows) != 64 {
		t.Errorf("demo printed %d task rows, the README says 64:\n%s", len(rows), out)
	}
	m := regexp.MustCompile(`trajectories/s.*tool-call success ([0-9.]+).*accuracy ([0-9.]+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("demo output has no summary line:\n%s", out)
	}
	// The committed model solves ~90% of held-out tasks; a broken
	// checkpoint, engine or loop solves few.
	if acc, _ := strconv.ParseFloat(m[2], 64); acc < 0.5 {
		t.Errorf("demo accuracy %v:\n%s", acc, out)
	}
}

// commandNames reads the command list of `agentrl --help`.
func commandNames(t *testing.T, usage string) []string {
	t.Helper()
	_, list, ok := strings.Cut(usage, "commands:\n")
	if !ok {
		t.Fatalf("agentrl --help lists no commands:\n%s", usage)
	}
	var names []string
	for _, l := range strings.Split(list, "\n") {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		names = append(names, strings.Fields(l)[0])
	}
	if len(names) == 0 {
		t.Fatalf("agentrl --help lists no commands:\n%s", usage)
	}
	return names
}
