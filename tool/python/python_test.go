package python

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/agentrl/agentrl/chat"
	"github.com/agentrl/agentrl/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// interpreter returns a python3 to test with, or skips when there is none.
func interpreter(t testing.TB) string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	t.Skip("no python3 on this machine")
	return ""
}

// newTool returns a tool for cfg, or skips where the machine cannot
// isolate (no bubblewrap, no user namespaces): there the tests of the
// sandbox cannot run, and TestAttackRefusedWithoutNamespaces and
// TestFailsClosed check that the tool refuses instead. Under CI=1 it fails
// instead: SECURITY.md cites these tests, so CI must run them.
func newTool(t testing.TB, cfg Config) *Tool {
	cfg.Interpreter = interpreter(t)
	tl, err := New(cfg)
	if errors.Is(err, ErrNoIsolation) {
		skipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	if cfg.Isolation != IsolationRlimitsOnly {
		probeIsolation(t)
	}
	return tl
}

var probe struct {
	sync.Once
	err error
}

// probeIsolation skips when bubblewrap is installed but the kernel refuses
// it the namespaces (checked once per test binary).
func probeIsolation(t testing.TB) {
	probe.Do(func() {
		tl, err := New(Config{Interpreter: interpreter(t)})
		if err == nil {
			_, err = tl.Run(context.Background(), "pass")
		}
		probe.err = err
	})
	if errors.Is(probe.err, ErrNoIsolation) {
		skipOrFail(t, "%v", probe.err)
	}
	require.NoError(t, probe.err)
}

// fakeBwrap writes an executable that behaves like bubblewrap on a kernel
// without unprivileged user namespaces.
func fakeBwrap(t testing.TB) string {
	// Readable by the dedicated uid bubblewrap runs as under root.
	dir, err := os.MkdirTemp("", "agentrl-fake-bwrap-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n"
	require.NoError(t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

func newToolWithoutNamespaces(t *testing.T, cfg Config) *Tool {
	cfg.Interpreter = interpreter(t)
	cfg.Bwrap = fakeBwrap(t)
	tl, err := New(cfg)
	require.NoError(t, err)
	return tl
}

func cgroupInEffect(o Outcome) bool { return o.CgroupLimits }
func memoryLimitHit(o Outcome) bool { return o.MemoryLimit }

func TestRunPrintsAndIsolates(t *testing.T) {
	tl := newTool(t, Config{})
	out, err := tl.Run(context.Background(), "import os\nprint(6 * 7)\nprint(os.getcwd() == os.environ['HOME'])\nopen('f.txt', 'w').write('x')\nprint(sorted(os.listdir('.')))\n")
	require.NoError(t, err)
	require.Equal(t, "42\nTrue\n['f.txt', 'main.py']\n", out.Stdout)
	require.Equal(t, "", out.Stderr)
	require.Equal(t, 0, out.ExitCode)
	require.Equal(t, "42\nTrue\n['f.txt', 'main.py']\n", out.Text())
	t.Logf("isolation: %v", out.Metrics())
	require.True(t, out.Sandboxed)
	require.Equal(t, 1.0, out.Metrics()["sandboxed"])
}

func TestRunReportsErrors(t *testing.T) {
	tl := newTool(t, Config{})
	out, err := tl.Run(context.Background(), "print('before')\n1/0\n")
	require.NoError(t, err)
	require.Equal(t, 1, out.ExitCode)
	require.Contains(t, out.Stderr, `File "/`)
	require.Contains(t, out.Stderr, "main.py\", line 2, in <module>")
	require.Contains(t, out.Stderr, "ZeroDivisionError: division by zero")
	require.NotContains(t, out.Stderr, "<string>", "the prelude does not show in tracebacks")
	require.True(t, strings.HasPrefix(out.Text(), "before\nTraceback"))
	require.True(t, strings.HasSuffix(out.Text(), "\n[exit status 1]"))
}

func TestMarkdownFenceIsStripped(t *testing.T) {
	tl := newTool(t, Config{})
	out, err := tl.Run(context.Background(), "```python\nprint('fenced')\n```")
	require.NoError(t, err)
	require.Equal(t, "fenced\n", out.Stdout)
}

func TestLimits(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Log("running as root: the sandbox gets a dedicated uid")
	}
	tests := []struct {
		name  string
		cfg   Config
		code  string
		check func(t *testing.T, o Outcome)
	}{
		{"infinite loop hits the wall-time limit", Config{WallTimeout: 1, CPUTime: 30},
			"while True:\n    pass\n",
			func(t *testing.T, o Outcome) {
				require.True(t, o.WallTimeout)
				require.Contains(t, o.Text(), "[killed: wall time limit of")
				require.Less(t, o.Wall, 10*time.Second)
			}},
		{"busy loop hits the CPU limit", Config{WallTimeout: 120, CPUTime: 1}, // generous wall time: the box may be loaded
			"x = 0\nwhile True:\n    x += 1\n",
			func(t *testing.T, o Outcome) {
				require.True(t, o.CPULimit, "%+v", o)
				require.False(t, o.WallTimeout)
				// RLIMIT_CPU counts the whole process at tick granularity
				// while o.CPU is what rusage reports for the child: under
				// load they differ by a few ticks, so only check the order.
				require.GreaterOrEqual(t, o.CPU, 500*time.Millisecond)
				require.Contains(t, o.Text(), "[killed: CPU time limit exceeded]")
			}},
		{"memory bomb hits the address-space limit", Config{MemoryMB: 256},
			"a = bytearray(4 * 1024 * 1024 * 1024)\nprint('allocated')\n",
			func(t *testing.T, o Outcome) {
				require.Contains(t, o.Stderr, "MemoryError")
				require.NotContains(t, o.Stdout, "allocated")
			}},
		{"growing memory bomb", Config{MemoryMB: 128},
			"a = []\nwhile True:\n    a.append(' ' * (1 << 20))\n",
			func(t *testing.T, o Outcome) {
				require.Contains(t, o.Stderr, "MemoryError")
			}},
		{"large write hits the file-size limit", Config{FileSizeMB: 1},
			"f = open('big', 'wb')\nf.write(b'x' * (8 << 20))\nf.close()\nprint('wrote')\n",
			func(t *testing.T, o Outcome) {
				require.Contains(t, o.Stderr, "File too large")
				require.NotContains(t, o.Stdout, "wrote")
			}},
		{"output is capped", Config{MaxOutputBytes: 100},
			"print('y' * 100000)\n",
			func(t *testing.T, o Outcome) {
				require.Equal(t, strings.Repeat("y", 100), o.Stdout)
				require.Equal(t, int64(100001-100), o.StdoutDropped)
				require.Contains(t, o.Text(), "[stdout truncated: 99901 more bytes]")
				require.Equal(t, 1.0, o.Metrics()["output_truncated"])
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := newTool(t, tc.cfg)
			out, err := tl.Run(context.Background(), tc.code)
			require.NoError(t, err)
			tc.check(t, out)
		})
	}
}

func TestForkBomb(t *testing.T) {
	tl := newTool(t, Config{MaxProcesses: 16, WallTimeout: 20})
	code := `
import os, sys, time
n = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped after", n, "forks:", e.strerror)
    sys.stdout.flush()
    os._exit(0)
`
	start := time.Now()
	out, err := tl.Run(context.Background(), code)
	require.NoError(t, err)
	require.Contains(t, out.Stdout, "stopped after")
	require.Contains(t, out.Stdout, "Resource temporarily unavailable")
	var n int
	_, err = fmt.Sscanf(out.Stdout, "stopped after %d", &n)
	require.NoError(t, err)
	require.Less(t, n, 16)
	// The sleeping children were killed with the sandbox, not waited for.
	require.Less(t, time.Since(start), 15*time.Second)
}

func TestNoNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var accepted atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			c.Close()
		}
	}()
	tl := newTool(t, Config{})
	code := fmt.Sprintf(`
import socket
try:
    socket.create_connection(("127.0.0.1", %d), timeout=3)
    print("connected")
except OSError as e:
    print("blocked:", e)
`, ln.Addr().(*net.TCPAddr).Port)
	out, err := tl.Run(context.Background(), code)
	require.NoError(t, err)
	ln.Close()
	<-done
	require.Contains(t, out.Stdout, "blocked:")
	require.Zero(t, accepted.Load(), "the listener saw no connection")
}

