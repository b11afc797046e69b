package python

// Attack tests: each runs what hostile model-written code would try and
// checks that the sandbox holds. Every one of them failed on the previous
// implementation (hand-rolled namespaces, a Python init process without
// limits, host /proc, /tmp and /dev/shm, a uid pool starting at the same
// slot in every process); see SECURITY.md. They are bounded in time and
// memory: small limits, short sleeps.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/stretchr/testify/require"
)

// TestAttackProcMemTakeover: the code opens /proc/<pid>/mem for writing of
// every process it can see that is not its own (the sandbox's init above
// all, which in the old design ran without limits) and writes to it.
func TestAttackProcMemTakeover(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), `
import os
me = os.getpid()
seen = []
for name in os.listdir('/proc'):
    if not name.isdigit() or int(name) == me:
        continue
    pid = int(name)
    seen.append(pid)
    try:
        with open('/proc/%d/maps' % pid) as f:
            first = f.readline()
        addr = int(first.split('-')[0], 16)
    except (OSError, ValueError):
        addr = 0x400000
    try:
        fd = os.open('/proc/%d/mem' % pid, os.O_RDWR)
    except OSError as e:
        print('open', pid, 'refused:', e.strerror)
        continue
    try:
        os.lseek(fd, addr, 0)
        os.write(fd, os.pread(fd, 16, addr))
        print('TAKEOVER', pid)
    except OSError as e:
        print('OPENED', pid, e.strerror)
print('others seen:', seen)
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "TAKEOVER")
	require.NotContains(t, out.Stdout, "OPENED")
	// The attack must have had a target: the sandbox's init (pid 1 in its
	// pid namespace) is visible, and opening its memory was refused.
	require.Contains(t, out.Stdout, "others seen: [1")
	require.Contains(t, out.Stdout, "open 1 refused:")
}

// TestAttackPtrace: the code attaches with ptrace to its parent (the init),
// to pid 1 and to a child of its own.
func TestAttackPtrace(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 10})
	out, err := tl.Run(context.Background(), `
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
PTRACE_ATTACH, PTRACE_DETACH = 16, 17
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
for pid in sorted({os.getppid(), 1, child}):
    if pid == 0 or pid == os.getpid():
        continue
    r = libc.ptrace(PTRACE_ATTACH, pid, None, None)
    if r == 0:
        print('ATTACHED', pid)
        libc.ptrace(PTRACE_DETACH, pid, None, None)
    else:
        print('refused', pid, os.strerror(ctypes.get_errno()))
os.kill(child, 9)
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "ATTACHED")
	require.Contains(t, out.Stdout, "refused")
}

// TestAttackForkBombWholeSandbox: every process of a fork tree keeps
// forking; the count of processes that ever ran at once stays under the
// sandbox's limit, and the call ends in bounded time.
func TestAttackForkBombWholeSandbox(t *testing.T) {
	const limit = 24
	tl := newTool(t, Config{MaxProcesses: limit, WallTimeout: 15, MemoryMB: 256})
	start := time.Now()
	out, err := tl.Run(context.Background(), `
import os, time
r, w = os.pipe()
root = os.getpid()
refused = False
deadline = time.time() + 3
while time.time() < deadline:
    try:
        pid = os.fork()
    except OSError:
        refused = refused or os.getpid() == root
        time.sleep(0.01)
        continue
    if pid == 0:
        os.write(w, b'x')  # one byte per process that started
        continue           # the child forks too: a tree, not a chain
if os.getpid() != root:
    time.sleep(5)
    os._exit(0)
os.close(w)
os.set_blocking(r, False)
n = 0
try:
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        n += len(b)
except BlockingIOError:
    pass
print('processes started:', n, 'refused:', refused, flush=True)
`)
	require.NoError(t, err)
	t.Log(out.Text())
	var n int
	_, err = fmt.Sscanf(out.Stdout, "processes started: %d", &n)
	if err != nil {
		// The whole tree may have been killed before printing (a
		// cgroup kill); that is a pass as long as the run ended.
		require.True(t, out.ExitCode != 0 || out.Signal != "", out.Text())
	} else {
		// The bomb's processes live at once (each sleeps), so the count
		// is bounded by the limit, whatever the shape of the tree; and
		// the limit was reached (the test could have failed).
		require.Less(t, n, limit)
		require.Contains(t, out.Stdout, "refused: True")
	}
	require.Less(t, time.Since(start), 60*time.Second)
}

