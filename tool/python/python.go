package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
)

// Isolation modes (Config.Isolation).
const (
	// IsolationBubblewrap runs the code under bubblewrap: its own user,
	// PID, network, IPC, UTS and mount namespaces over a fresh root with
	// read-only system directories, a seccomp filter, and (where a cgroup
	// can be created) memory and process limits for the whole sandbox.
	// When any of that cannot be set up the call fails.
	IsolationBubblewrap = "bubblewrap"
	// IsolationRlimitsOnly runs the code as a plain child process with
	// per-process rlimits, a private working directory and a cleared
	// environment, and nothing else: it sees the host's files, network and
	// processes with the caller's (or, under root, a dedicated) uid. Only
	// for trusted code or machines where namespaces are unavailable; see
	// SECURITY.md.
	IsolationRlimitsOnly = "rlimits_only"
)

// Config sets the sandbox limits. Zero values take the defaults shown.
type Config struct {
	Interpreter    string  `json:"interpreter"`      // default /usr/bin/python3
	WallTimeout    float64 `json:"wall_timeout"`     // seconds of real time, default 10, at most 86400
	CPUTime        float64 `json:"cpu_time"`         // seconds of CPU per process (whole seconds, rounded up), default 10, at most 86400
	MemoryMB       int     `json:"memory_mb"`        // memory of the whole sandbox where a cgroup exists, and address space per process, default 1024
	FileSizeMB     int     `json:"file_size_mb"`     // largest file the code may write, default 16
	MaxProcesses   int     `json:"max_processes"`    // processes and threads of the whole sandbox, its init included, default 32
	MaxOutputBytes int     `json:"max_output_bytes"` // kept of stdout and of stderr each, default 16384
	DiskMB         int     `json:"disk_mb"`          // size of each writable tmpfs (home, /tmp, /dev/shm), default 256
	MaxOpenFiles   int     `json:"max_open_files"`   // open files per process (RLIMIT_NOFILE), default 64

	// Isolation is IsolationBubblewrap (the default) or
	// IsolationRlimitsOnly, which must be asked for by name.
	Isolation string `json:"isolation"`
	// Bwrap is the bubblewrap executable, default "bwrap" from PATH.
	Bwrap string `json:"bwrap"`
	// Cgroup is "auto" (the default: limits for the whole sandbox where a
	// cgroup can be created, per-process rlimits otherwise), "required"
	// (fail where none can be created) or "off".
	Cgroup string `json:"cgroup"`
	// CgroupParent is a cgroup v2 directory, delegated to the caller, with
	// the memory and pids controllers enabled for its children, under
	// which each sandbox gets its cgroup (see SECURITY.md for a setup).
	// Without it the caller's own cgroup is tried. Given, a sandbox that
	// cannot get a cgroup there fails.
	CgroupParent string `json:"cgroup_parent"`
	// Logger receives the warning that cgroup "auto" found no cgroup and
	// fell back to per-process limits (once per Tool); default
	// slog.Default().
	Logger *slog.Logger `json:"-"`
	// ReadOnlyPaths are host directories the code may read besides /usr
	// and the few /etc files Python needs: a virtualenv, a conda prefix.
	ReadOnlyPaths []string `json:"read_only_paths"`
}

