package python

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
)

// Config sets the sandbox limits. Zero values take the defaults shown.
type Config struct {
	Interpreter    string  `json:"interpreter"`      // default /usr/bin/python3
	WallTimeout    float64 `json:"wall_timeout"`     // seconds of real time, default 10
	CPUTime        float64 `json:"cpu_time"`         // seconds of CPU (whole seconds, rounded up), default 10
	MemoryMB       int     `json:"memory_mb"`        // address space per process, default 1024
	FileSizeMB     int     `json:"file_size_mb"`     // largest file the code may write, default 16
	MaxProcesses   int     `json:"max_processes"`    // processes and threads of the sandbox uid, default 32
	MaxOutputBytes int     `json:"max_output_bytes"` // kept of stdout and of stderr each, default 16384
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
	return c
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
	cfg    Config
	schema chat.ToolSchema
	// level is the isolation level that last worked (see levels); probing
	// starts there so that a kernel without user namespaces costs one
	// failed clone, not one per call.
	level atomic.Int32
}

// New checks cfg and returns the tool with DefaultSchema.
func New(cfg Config) (*Tool, error) {
	cfg = cfg.withDefaults()
	if cfg.WallTimeout < 0 || cfg.CPUTime < 0 || cfg.MemoryMB < 0 || cfg.FileSizeMB < 0 || cfg.MaxProcesses < 0 || cfg.MaxOutputBytes < 0 {
		return nil, fmt.Errorf("python tool: limits must not be negative: %+v", cfg)
	}
	if _, err := exec.LookPath(cfg.Interpreter); err != nil {
		return nil, fmt.Errorf("python tool: interpreter: %w", err)
	}
	return &Tool{cfg: cfg, schema: DefaultSchema}, nil
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
	Stdout, Stderr  string
	StdoutDropped   int64 // bytes over MaxOutputBytes that were discarded
	StderrDropped   int64
	ExitCode        int    // -1 when killed by a signal
	Signal          string // the signal that ended the process, if any
	WallTimeout     bool   // killed because the wall-time limit passed
	CPULimit        bool   // killed because the CPU-time limit passed
	Wall, CPU       time.Duration
	NetworkIsolated bool
	PIDNamespace    bool
	DedicatedUID    bool
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
		"network_isolated": b(o.NetworkIsolated),
		"pid_namespace":    b(o.PIDNamespace),
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

// ErrSandbox is wrapped by failures to set up or start the sandbox (as
// opposed to failures of the code, which are normal outcomes).
var ErrSandbox = errors.New("python sandbox")

// Run executes code and reports what happened. Errors are only for
// failures of the sandbox itself; code that fails, hits a limit or is killed
// is a normal Outcome. Cancelling ctx kills the process tree.
func (t *Tool) Run(ctx context.Context, code string) (Outcome, error) {
	dir, err := os.MkdirTemp("", "agentrl-python-")
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: temp dir: %w", ErrSandbox, err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(stripFences(code)), 0o644); err != nil {
		return Outcome{}, fmt.Errorf("%w: writing the code: %w", ErrSandbox, err)
	}

	var uid *uidLease
	if os.Geteuid() == 0 {
		uid = leaseUID()
		defer uid.release()
		if err := os.Chown(dir, uid.host, uid.host); err != nil {
			return Outcome{}, fmt.Errorf("%w: chown temp dir: %w", ErrSandbox, err)
		}
	}
	for lv := int(t.level.Load()); lv < len(levels); lv++ {
		out, err := t.runAt(ctx, levels[lv], dir, uid)
		if errors.Is(err, errIsolationUnavailable) {
			t.level.Store(int32(lv + 1))
			continue
		}
		return out, err
	}
	return Outcome{}, fmt.Errorf("%w: could not start the interpreter at any isolation level", ErrSandbox)
}

// isolation is one way to start the sandbox; levels are tried in order.
type isolation struct {
	userns, netns, pidns bool
}

var levels = []isolation{
	{userns: true, netns: true, pidns: true},
	{netns: true, pidns: true}, // root without user namespaces
	{},
}

var errIsolationUnavailable = errors.New("isolation level unavailable")

// uidLease is a host uid reserved for one running sandbox, so that
// RLIMIT_NPROC (counted per uid) limits exactly that sandbox's processes.
type uidLease struct{ slot, host int }