// TestAttackMemoryBombAcrossProcesses: six processes each fill 100 MB and
// hold it; the sandbox's memory limit of 128 MB is for all of them
// together, so at most one of them can hold its share.
func TestAttackMemoryBombAcrossProcesses(t *testing.T) {
	tl := newTool(t, Config{MemoryMB: 128, WallTimeout: 30})
	out, err := tl.Run(context.Background(), `
import os, time
r, w = os.pipe()
kids = []
for i in range(6):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            b = b'x' * (100 << 20)   # written, so resident, not just reserved
            os.write(w, b'1')
        except MemoryError:
            os._exit(1)
        time.sleep(4)
        os._exit(0)
    kids.append(pid)
os.close(w)
for pid in kids:
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
n = len(os.read(r, 100))
print('holders:', n)
`)
	require.NoError(t, err)
	t.Log(out.Text(), out.Metrics())
	if !cgroupInEffect(out) {
		skipOrFail(t, "no cgroup could be created here; the rlimit fallback limits memory per process only (see SECURITY.md)")
	}
	var n int
	if _, err := fmt.Sscanf(out.Stdout, "holders: %d", &n); err == nil {
		require.LessOrEqual(t, n, 1, "128 MB for the whole sandbox holds at most one 100 MB share")
	} else {
		require.True(t, memoryLimitHit(out) || out.Signal != "", "killed by the memory limit: %s", out.Text())
	}
}

// TestAttackPersistenceBetweenCalls: one call leaves files in every
// writable place; the next call finds none of them, and the host has none.
func TestAttackPersistenceBetweenCalls(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20})
	marker := fmt.Sprintf("agentrl-persist-%d-%d", os.Getpid(), time.Now().UnixNano())
	places := []string{"/tmp", "/dev/shm", "/var/tmp"}
	var write, read strings.Builder
	for _, p := range places {
		fmt.Fprintf(&write, "try:\n    open(%q, 'w').write('left behind')\n    print('wrote', %q)\nexcept OSError as e:\n    print('cannot write', %q, e)\n", p+"/"+marker, p, p)
		fmt.Fprintf(&read, "import os\nprint('FOUND' if os.path.exists(%q) else 'absent', %q)\n", p+"/"+marker, p)
	}
	write.WriteString("import os\nopen(os.path.expanduser('~/" + marker + "'), 'w').write('x')\n")
	read.WriteString("print('FOUND home' if os.path.exists(os.path.expanduser('~/" + marker + "')) else 'absent home')\n")
	out, err := tl.Run(context.Background(), write.String())
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "wrote /tmp")
	require.Contains(t, out.Stdout, "wrote /dev/shm")
	out, err = tl.Run(context.Background(), read.String())
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "FOUND")
	for _, p := range places {
		_, err := os.Stat(filepath.Join(p, marker))
		if err == nil {
			os.Remove(filepath.Join(p, marker))
		}
		require.True(t, os.IsNotExist(err), "host %s/%s", p, marker)
	}
}

// TestAttackHostUnixSocket: a world-connectable Unix socket on the host (as
// an X server's or a container runtime's are) is not reachable.
func TestAttackHostUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "agentrl-host-socket-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	path := filepath.Join(dir, "host.sock")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(path, 0o777))
	accepted := make(chan struct{}, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			select {
			case accepted <- struct{}{}:
			default:
			}
			c.Close()
		}
	}()
	defer func() { ln.Close(); <-done }()
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import socket
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(%q)
    print('CONNECTED')
except OSError as e:
    print('blocked:', e)
`, path))
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "CONNECTED")
	require.Contains(t, out.Stdout, "blocked:")
	select {
	case <-accepted:
		t.Fatal("the host socket accepted a connection from the sandbox")
	default:
	}
}

// TestAttackHostProcesses: the code looks for a host process by its
// command line and tries to read the environment of every process it sees.
func TestAttackHostProcesses(t *testing.T) {
	marker := fmt.Sprintf("agentrl-host-marker-%d", time.Now().UnixNano())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	host := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep 30", marker)
	host.Env = []string{"AGENTRL_HOST_SECRET=" + marker}
	require.NoError(t, host.Start())
	defer func() { cancel(); _ = host.Wait() }()
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import os
marker = %q
found = []
for name in os.listdir('/proc'):
    if not name.isdigit():
        continue
    for what in ('cmdline', 'environ'):
        try:
            with open('/proc/%%s/%%s' %% (name, what), 'rb') as f:
                if marker.encode() in f.read():
                    found.append((name, what))
        except OSError:
            pass
print('FOUND' if found else 'nothing', found)
`, marker))
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "nothing")
}