// TestHostFilesAreNotVisible: the code sees /usr read-only and nothing of
// the host's other files, not even world-readable ones.
func TestHostFilesAreNotVisible(t *testing.T) {
	f, err := os.CreateTemp("", "agentrl-host-file-")
	require.NoError(t, err)
	f.Close()
	defer os.Remove(f.Name())
	require.NoError(t, os.Chmod(f.Name(), 0o666))
	tl := newTool(t, Config{})
	// (Writing the same name creates a file in the sandbox's own /tmp.)
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import os
print('host file visible:', os.path.exists(%q))
open(%q, 'w').write('pwned')
try:
    open('/usr/bin/x-agentrl', 'w').write('pwned')
    print('WROTE /usr')
except OSError as e:
    print('refused', type(e).__name__)
print(os.path.exists('/root'), os.path.exists('/etc/shadow'), os.path.exists('/sys'), open('/etc/passwd').read().split(':')[0])
`, f.Name(), f.Name()))
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "host file visible: False")
	require.NotContains(t, out.Stdout, "WROTE")
	require.Contains(t, out.Stdout, "False False False sandbox")
	b, err := os.ReadFile(f.Name())
	require.NoError(t, err)
	require.Empty(t, b)
}

func TestCancelKillsTheRun(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 30})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := tl.Run(ctx, "import time\ntime.sleep(60)\n")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Less(t, time.Since(start), 10*time.Second)
}

func TestAsToolInASet(t *testing.T) {
	interpreter(t)
	ctx := context.Background()
	s, err := tool.ParseConfig(ctx, []byte(fmt.Sprintf(`
tools:
  - class_name: python
    config: {type: native, interpreter: %q, wall_timeout: 5, memory_mb: 512}
`, interpreter(t))), ".")
	require.NoError(t, err)
	require.Equal(t, []string{"python"}, s.Names())
	ss := s.Session(nil)
	defer func() { require.NoError(t, ss.Close(ctx)) }()
	r := ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{Name: "python", Arguments: `{"code": "print(sum(range(10)))"}`}})
	require.NoError(t, r.Err)
	require.Equal(t, "45\n", r.Text)
	require.Equal(t, 0.0, r.Metrics["exit_code"])

	// The per-call timeout of the Set kills the process too.
	require.NoError(t, s.SetLimits("python", tool.Limits{Timeout: 300 * time.Millisecond}))
	r = ss.Call(ctx, chat.ToolCall{Function: chat.FunctionCall{Name: "python", Arguments: `{"code": "import time\ntime.sleep(30)"}`}})
	require.ErrorIs(t, r.Err, tool.ErrTimeout)

	_, err = tool.ParseConfig(ctx, []byte("tools:\n  - class_name: python\n    config: {type: native, memory: 5}\n"), ".")
	require.ErrorContains(t, err, `unknown field "memory"`)
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{Interpreter: "/nonexistent/python9"})
	require.ErrorContains(t, err, "interpreter")
	py := interpreter(t)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MemoryMB: -1}, "memory_mb = -1 is out of range [32, 1.048576e+06] MB"},
		{Config{WallTimeout: 1e308}, "wall_timeout = 1e+308 is out of range (0, 86400] seconds"},
		{Config{WallTimeout: math.NaN()}, "wall_timeout = NaN is out of range"},
		{Config{WallTimeout: math.Inf(1)}, "wall_timeout = +Inf is out of range"},
		{Config{WallTimeout: -1}, "wall_timeout = -1 is out of range"},
		{Config{CPUTime: 1e300}, "cpu_time = 1e+300 is out of range"},
		{Config{FileSizeMB: 1 << 40}, "file_size_mb = 1.099511627776e+12 is out of range"},
		{Config{MaxProcesses: 1}, "max_processes = 1 is out of range [2, 65536]"},
		{Config{MaxOutputBytes: -5}, "max_output_bytes = -5 is out of range"},
		{Config{DiskMB: 1 << 30}, "disk_mb = 1.073741824e+09 is out of range"},
		{Config{Isolation: "none"}, `isolation = "none": want "bubblewrap" or "rlimits_only"`},
		{Config{Cgroup: "maybe"}, `cgroup = "maybe"`},
		{Config{ReadOnlyPaths: []string{"relative/dir"}}, "read_only_paths"},
		{Config{ReadOnlyPaths: []string{"/"}}, "read_only_paths"},
		{Config{Bwrap: "/nonexistent/bwrap"}, "bubblewrap (/nonexistent/bwrap) is not installed"},
	} {
		tc.cfg.Interpreter = py
		_, err := New(tc.cfg)
		require.ErrorContains(t, err, tc.want, "%+v", tc.cfg)
	}
	_, err = New(Config{Interpreter: py, Bwrap: "/nonexistent/bwrap"})
	require.ErrorIs(t, err, ErrNoIsolation)
	require.ErrorIs(t, err, ErrSandbox)

	// The limit as a tool config file gives it.
	_, err = tool.ParseConfig(context.Background(), []byte("tools:\n  - class_name: python\n    config: {type: native, wall_timeout: 1e308}\n"), ".")
	require.ErrorContains(t, err, "wall_timeout = 1e+308 is out of range")

	// An interpreter the sandbox cannot see is refused up front.
	dir := t.TempDir()
	link := filepath.Join(dir, "python3")
	require.NoError(t, os.Symlink(py, link))
	if _, err := exec.LookPath("bwrap"); err == nil {
		_, err = New(Config{Interpreter: link})
		require.ErrorContains(t, err, "outside what the sandbox sees")
		_, err = New(Config{Interpreter: link, ReadOnlyPaths: []string{dir}})
		require.NoError(t, err)
	}
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}

// TestNumpyWorksUnderLimits: the default limits leave room for the usual
// numeric stack (thread pools are pinned to one thread by the environment).
func TestNumpyWorksUnderLimits(t *testing.T) {
	py := interpreter(t)
	if err := exec.Command(py, "-c", "import numpy").Run(); err != nil {
		t.Skip("numpy is not installed for " + py)
	}
	tl := newTool(t, Config{})
	out, err := tl.Run(context.Background(), "import numpy as np\nprint(int(np.arange(10).sum()))\n")
	require.NoError(t, err)
	require.Equal(t, "45\n", out.Stdout, out.Text())
}

// sandboxProcesses lists live processes owned by the dedicated uid of a
// finished run (under root).
func sandboxProcesses(t *testing.T, o Outcome) []string {
	require.True(t, o.DedicatedUID)
	entries, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			var real, eff int
			if n, _ := fmt.Sscanf(line, "Uid:\t%d\t%d", &real, &eff); n == 2 && real == o.hostUID {
				out = append(out, e.Name())
			}
		}
	}
	return out
}

// TestEscapedProcessesDie: a daemon that leaves the process group and
// session and outlives the code is killed with the sandbox, in both modes.
func TestEscapedProcessesDie(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("identifying sandbox processes by uid needs root")
	}
	for _, iso := range []string{IsolationBubblewrap, IsolationRlimitsOnly} {
		tl := newTool(t, Config{Isolation: iso})
		out, err := tl.Run(context.Background(), "import subprocess\np = subprocess.Popen(['sleep', '30'], start_new_session=True)\nprint('spawned', p.pid > 0)\n")
		require.NoError(t, err)
		require.Equal(t, "spawned True\n", out.Stdout, out.Text())
		require.True(t, out.DedicatedUID)
		require.Equal(t, iso == IsolationBubblewrap, out.Sandboxed)
		require.Eventually(t, func() bool { return len(sandboxProcesses(t, out)) == 0 }, 5*time.Second, 20*time.Millisecond, iso)
	}
}

// TestWallTimeoutKillsTheWholeSandbox: a tree of processes that ignore
// SIGTERM and leave their group is killed at the wall-time limit, and Run
// returns.
func TestWallTimeoutKillsTheWholeSandbox(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 1, CPUTime: 30})
	start := time.Now()
	out, err := tl.Run(context.Background(), `
import os, signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
for i in range(4):
    if os.fork() == 0:
        os.setsid()
        while True:
            pass
while True:
    time.sleep(1)
`)
	require.NoError(t, err)
	require.True(t, out.WallTimeout, out.Text())
	require.Less(t, time.Since(start), 15*time.Second)
	if os.Geteuid() == 0 {
		require.Eventually(t, func() bool { return len(sandboxProcesses(t, out)) == 0 }, 5*time.Second, 20*time.Millisecond)
	}
}

// TestCPULimitWhenSIGXCPUIsIgnored: code that ignores the soft-limit signal
// is killed at the hard limit and still reported as a CPU-limit kill.
func TestCPULimitWhenSIGXCPUIsIgnored(t *testing.T) {
	tl := newTool(t, Config{CPUTime: 1, WallTimeout: 120})
	out, err := tl.Run(context.Background(), "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True:\n    pass\n")
	require.NoError(t, err)
	require.True(t, out.CPULimit, "%+v", out)
	require.GreaterOrEqual(t, out.CPU, 1500*time.Millisecond, "killed at the hard limit, after the soft one")
}

// TestFailsClosed: a bubblewrap that cannot set up the sandbox makes the
// call fail, naming the cause; only the explicitly named weaker mode runs
// the code without one, and says so in its metrics.
func TestFailsClosed(t *testing.T) {
	tl := newToolWithoutNamespaces(t, Config{})
	_, err := tl.Run(context.Background(), "print('hi')")
	require.ErrorIs(t, err, ErrNoIsolation)
	require.ErrorContains(t, err, "No permissions to create new namespace")
	require.ErrorContains(t, err, "isolation: rlimits_only")

	weak, err := New(Config{Interpreter: interpreter(t), Isolation: IsolationRlimitsOnly, Bwrap: "/nonexistent/bwrap"})
	require.NoError(t, err)
	out, err := weak.Run(context.Background(), "print('hi')")
	require.NoError(t, err)
	require.Equal(t, "hi\n", out.Stdout)
	m := out.Metrics()
	require.Equal(t, 0.0, m["sandboxed"])
	require.Equal(t, 0.0, m["cgroup_limits"])
	require.Equal(t, map[bool]float64{true: 1, false: 0}[os.Geteuid() == 0], m["dedicated_uid"])
}

// TestCgroupParentThatCannotBeUsed: a cgroup_parent that is not a cgroup
// with the controllers delegated fails the call, naming it.
func TestCgroupParentThatCannotBeUsed(t *testing.T) {
	tl := newTool(t, Config{CgroupParent: t.TempDir()})
	_, err := tl.Run(context.Background(), "print('hi')")
	require.ErrorIs(t, err, ErrNoIsolation)
	require.ErrorContains(t, err, "cgroup_parent")
}

// TestCgroupRequired: cgroup: required fails where none can be created
// and otherwise limits the whole sandbox.
func TestCgroupRequired(t *testing.T) {
	tl := newTool(t, Config{Cgroup: "required"})
	out, err := tl.Run(context.Background(), "print('hi')")
	if errors.Is(err, ErrNoIsolation) {
		require.ErrorContains(t, err, "cgroup: required")
		skipOrFail(t, "%v", err)
	}
	require.NoError(t, err)
	require.True(t, out.CgroupLimits)
	off := newTool(t, Config{Cgroup: "off"})
	_, err = New(Config{Interpreter: interpreter(t), Cgroup: "off", CgroupParent: "/x"})
	require.ErrorContains(t, err, "cgroup_parent")
	out, err = off.Run(context.Background(), "print('hi')")
	require.NoError(t, err)
	require.False(t, out.CgroupLimits)
}

// TestConcurrentRunsAreSeparate: calls running at once in one process each
// get a host uid of their own and their own files.
func TestConcurrentRunsAreSeparate(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 30})
	const n = 4
	outs := make([]Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			outs[i], errs[i] = tl.Run(context.Background(), fmt.Sprintf(`
import os, time
open('/tmp/mine', 'a').write('%d')
time.sleep(0.5)
print(open('/tmp/mine').read(), sorted(os.listdir('/tmp')))
`, i))
		}(i)
	}
	wg.Wait()
	uids := map[int]bool{}
	for i := 0; i < n; i++ {
		require.NoError(t, errs[i])
		require.Equal(t, fmt.Sprintf("%d ['mine']\n", i), outs[i].Stdout, outs[i].Text())
		if outs[i].DedicatedUID {
			uids[outs[i].hostUID] = true
		}
	}
	if os.Geteuid() == 0 {
		require.Len(t, uids, n, "each call has its own host uid")
	}
}

// TestStaleCgroupsAreRemoved: cgroups left by a process that died are
// removed by the next sandbox created beside them; those of live
// processes are not.
func TestStaleCgroupsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	dead := exec.Command("true")
	require.NoError(t, dead.Run())
	stale := filepath.Join(dir, fmt.Sprintf("agentrl-sandbox-%d-abc", dead.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf("agentrl-sandbox-%d-abc", os.Getppid()))
	other := filepath.Join(dir, "something-else")
	for _, d := range []string{stale, live, other} {
		require.NoError(t, os.Mkdir(d, 0o755))
	}
	removeStale(dir)
	_, err := os.Stat(stale)
	require.True(t, os.IsNotExist(err), "stale cgroup removed")
	for _, d := range []string{live, other} {
		_, err := os.Stat(d)
		require.NoError(t, err)
	}
}

// TestHostIDLockDirMustBeOurs: a reservation directory planted by someone
// else (here: a link to another directory) is refused.
func TestHostIDLockDirMustBeOurs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("uid reservations are made under root")
	}
	tmp := t.TempDir()
	defer func(d string) { hostIDLockDir = d }(hostIDLockDir)
	hostIDLockDir = filepath.Join(tmp, "ids")
	target := filepath.Join(tmp, "elsewhere")
	require.NoError(t, os.Mkdir(target, 0o700))
	require.NoError(t, os.Symlink(target, hostIDLockDir))
	_, err := reserveHostID()
	require.ErrorContains(t, err, "is not a directory of ours")

	require.NoError(t, os.Remove(hostIDLockDir))
	id, err := reserveHostID()
	require.NoError(t, err)
	require.GreaterOrEqual(t, id.id, hostIDBase)
	id.release()
	entries, err := os.ReadDir(hostIDLockDir)
	require.NoError(t, err)
	require.Empty(t, entries, "the reservation is removed on release")
}