const (
	uidBase  = 1_800_000_000
	uidSlots = 1 << 16
)

var uidPool = struct {
	sync.Mutex
	used map[int]bool
	next int
}{used: map[int]bool{}}

func leaseUID() *uidLease {
	uidPool.Lock()
	defer uidPool.Unlock()
	for i := 0; i < uidSlots; i++ {
		s := (uidPool.next + i) % uidSlots
		if !uidPool.used[s] {
			uidPool.used[s] = true
			uidPool.next = s + 1
			return &uidLease{slot: s, host: uidBase + s}
		}
	}
	// 65536 concurrent sandboxes in one process: share a uid.
	return &uidLease{slot: -1, host: uidBase}
}

func (l *uidLease) release() {
	if l.slot < 0 {
		return
	}
	uidPool.Lock()
	delete(uidPool.used, l.slot)
	uidPool.Unlock()
}

// The sandbox uid and gid as the code sees them inside its user namespace.
const innerID = 1000

// prelude runs first, as the sandbox's init process: it forks the code's
// process, sets the limits there, execs the interpreter on main.py, reaps
// everything until that process exits, and reports its wait status and the
// CPU time of the whole tree on fd 3 (closed in the code's process).
const prelude = `
import os, resource, sys
limits = [(getattr(resource, n), soft, hard) for n, soft, hard in %s]
pid = os.fork()
if pid == 0:
    try:
        os.close(3)
        for r, soft, hard in limits:
            resource.setrlimit(r, (soft, hard))
        os.execv(sys.executable, [sys.executable, "-I", "main.py"])
    except BaseException as e:
        sys.stderr.write("sandbox: %%s\n" %% e)
    os._exit(127)
while True:
    try:
        p, status = os.waitpid(-1, 0)
    except ChildProcessError:
        status = 0
        break
    if p == pid:
        break
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(3, ("%%d %%.6f\n" %% (status, ru.ru_utime + ru.ru_stime)).encode())
`