// secretEnv carries the secret into the helper process of
// TestAttackParentSecrets, in its environment from the start (as a
// trainer's credentials are: os.Setenv would not show in /proc).
const secretEnv = "AGENTRL_TEST_SECRET_TOKEN"

// TestParentSecretsHelper is the process with the secret; run on its own
// it skips.
func TestParentSecretsHelper(t *testing.T) {
	secret := os.Getenv(secretEnv)
	if secret == "" {
		t.Skip("helper process of TestAttackParentSecrets")
	}
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import os
secret = %q
hits = [k for k, v in os.environ.items() if secret in v]
for name in os.listdir('/proc'):
    if name.isdigit() or name == 'self':
        for what in ('environ', 'cmdline'):
            try:
                with open('/proc/%%s/%%s' %% (name, what), 'rb') as f:
                    if secret.encode() in f.read():
                        hits.append(name + '/' + what)
            except OSError:
                pass
print('LEAKED' if hits else 'clean', hits, sorted(os.environ))
`, secret))
	require.NoError(t, err)
	fmt.Println("helper result:", strings.TrimSpace(out.Text()))
}

// TestAttackParentSecrets: secrets in the environment of the process that
// runs the sandbox reach the code neither through its own environment nor
// through /proc.
func TestAttackParentSecrets(t *testing.T) {
	interpreter(t)
	if os.Getenv(secretEnv) != "" {
		t.Skip("already the helper")
	}
	secret := fmt.Sprintf("hunter2-%d", time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestParentSecretsHelper$", "-test.v")
	helper.Env = append(os.Environ(), secretEnv+"="+secret)
	b, err := helper.CombinedOutput()
	require.NoError(t, err, "%s", b)
	var result string
	for _, l := range strings.Split(string(b), "\n") {
		if r, ok := strings.CutPrefix(l, "helper result: "); ok {
			result = r
		}
	}
	t.Log(result)
	if strings.Contains(string(b), "--- SKIP") && result == "" {
		t.Skip("the helper skipped: " + string(b))
	}
	require.True(t, strings.HasPrefix(result, "clean"), "%s", b)
	require.NotContains(t, result, secret)
}

// sideBySideEnv tells a re-executed test binary to act as the second
// process in TestAttackSideBySide.
const sideBySideEnv = "AGENTRL_SANDBOX_SIDE_BY_SIDE_MARKER"

// TestSideBySideHelper is the other process of TestAttackSideBySide; run
// on its own it skips.
func TestSideBySideHelper(t *testing.T) {
	marker := os.Getenv(sideBySideEnv)
	if marker == "" {
		t.Skip("helper process of TestAttackSideBySide")
	}
	tl := newTool(t, Config{WallTimeout: 30})
	fmt.Println("helper started")
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import os, time
marker = %q
for d in ('.', '/tmp', '/dev/shm'):
    try:
        open(os.path.join(d, marker), 'w').write('secret of the other sandbox')
    except OSError:
        pass
time.sleep(6)
print('helper survived')
`, marker))
	require.NoError(t, err)
	fmt.Println("helper result:", strings.TrimSpace(out.Text()))
}

// descendantRunning says whether a process below root has substr in its
// command line.
func descendantRunning(root int, substr string) bool {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	var matches []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		if cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(cmd), substr) {
			matches = append(matches, pid)
		}
	}
	for _, pid := range matches {
		for p, n := pid, 0; p > 1 && n < 64; p, n = parent[p], n+1 {
			if p == root {
				return true
			}
		}
	}
	return false
}