func (c Config) withDefaults() Config {
	if c.Interpreter == "" {
		c.Interpreter = "/usr/bin/python3"
	}
	if c.WallTimeout == 0 {
		c.WallTimeout = 10
	}
	if c.CPUTime == 0 {
		c.CPUTime = 10
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = 1024
	}
	if c.FileSizeMB == 0 {
		c.FileSizeMB = 16
	}
	if c.MaxProcesses == 0 {
		c.MaxProcesses = 32
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = 16384
	}
	if c.DiskMB == 0 {
		c.DiskMB = 256
	}
	if c.MaxOpenFiles == 0 {
		c.MaxOpenFiles = 64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Isolation == "" {
		c.Isolation = IsolationBubblewrap
	}
	if c.Bwrap == "" {
		c.Bwrap = "bwrap"
	}
	if c.Cgroup == "" {
		c.Cgroup = "auto"
	}
	return c
}

// validate range-checks every limit, naming the config key: a huge value
// must not wrap around into a tiny one (1e308 seconds once became 9 ms).
func (c Config) validate() error {
	for _, r := range []struct {
		key     string
		v       float64
		lo, hi  float64
		openLow bool
		unit    string
	}{
		{"wall_timeout", c.WallTimeout, 0, 86400, true, "seconds"},
		{"cpu_time", c.CPUTime, 0, 86400, true, "seconds"},
		{"memory_mb", float64(c.MemoryMB), 32, 1 << 20, false, "MB"},
		{"file_size_mb", float64(c.FileSizeMB), 1, 1 << 20, false, "MB"},
		{"max_processes", float64(c.MaxProcesses), 2, 1 << 16, false, "processes"},
		{"max_output_bytes", float64(c.MaxOutputBytes), 1, 1 << 30, false, "bytes"},
		{"disk_mb", float64(c.DiskMB), 1, 1 << 20, false, "MB"},
		{"max_open_files", float64(c.MaxOpenFiles), 16, 1 << 20, false, "files"},
	} {
		low := r.v >= r.lo
		lb := "["
		if r.openLow {
			low, lb = r.v > r.lo, "("
		}
		if !low || !(r.v <= r.hi) { // also catches NaN
			return fmt.Errorf("python tool: %s = %v is out of range %s%v, %v] %s", r.key, r.v, lb, r.lo, r.hi, r.unit)
		}
	}
	switch c.Isolation {
	case IsolationBubblewrap, IsolationRlimitsOnly:
	default:
		return fmt.Errorf("python tool: isolation = %q: want %q or %q", c.Isolation, IsolationBubblewrap, IsolationRlimitsOnly)
	}
	switch c.Cgroup {
	case "auto", "required", "off":
	default:
		return fmt.Errorf("python tool: cgroup = %q: want \"auto\", \"required\" or \"off\"", c.Cgroup)
	}
	if c.CgroupParent != "" && (!filepath.IsAbs(c.CgroupParent) || c.Cgroup == "off") {
		return fmt.Errorf("python tool: cgroup_parent = %q: want an absolute path, and cgroup not \"off\"", c.CgroupParent)
	}
	for _, p := range c.ReadOnlyPaths {
		if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
			return fmt.Errorf("python tool: read_only_paths: %q is not a clean absolute path below /", p)
		}
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("python tool: read_only_paths: %w", err)
		}
	}
	return nil
}