func (t *Tool) runAt(ctx context.Context, iso isolation, dir string, uid *uidLease) (Outcome, error) {
	cfg := t.cfg
	cpu := int64(cfg.CPUTime)
	if float64(cpu) < cfg.CPUTime {
		cpu++
	}
	type rlimit struct {
		name       string
		soft, hard int64
	}
	mem, fsize := int64(cfg.MemoryMB)<<20, int64(cfg.FileSizeMB)<<20
	limits := []rlimit{
		// SIGXCPU at the soft limit ends the code; code that ignores it
		// gets SIGKILL one second later at the hard limit.
		{"RLIMIT_CPU", cpu, cpu + 1},
		{"RLIMIT_AS", mem, mem},
		{"RLIMIT_FSIZE", fsize, fsize},
		{"RLIMIT_CORE", 0, 0},
	}
	dedicated := uid != nil && uid.slot >= 0
	if dedicated {
		// Only a uid of its own makes the per-uid process count mean
		// "processes of this sandbox".
		n := int64(cfg.MaxProcesses)
		limits = append(limits, rlimit{"RLIMIT_NPROC", n, n})
	}
	var lst strings.Builder
	lst.WriteByte('[')
	for i, l := range limits {
		if i > 0 {
			lst.WriteByte(',')
		}
		fmt.Fprintf(&lst, "(%q,%d,%d)", l.name, l.soft, l.hard)
	}
	lst.WriteByte(']')

	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	defer statusR.Close()

	wall := time.Duration(cfg.WallTimeout * float64(time.Second))
	runCtx, cancel := context.WithTimeout(ctx, wall)
	defer cancel()
	// -S: the prelude needs no site packages, and skipping them saves startup time.
	cmd := exec.Command(cfg.Interpreter, "-I", "-S", "-c", fmt.Sprintf(prelude, lst.String()))
	cmd.Dir = dir
	cmd.Env = []string{
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=" + dir,
		"TMPDIR=" + dir,
		"LANG=C.UTF-8",
		"PYTHONDONTWRITEBYTECODE=1",
		"PYTHONIOENCODING=utf-8",
		// Numeric libraries start a thread per core otherwise, which the
		// process limit and the address-space limit would both punish.
		"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1", "MKL_NUM_THREADS=1",
	}
	stdout := &capped{max: cfg.MaxOutputBytes}
	stderr := &capped{max: cfg.MaxOutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = []*os.File{statusW}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if iso.userns {
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		hostUID, hostGID := os.Getuid(), os.Getgid()
		inner := hostUID
		if dedicated {
			hostUID, hostGID, inner = uid.host, uid.host, innerID
			attr.Credential = &syscall.Credential{Uid: innerID, Gid: innerID, NoSetGroups: true}
		}
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: inner, HostID: hostUID, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: inner, HostID: hostGID, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	} else if dedicated {
		attr.Credential = &syscall.Credential{Uid: uint32(uid.host), Gid: uint32(uid.host), NoSetGroups: true}
	}
	if iso.netns {
		attr.Cloneflags |= syscall.CLONE_NEWNET
	}
	if iso.pidns {
		attr.Cloneflags |= syscall.CLONE_NEWPID
	}
	cmd.SysProcAttr = attr
	// A process that escaped the process group may hold the pipes open;
	// do not wait for it forever.
	cmd.WaitDelay = time.Second

	start := time.Now()
	if err := cmd.Start(); err != nil {
		statusW.Close()
		if iso.userns || iso.netns || iso.pidns {
			var errno syscall.Errno
			if errors.As(err, &errno) && (errno == syscall.EPERM || errno == syscall.EINVAL || errno == syscall.ENOSPC || errno == syscall.EACCES || errno == syscall.EUSERS) {
				return Outcome{}, errIsolationUnavailable
			}
		}
		return Outcome{}, fmt.Errorf("%w: starting %s: %w", ErrSandbox, cfg.Interpreter, err)
	}
	statusW.Close()
	pgid := cmd.Process.Pid

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-waitErr:
	case <-runCtx.Done():
		timedOut = ctx.Err() == nil
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		werr = <-waitErr
	}
	// Without a PID namespace, kill what the code left running in its
	// group and, with a uid of its own, whatever left the group too. (With
	// one, the kernel killed everything when the init process exited.)
	if !iso.pidns {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if dedicated {
			killUID(uid.host)
		}
	}
	elapsed := time.Since(start)

	out := Outcome{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped,
		Wall: elapsed, WallTimeout: timedOut,
		NetworkIsolated: iso.netns, PIDNamespace: iso.pidns, DedicatedUID: dedicated,
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return out, fmt.Errorf("%w: waiting for the interpreter: %w", ErrSandbox, werr)
	}
	statusLine, _ := readAll(statusR)
	status, cpuSec, ok := parseStatus(statusLine)
	if !ok {
		// The init process itself died (wall-time kill, or killed with the
		// tree): report what the OS says about it.
		out.ExitCode = cmd.ProcessState.ExitCode()
		if ws, isWS := cmd.ProcessState.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
			out.ExitCode, out.Signal = -1, ws.Signal().String()
		}
		out.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return out, nil
	}
	ws := syscall.WaitStatus(status)
	out.CPU = time.Duration(cpuSec * float64(time.Second))
	switch {
	case ws.Signaled():
		out.ExitCode, out.Signal = -1, ws.Signal().String()
		sig := ws.Signal()
		// SIGKILL after using most of the CPU budget is the hard limit
		// catching code that ignored SIGXCPU (CPU accounting in rusage
		// and in the rlimit check differ slightly).
		if sig == syscall.SIGXCPU || (sig == syscall.SIGKILL && out.CPU >= time.Duration(cpu)*time.Second*8/10) {
			out.CPULimit, out.Signal = true, ""
		}
	default:
		out.ExitCode = ws.ExitStatus()
	}
	return out, nil
}

// killUID kills every process whose real uid is uid. Only used for a
// dedicated sandbox uid, where that means exactly the sandbox's processes.
func killUID(uid int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := "Uid:\t" + strconv.Itoa(uid) + "\t"
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		if strings.Contains(string(b), "\n"+want) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func readAll(f *os.File) (string, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(f)
	return b.String(), err
}

func parseStatus(line string) (status int, cpu float64, ok bool) {
	f := strings.Fields(line)
	if len(f) != 2 {
		return 0, 0, false
	}
	s, err1 := strconv.Atoi(f[0])
	c, err2 := strconv.ParseFloat(f[1], 64)
	return s, c, err1 == nil && err2 == nil
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