// TestAttackSideBySide: two processes run sandboxes at the same time (as two
// rollout workers on one machine do). The code of one looks for the other's
// files and processes and kills every process it can; the other is
// unaffected and nothing of it is visible.
func TestAttackSideBySide(t *testing.T) {
	interpreter(t)
	if os.Getenv(sideBySideEnv) != "" {
		t.Skip("already the helper")
	}
	marker := fmt.Sprintf("agentrl-side-%d-%d", os.Getpid(), time.Now().UnixNano())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	helper := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSideBySideHelper$", "-test.v")
	helper.Env = append(os.Environ(), sideBySideEnv+"="+marker)
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var helperOut []string
	waitFor := func(prefix string) bool {
		for l := range lines {
			helperOut = append(helperOut, l)
			if strings.HasPrefix(l, prefix) {
				return true
			}
		}
		return false
	}
	require.True(t, waitFor("helper started"), "helper output: %q", helperOut)
	// Wait until the helper's code runs (seen from the host), and give it
	// a moment to write its files, so that the probes below overlap it.
	require.Eventually(t, func() bool { return descendantRunning(helper.Process.Pid, "main.py") }, 30*time.Second, 20*time.Millisecond)
	time.Sleep(500 * time.Millisecond)

	tl := newTool(t, Config{WallTimeout: 20})
	probe := fmt.Sprintf(`
import glob, os, signal
marker = %q
found = []
for pattern in ('/tmp/*', '/tmp/*/*', '/dev/shm/*', '/var/tmp/*', '/home/*/*', '/*/*'):
    found += [p for p in glob.glob(pattern) if marker in p]
others = [int(n) for n in os.listdir('/proc') if n.isdigit() and int(n) not in (os.getpid(), os.getppid(), 1)]
for pid in others:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print('FOUND' if found else 'nothing', found, 'others:', len(others))
try:
    os.kill(-1, signal.SIGKILL)
except OSError:
    pass
`, marker)
	// Probe for a few seconds while the helper's code runs (it sleeps 6 s
	// after writing its files).
	deadline := time.Now().Add(3 * time.Second)
	probes := 0
	for time.Now().Before(deadline) || probes < 2 {
		out, err := tl.Run(context.Background(), probe)
		require.NoError(t, err)
		probes++
		require.NotContains(t, out.Stdout, "FOUND", out.Text())
		require.Contains(t, out.Stdout, "nothing", out.Text())
	}
	require.True(t, waitFor("helper result:"), "helper output: %q", helperOut)
	last := helperOut[len(helperOut)-1]
	require.Contains(t, last, "helper survived", "the other process's sandbox was not disturbed: %q", helperOut)
	for range lines {
	}
	require.NoError(t, helper.Wait())
	for _, p := range []string{"/tmp", "/dev/shm"} {
		_, err := os.Stat(filepath.Join(p, marker))
		require.True(t, os.IsNotExist(err), "the helper's file leaked onto the host's %s", p)
	}
}

// TestAttackRefusedWithoutNamespaces: where the kernel refuses namespaces
// (Docker's default seccomp profile, a sysctl), the call fails and says
// why instead of running the code unisolated.
func TestAttackRefusedWithoutNamespaces(t *testing.T) {
	tl := newToolWithoutNamespaces(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), "print('ran without a sandbox')\n")
	require.Error(t, err, "ran: %s", out.Text())
	require.ErrorIs(t, err, ErrSandbox)
	require.NotContains(t, out.Stdout, "ran without a sandbox")
	require.Contains(t, err.Error(), "namespace")
}