// DefaultSchema is the schema of the tool when the config gives none.
var DefaultSchema = chat.ToolSchema{Type: "function", Function: chat.FunctionSchema{
	Name:        "python",
	Description: "Run Python 3 code in a sandbox without network access and return what it prints (stdout, then stderr).",
	Parameters:  json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"Python source code to run; print the values you want to see."}},"required":["code"]}`),
}}

// Tool runs Python code. It keeps no per-trajectory state: every call runs
// in a fresh process and directory.
type Tool struct {
	cfg     Config
	schema  chat.ToolSchema
	bwrap   string // resolved path of bubblewrap
	seccomp []byte // the filter program, built once

	warnNoCgroup sync.Once
}

// ErrSandbox is wrapped by failures to set up or start the sandbox (as
// opposed to failures of the code, which are normal outcomes).
var ErrSandbox = errors.New("python sandbox")

// ErrNoIsolation is wrapped (with ErrSandbox) when the isolation asked for
// cannot be established on this machine: bubblewrap missing, user
// namespaces or seccomp refused, no cgroup where one is required. The
// message names what is missing.
var ErrNoIsolation = fmt.Errorf("%w: isolation unavailable", ErrSandbox)

// New checks cfg and returns the tool with DefaultSchema. Under the default
// isolation it fails, wrapping ErrNoIsolation, where bubblewrap is missing.
func New(cfg Config) (*Tool, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(cfg.Interpreter); err != nil {
		return nil, fmt.Errorf("python tool: interpreter: %w", err)
	}
	if err := checkIsolatedMode(cfg.Interpreter); err != nil {
		return nil, err
	}
	t := &Tool{cfg: cfg, schema: DefaultSchema}
	if cfg.Isolation == IsolationRlimitsOnly {
		return t, nil
	}
	if err := t.interpreterVisible(); err != nil {
		return nil, err
	}
	bw, err := exec.LookPath(cfg.Bwrap)
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (%s) is not installed (the bubblewrap package) or not executable: %w; "+
			"isolation: %s runs without a sandbox (weaker, see SECURITY.md)", ErrNoIsolation, cfg.Bwrap, err, IsolationRlimitsOnly)
	}
	t.bwrap = bw
	if t.seccomp, err = seccompProgram(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoIsolation, err)
	}
	return t, nil
}

// checkIsolatedMode runs the interpreter (on the host, before any code
// of a model) with the flags the sandbox starts it with: -I (isolated:
// no user site, no PYTHON* variables, no script directory on sys.path)
// and -S (no site module), which Python before 3.4 and other
// interpreters reject. Inside the sandbox that failure would look like
// a sandbox that could not be set up.
func checkIsolatedMode(interp string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, interp, "-I", "-S", "-c", "import sys; sys.exit(0 if sys.version_info >= (3, 4) else 3)")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}
	stderr := &capped{max: 1024}
	cmd.Stderr = stderr
	err := cmd.Run()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(stderr.String())
	if msg == "" {
		msg = err.Error()
	}
	return fmt.Errorf("python tool: interpreter %s does not run as `%s -I -S` (isolated mode of Python 3.4 or later, which the sandbox needs): %s", interp, filepath.Base(interp), msg)
}

// interpreterVisible checks that the interpreter, and what its path links
// to, lie inside what the sandbox sees.
func (t *Tool) interpreterVisible() error {
	path, err := exec.LookPath(t.cfg.Interpreter)
	if err != nil {
		return fmt.Errorf("python tool: interpreter: %w", err)
	}
	path, _ = filepath.Abs(path)
	resolved, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("python tool: interpreter: %w", err)
	}
	roots := append([]string{"/usr"}, t.cfg.ReadOnlyPaths...)
	for _, p := range []string{path, resolved} {
		ok := false
		for _, r := range roots {
			ok = ok || p == r || strings.HasPrefix(p, r+"/")
		}
		// /bin, /lib... are links into /usr on merged systems, and bound
		// as they are on others.
		ok = ok || strings.HasPrefix(p, "/bin/")
		if !ok {
			return fmt.Errorf("python tool: interpreter %s is outside what the sandbox sees (/usr and read_only_paths %v): add its installation directory to read_only_paths", p, t.cfg.ReadOnlyPaths)
		}
	}
	t.cfg.Interpreter = path
	return nil
}

// ClassName is the tool config class of this tool.
const ClassName = "python"

func init() {
	tool.Register(ClassName, func(_ context.Context, c tool.Config) ([]tool.Tool, error) {
		var cfg Config
		if err := c.DecodeConfig(&cfg); err != nil {
			return nil, err
		}
		t, err := New(cfg)
		if err != nil {
			return nil, err
		}
		if c.Schema != nil {
			t.schema = *c.Schema
		}
		return []tool.Tool{t}, nil
	})
}

// Schema implements tool.Tool.
func (t *Tool) Schema() chat.ToolSchema { return t.schema }

// Create implements tool.Tool.
func (t *Tool) Create(context.Context, map[string]any) (string, error) { return "", nil }

// Release implements tool.Tool.
func (t *Tool) Release(context.Context, string) error { return nil }

// Execute runs {"code": "..."}; see Run.
func (t *Tool) Execute(ctx context.Context, _ string, args json.RawMessage) (tool.Result, error) {
	var a struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return tool.Result{}, fmt.Errorf("decoding arguments: %w", err)
	}
	out, err := t.Run(ctx, a.Code)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Result{Text: out.Text(), Metrics: out.Metrics()}, nil
}

// Outcome is what one run produced.
type Outcome struct {
	Stdout, Stderr string
	StdoutDropped  int64 // bytes over MaxOutputBytes that were discarded
	StderrDropped  int64
	ExitCode       int    // -1 when killed by a signal
	Signal         string // the signal that ended the process, if any
	WallTimeout    bool   // killed because the wall-time limit passed
	CPULimit       bool   // killed because the CPU-time limit passed
	MemoryLimit    bool   // a process was killed by the sandbox's memory limit (cgroup)
	Wall, CPU      time.Duration
	Sandboxed      bool // ran under bubblewrap: namespaces, fresh root, seccomp
	CgroupLimits   bool // memory and processes were limited for the whole sandbox
	DedicatedUID   bool // ran as a host uid of its own (under root)

	hostUID int // the dedicated uid, for tests that look for leftovers
}

// Text is the observation shown to the model: stdout, then stderr, then a
// line for each limit hit or abnormal exit.
func (o Outcome) Text() string {
	var b strings.Builder
	b.WriteString(o.Stdout)
	if o.StdoutDropped > 0 {
		fmt.Fprintf(&b, "\n[stdout truncated: %d more bytes]\n", o.StdoutDropped)
	}
	if o.Stderr != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(o.Stderr)
	}
	if o.StderrDropped > 0 {
		fmt.Fprintf(&b, "\n[stderr truncated: %d more bytes]\n", o.StderrDropped)
	}
	note := func(s string) {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(s)
	}
	switch {
	case o.WallTimeout:
		note(fmt.Sprintf("[killed: wall time limit of %v exceeded]", o.Wall.Round(time.Millisecond)))
	case o.CPULimit:
		note("[killed: CPU time limit exceeded]")
	case o.MemoryLimit:
		note("[memory limit exceeded: a process was killed]")
	case o.Signal != "":
		note("[killed by signal " + o.Signal + "]")
	case o.ExitCode != 0:
		note(fmt.Sprintf("[exit status %d]", o.ExitCode))
	}
	if b.Len() == 0 {
		return "[no output]"
	}
	return b.String()
}

// Metrics are recorded with the trajectory.
func (o Outcome) Metrics() map[string]float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return map[string]float64{
		"exit_code":        float64(o.ExitCode),
		"wall_seconds":     o.Wall.Seconds(),
		"cpu_seconds":      o.CPU.Seconds(),
		"wall_timeout":     b(o.WallTimeout),
		"cpu_limit":        b(o.CPULimit),
		"output_truncated": b(o.StdoutDropped > 0 || o.StderrDropped > 0),
		"memory_limit":     b(o.MemoryLimit),
		"sandboxed":        b(o.Sandboxed),
		"cgroup_limits":    b(o.CgroupLimits),
		"dedicated_uid":    b(o.DedicatedUID),
	}
}

// stripFences removes a Markdown code fence around the whole code, which
// models often add.
func stripFences(code string) string {
	t := strings.TrimSpace(code)
	if !strings.HasPrefix(t, "```") || !strings.HasSuffix(t, "```") || len(t) < 6 {
		return code
	}
	nl := strings.IndexByte(t, '\n')
	if nl < 0 {
		return code
	}
	return strings.TrimSuffix(t[nl+1:], "```")
}

// capped keeps the first max bytes written and counts the rest, so a
// chatty program can neither block on a full pipe nor grow memory.
type capped struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	max     int
	dropped int64
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.buf.Write(p[:room])
	}
	c.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToValidUTF8(c.buf.String(), "\uFFFD")
}