// TestAttackKernelSurface: the seccomp filter refuses calls that would
// succeed (or fail differently) without it: each call below is made with
// arguments under which the kernel itself would not say EPERM.
func TestAttackKernelSurface(t *testing.T) {
	info, err := arch.GetInfo("")
	require.NoError(t, err)
	nr := func(name string) int {
		n, ok := info.SyscallNames[name]
		require.True(t, ok, name)
		return n
	}
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
sc = libc.syscall
sc.restype = ctypes.c_long
def call(name, nr, *args):
    r = sc(nr, *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno() if r == -1 else 0
    print(name, 'errno' if r == -1 else 'ok', os.strerror(e) if e else r)
call('unshare', %d, 0)                        # unshare(0) is a no-op
call('unshare_user', %d, 0x10000000)
call('process_vm_readv', %d, os.getpid(), 0, 0, 0, 0, 0)
call('keyctl', %d, 0, -2, 0)                  # KEYCTL_GET_KEYRING_ID
call('io_uring_setup', %d, 1, 0)
call('perf_event_open', %d, 0, 0, -1, -1, 0)
call('ptrace', %d, 0, 0, 0, 0)                 # PTRACE_TRACEME
call('clone3', %d, 0, 0)
call('clone_newuser', %d, 0x10000000 | 17, 0, 0, 0, 0)  # CLONE_NEWUSER|SIGCHLD
name = ctypes.create_string_buffer(b'x')
for nm, nr, args in %s:
    call(nm, nr, *[ctypes.addressof(name) if a == 'NAME' else a for a in args])
for fam, name in ((16, 'netlink'), (17, 'packet'), (38, 'alg')):
    try:
        socket.socket(fam, socket.SOCK_RAW if fam != 38 else socket.SOCK_SEQPACKET).close()
        print('socket', name, 'ok')
    except OSError as e:
        print('socket', name, 'errno', e.strerror)
a, b = socket.socketpair()
socket.socket(socket.AF_INET).close()
socket.socket(socket.AF_INET6).close()
pid = os.fork()
if pid == 0:
    os._exit(7)
print('fork ok', os.waitpid(pid, 0)[1] >> 8)
`, nr("unshare"), nr("unshare"), nr("process_vm_readv"), nr("keyctl"), nr("io_uring_setup"), nr("perf_event_open"), nr("ptrace"), nr("clone3"), nr("clone"),
		// Calls the kernel would answer otherwise than EPERM (a result,
		// EFAULT, EBADF, ENOSYS on kernels without them).
		fmt.Sprintf("[('listmount', %d, (0, 0, 0, 0)), ('statmount', %d, (0, 0, 0, 0)), ('open_tree_attr', %d, (-1, 0, 0, 0, 0)), "+
			"('modify_ldt', %d, (0, 0, 0)), ('memfd_secret', %d, (0,)), ('memfd_create', %d, ('NAME', 0)), "+
			"('shmget', %d, (0, 4096, 0o600)), ('msgget', %d, (0, 0o600)), ('semget', %d, (0, 1, 0o600))]",
			nr("listmount"), nr("statmount"), nr("open_tree_attr"), nr("modify_ldt"), nr("memfd_secret"), nr("memfd_create"),
			nr("shmget"), nr("msgget"), nr("semget"))))
	require.NoError(t, err)
	t.Log(out.Text())
	for _, name := range []string{"unshare", "unshare_user", "process_vm_readv", "keyctl", "io_uring_setup", "perf_event_open", "ptrace", "clone_newuser",
		"listmount", "statmount", "open_tree_attr", "modify_ldt", "memfd_secret", "memfd_create", "shmget", "msgget", "semget"} {
		require.Contains(t, out.Stdout, name+" errno Operation not permitted\n")
	}
	require.Contains(t, out.Stdout, "clone3 errno Function not implemented\n")
	for _, fam := range []string{"netlink", "packet", "alg"} {
		require.Contains(t, out.Stdout, "socket "+fam+" errno Address family not supported by protocol\n")
	}
	require.Contains(t, out.Stdout, "fork ok 7\n")
}

// TestAttackRefusedWhenTheKernelRefusesNamespaces: the real bubblewrap,
// started where the kernel allows no new user namespaces (a user namespace
// whose max_user_namespaces is 0, as a hardened host or container sets
// it), fails and the call says so instead of running the code.
func TestAttackRefusedWhenTheKernelRefusesNamespaces(t *testing.T) {
	bw, err := exec.LookPath("bwrap")
	if err != nil {
		t.Skip("no bubblewrap")
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) to build the refusing environment")
	}
	dir, err := os.MkdirTemp("", "agentrl-nons-")
	require.NoError(t, err)
	defer os.RemoveAll(dir)
	require.NoError(t, os.Chmod(dir, 0o755))
	wrapper := filepath.Join(dir, "bwrap")
	script := fmt.Sprintf("#!/bin/sh\nexec %s --user --map-root-user /bin/sh -c 'echo 0 > /proc/sys/user/max_user_namespaces && exec %s \"$@\"' sh \"$@\"\n", unshare, bw)
	require.NoError(t, os.WriteFile(wrapper, []byte(script), 0o755))
	tl := newTool(t, Config{Bwrap: wrapper, WallTimeout: 20})
	out, err := tl.Run(context.Background(), "print('ran without a sandbox')\n")
	if err != nil && strings.Contains(err.Error(), "unshare failed") {
		t.Skip("cannot build the refusing environment here: " + err.Error())
	}
	require.ErrorIs(t, err, ErrNoIsolation, "ran: %s", out.Text())
	require.NotContains(t, out.Stdout, "ran without a sandbox")
	require.ErrorContains(t, err, "namespace")
	t.Log(err)
}
