package python

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Inside the sandbox: the code's uid and gid, its home and working
// directory (a tmpfs), and the file it runs.
const (
	sandboxID   = 1000
	sandboxHome = "/home/sandbox"
)

// The sandbox's environment: nothing of the caller's.
var sandboxEnv = [][2]string{
	{"PATH", "/usr/local/bin:/usr/bin:/bin"},
	{"HOME", sandboxHome},
	{"TMPDIR", "/tmp"},
	{"LANG", "C.UTF-8"},
	{"PYTHONDONTWRITEBYTECODE", "1"},
	{"PYTHONIOENCODING", "utf-8"},
	// Numeric libraries start a thread per core otherwise, which the
	// process limit and the memory limit would both punish.
	{"OPENBLAS_NUM_THREADS", "1"}, {"OMP_NUM_THREADS", "1"}, {"MKL_NUM_THREADS", "1"},
}

// Host files under /etc that Python and the C library read; bound
// read-only where they exist. Accounts come from generated files instead.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
	"/etc/alternatives", // Debian's BLAS/LAPACK for numpy are links through here
	"/etc/nsswitch.conf",
}

// prelude runs first, as the sandbox's init (PID 1 under bubblewrap): it
// makes itself non-dumpable, so the code (same uid) can neither open its
// /proc/<pid>/mem nor attach to it; sets the limits it and everything it
// starts live under; reports "started" on fd 3 (which tells a sandbox that
// came up from one that did not); forks the code's process, which execs
// the interpreter on main.py; reaps everything until that process exits;
// and reports its wait status and the CPU time of the tree on fd 3. When
// it exits the kernel kills whatever is left in the PID namespace.
const prelude = `
import os, resource, signal, sys, ctypes
# PID 1 of the namespace gets only the signals it handles; Python handles
# SIGINT (KeyboardInterrupt), which would let the code end the init early.
signal.signal(signal.SIGINT, signal.SIG_IGN)
if ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0) != 0:
    os.write(2, b"sandbox init: prctl(PR_SET_DUMPABLE) failed\n")
    os._exit(125)
for name, soft, hard in %s:
    resource.setrlimit(getattr(resource, name), (soft, hard))
os.closerange(4, 65536)
os.write(3, b"started\n")
pid = os.fork()
if pid == 0:
    try:
        os.closerange(3, 65536)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.execv(sys.executable, [sys.executable, "-I", "main.py"])
    except BaseException as e:
        sys.stderr.write("sandbox: %%s\n" %% e)
    os._exit(127)
status = 0
while True:
    try:
        p, st = os.waitpid(-1, 0)
    except ChildProcessError:
        break
    if p == pid:
        status = st
        break
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
os.write(3, ("%%d %%.6f\n" %% (status, ru.ru_utime + ru.ru_stime)).encode())
`

// sigPending is the sandbox's limit of queued signals (RLIMIT_SIGPENDING).
const sigPending = 256

// cpuSeconds is the CPU limit in whole seconds (RLIMIT_CPU's unit),
// rounded up.
func (t *Tool) cpuSeconds() int64 {
	cpu := int64(t.cfg.CPUTime)
	if float64(cpu) < t.cfg.CPUTime {
		cpu++
	}
	return cpu
}

// rlimits returns the prelude's limit list (a Python literal). The process
// limit is left out when it would count processes outside the sandbox.
func (t *Tool) rlimits(withNPROC bool) string {
	cfg := t.cfg
	cpu := t.cpuSeconds()
	mem, fsize := int64(cfg.MemoryMB)<<20, int64(cfg.FileSizeMB)<<20
	type rlimit struct {
		name       string
		soft, hard int64
	}
	limits := []rlimit{
		// SIGXCPU at the soft limit ends the code; code that ignores it
		// gets SIGKILL one second later at the hard limit.
		{"RLIMIT_CPU", cpu, cpu + 1},
		{"RLIMIT_AS", mem, mem},
		{"RLIMIT_FSIZE", fsize, fsize},
		{"RLIMIT_CORE", 0, 0},
		// Every open file may hold kernel memory no RSS shows (a socket's
		// queued buffers, a pipe's pages): the count bounds it.
		{"RLIMIT_NOFILE", int64(cfg.MaxOpenFiles), int64(cfg.MaxOpenFiles)},
		// Queued signals and POSIX message queues are kernel memory of
		// the user, unbounded by the rest.
		{"RLIMIT_SIGPENDING", sigPending, sigPending},
		{"RLIMIT_MSGQUEUE", 0, 0},
	}
	if withNPROC {
		n := int64(cfg.MaxProcesses)
		limits = append(limits, rlimit{"RLIMIT_NPROC", n, n})
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, l := range limits {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "(%q,%d,%d)", l.name, l.soft, l.hard)
	}
	b.WriteByte(']')
	return b.String()
}

// Run executes code and reports what happened. Errors are only for
// failures of the sandbox itself (ErrSandbox; ErrNoIsolation where the
// isolation cannot be established); code that fails, hits a limit or is
// killed is a normal Outcome. Cancelling ctx kills the whole sandbox.
// Nothing of a call survives it: no process, no file.
func (t *Tool) Run(ctx context.Context, code string) (Outcome, error) {
	if err := ctx.Err(); err != nil {
		return Outcome{}, err
	}
	var id *hostID
	if os.Geteuid() == 0 {
		var err error
		if id, err = reserveHostID(); err != nil {
			return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
		}
		defer id.release()
	}
	if t.cfg.Isolation == IsolationRlimitsOnly {
		return t.runRlimitsOnly(ctx, code, id)
	}
	return t.runBubblewrap(ctx, code, id)
}

// memfd returns an anonymous in-memory file holding b, for bubblewrap to
// read from a file descriptor.
func memfd(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("memfd: %w", err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("memfd: %w", err)
	}
	return f, nil
}

// bwrapArgs is bubblewrap's command line, with the files it reads at fds
// 4 (the code), 5 (seccomp), 6 (/etc/passwd) and 7 (/etc/group). The
// status pipe is fd 3 and passes through to the init. dir holds the
// writable tmpfs mounts the launcher made (tmp, shm, home).
func (t *Tool) bwrapArgs(dir string) []string {
	id := strconv.Itoa(sandboxID)
	a := []string{
		// New user, PID, IPC, UTS, mount and cgroup namespaces; the user
		// namespace is required (not "-try"). The network namespace is
		// the launcher's, made for this call: bubblewrap's own would
		// have loopback up.
		"--unshare-all", "--share-net", "--unshare-user", "--disable-userns",
		"--uid", id, "--gid", id, "--hostname", "sandbox",
		// Killed with bubblewrap; no controlling terminal (TIOCSTI).
		"--die-with-parent", "--new-session",
		// Our prelude is PID 1 (bubblewrap's own reaper would be a
		// dumpable process of the code's uid: a takeover target).
		"--as-pid-1",
		"--cap-drop", "ALL",
		"--clearenv",
	}
	for _, kv := range sandboxEnv {
		a = append(a, "--setenv", kv[0], kv[1])
	}
	// A fresh root (bubblewrap starts from an empty tmpfs) with read-only
	// system directories.
	a = append(a, "--ro-bind", "/usr", "/usr")
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if target, err := os.Readlink(d); err == nil {
				a = append(a, "--symlink", target, d)
			}
		case fi.IsDir():
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		a = append(a, "--ro-bind-try", f, f)
	}
	for _, p := range t.cfg.ReadOnlyPaths {
		a = append(a, "--ro-bind", p, p)
	}
	a = append(a,
		"--ro-bind-data", "6", "/etc/passwd",
		"--ro-bind-data", "7", "/etc/group",
		// /proc of the sandbox's own PID namespace; a minimal /dev.
		"--proc", "/proc", "--dev", "/dev",
		// Private tmpfs mounts capped in size and in inodes (the
		// launcher's: bubblewrap's own --tmpfs has no inode cap), gone
		// with the mount namespace.
		"--bind", filepath.Join(dir, "tmp"), "/tmp",
		"--bind", filepath.Join(dir, "shm"), "/dev/shm",
		"--dir", "/var", "--symlink", "../tmp", "/var/tmp",
		"--bind", filepath.Join(dir, "home"), sandboxHome,
		"--perms", "0644", "--file", "4", sandboxHome+"/main.py",
		// The root and /dev are tmpfs mounts without a size cap (half
		// the host's memory): nothing may be written there after setup.
		"--remount-ro", "/dev", "--remount-ro", "/",
		"--chdir", sandboxHome,
		"--seccomp", "5",
		"--", t.cfg.Interpreter, "-I", "-S", "-c", fmt.Sprintf(prelude, t.rlimits(true)),
	)
	return a
}

const (
	passwdFile = "sandbox:x:1000:1000:sandbox:" + sandboxHome + ":/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	groupFile  = "sandbox:x:1000:\nnogroup:x:65534:\n"
)

// launcher runs first, as /bin/sh in a user, mount and network namespace
// of its own (made at fork, its root mapped to the sandbox's host uid), and
// execs bubblewrap ($0) with its arguments. With a cgroup it first waits on
// fd 8 until its pid has been added. It makes the sandbox the OOM killer's
// first choice (inherited by everything below, and only privileged
// processes may lower it); caps the kernel memory of the namespaces'
// per-call objects (datagrams queued per socket, inotify watches); and
// mounts the writable tmpfs mounts with a cap on their inodes as well as
// their size (bubblewrap's --tmpfs has no inode cap, and empty files cost
// kernel memory that no size counts) under AGENTRL_DIR, for bubblewrap to
// bind. The network namespace stays empty: loopback is down.
const launcher = `set -e
if [ -n "$AGENTRL_BARRIER" ]; then read -r _ <&8; exec 8<&-; fi
echo 1000 >/proc/self/oom_score_adj
echo "$AGENTRL_DGRAM_QLEN" >/proc/sys/net/unix/max_dgram_qlen
echo "$AGENTRL_INOTIFY_WATCHES" >/proc/sys/user/max_inotify_watches
echo "$AGENTRL_INOTIFY_INSTANCES" >/proc/sys/user/max_inotify_instances
mount --make-rprivate /
mount -t tmpfs -o size=64k,nr_inodes=8,mode=0700 agentrl-sandbox "$AGENTRL_DIR"
for d in tmp:1777 shm:1777 home:0700; do
  mkdir "$AGENTRL_DIR/${d%%:*}"
  mount -t tmpfs -o "size=$AGENTRL_SIZE,nr_inodes=$AGENTRL_INODES,mode=${d#*:}" agentrl-sandbox "$AGENTRL_DIR/${d%%:*}"
done
exec "$0" "$@"
`

// Kernel objects of one call that no process's memory shows, capped per
// call by the launcher.
const (
	dgramQueue       = 2    // datagrams queued on a Unix socket (net.unix.max_dgram_qlen)
	inotifyWatches   = 1024 // user.max_inotify_watches
	inotifyInstances = 16   // user.max_inotify_instances
)

// tmpfsInodes is the inode cap of each writable tmpfs: one per 16 KB of
// its size, at least 1024 and at most 1M.
func (c Config) tmpfsInodes() int { return min(max(c.DiskMB*64, 1024), 1<<20) }

func (t *Tool) runBubblewrap(ctx context.Context, code string, id *hostID) (Outcome, error) {
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, d := range []struct {
		name string
		data []byte
	}{{"main.py", []byte(stripFences(code))}, {"seccomp", t.seccomp}, {"passwd", []byte(passwdFile)}, {"group", []byte(groupFile)}} {
		f, err := memfd(d.name, d.data)
		if err != nil {
			return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
		}
		files = append(files, f)
	}

	var cg *cgroup
	if t.cfg.Cgroup != "off" {
		var err error
		cg, err = newCgroup(t.cfg.CgroupParent, int64(t.cfg.MemoryMB)<<20, t.cfg.MaxProcesses+2) // + bubblewrap's outer process and the launcher
		if err != nil {
			if t.cfg.Cgroup == "required" || t.cfg.CgroupParent != "" {
				return Outcome{}, fmt.Errorf("%w: no cgroup for the sandbox (cgroup: required): %w", ErrNoIsolation, err)
			}
			t.warnNoCgroup.Do(func() {
				t.cfg.Logger.Warn("python sandbox: no cgroup can be created, so memory is limited per process only (the bound SECURITY.md states for cgroup: off); set cgroup: required to refuse instead, or cgroup: off to silence this",
					"err", err)
			})
			cg = nil
		} else {
			defer cg.remove()
		}
	}

	// The mount point of the launcher's tmpfs mounts: an empty directory
	// on the host (the mounts are in the launcher's namespace only).
	dir, err := os.MkdirTemp("", "agentrl-sandbox-")
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	defer os.RemoveAll(dir)
	if id != nil {
		if err := os.Chown(dir, id.id, id.id); err != nil {
			return Outcome{}, fmt.Errorf("%w: chown %s: %w", ErrSandbox, dir, err)
		}
	}

	cmd := exec.Command("/bin/sh", append([]string{"-c", launcher, t.bwrap}, t.bwrapArgs(dir)...)...)
	cmd.Env = []string{
		"PATH=/usr/sbin:/usr/bin:/sbin:/bin",
		"AGENTRL_DIR=" + dir,
		"AGENTRL_SIZE=" + strconv.FormatInt(int64(t.cfg.DiskMB)<<20, 10),
		"AGENTRL_INODES=" + strconv.Itoa(t.cfg.tmpfsInodes()),
		"AGENTRL_DGRAM_QLEN=" + strconv.Itoa(dgramQueue),
		"AGENTRL_INOTIFY_WATCHES=" + strconv.Itoa(inotifyWatches),
		"AGENTRL_INOTIFY_INSTANCES=" + strconv.Itoa(inotifyInstances),
	}
	var barrier *os.File
	if cg != nil {
		r, w, err := os.Pipe()
		if err != nil {
			return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
		}
		defer r.Close()
		defer w.Close()
		barrier = w
		cmd.Env = append(cmd.Env, "AGENTRL_BARRIER=1")
		files = append(files, r)
	}
	return t.start(ctx, cmd, files, barrier, cg, id, true)
}

func (t *Tool) runRlimitsOnly(ctx context.Context, code string, id *hostID) (Outcome, error) {
	dir, err := os.MkdirTemp("", "agentrl-python-")
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: temp dir: %w", ErrSandbox, err)
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, "main.py"), []byte(stripFences(code)), 0o644); err != nil {
		return Outcome{}, fmt.Errorf("%w: writing the code: %w", ErrSandbox, err)
	}
	if id != nil {
		if err := os.Chown(dir, id.id, id.id); err != nil {
			return Outcome{}, fmt.Errorf("%w: chown temp dir: %w", ErrSandbox, err)
		}
	}
	// Without a uid of its own the process limit would count every
	// process of the caller's user, so it is not set.
	cmd := exec.Command(t.cfg.Interpreter, "-I", "-S", "-c", fmt.Sprintf(prelude, t.rlimits(id != nil)))
	cmd.Dir = dir
	for _, kv := range sandboxEnv {
		v := kv[1]
		if kv[0] == "HOME" || kv[0] == "TMPDIR" {
			v = dir
		}
		cmd.Env = append(cmd.Env, kv[0]+"="+v)
	}
	return t.start(ctx, cmd, nil, nil, nil, id, false)
}

// start runs cmd with the status pipe at fd 3 and extra at fds 4..., waits
// for it under the wall-time limit, kills everything that is left, and
// turns what happened into an Outcome.
func (t *Tool) start(ctx context.Context, cmd *exec.Cmd, extra []*os.File, barrier *os.File, cg *cgroup, id *hostID, sandboxed bool) (Outcome, error) {
	statusR, statusW, err := os.Pipe()
	if err != nil {
		return Outcome{}, fmt.Errorf("%w: %w", ErrSandbox, err)
	}
	defer statusR.Close()
	defer statusW.Close()

	if cmd.Env == nil {
		cmd.Env = []string{"PATH=/usr/bin:/bin"} // bubblewrap needs nothing of ours
	}
	stdout := &capped{max: t.cfg.MaxOutputBytes}
	stderr := &capped{max: t.cfg.MaxOutputBytes}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.ExtraFiles = append([]*os.File{statusW}, extra...)
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	switch {
	case sandboxed:
		// The launcher's namespaces; its root is the sandbox's host uid
		// (the caller's own without a reserved one).
		uid, gid := os.Getuid(), os.Getgid()
		if id != nil {
			uid, gid = id.id, id.id
		}
		attr.Cloneflags = syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWNET
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: gid, Size: 1}}
		attr.GidMappingsEnableSetgroups = false
		attr.Credential = &syscall.Credential{Uid: 0, Gid: 0, NoSetGroups: true}
	case id != nil:
		attr.Credential = &syscall.Credential{Uid: uint32(id.id), Gid: uint32(id.id)}
	}
	cmd.SysProcAttr = attr
	// A process that escaped may hold the pipes open; do not wait for it.
	cmd.WaitDelay = time.Second

	wall := time.Duration(t.cfg.WallTimeout * float64(time.Second))
	runCtx, cancel := context.WithTimeout(ctx, wall)
	defer cancel()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Outcome{}, fmt.Errorf("%w: starting %s: %w", ErrSandbox, cmd.Path, err)
	}
	statusW.Close()
	pgid := cmd.Process.Pid
	killAll := func() {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		if cg != nil {
			cg.killAll()
		}
		if !sandboxed && id != nil {
			// Without namespaces a process may have left the group; a
			// uid of its own finds it.
			killUID(id.id)
		}
	}
	if barrier != nil {
		if err := cg.add(cmd.Process.Pid); err != nil {
			killAll()
			_ = cmd.Wait()
			return Outcome{}, fmt.Errorf("%w: %w", ErrNoIsolation, err)
		}
		_, _ = barrier.Write([]byte("go\n"))
		barrier.Close()
	}

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-waitErr:
	case <-runCtx.Done():
		timedOut = ctx.Err() == nil
		killAll()
		werr = <-waitErr
	}
	// Whatever is left: the group of a run without namespaces; in the
	// cgroup, anything at all.
	killAll()
	elapsed := time.Since(start)

	out := Outcome{
		Stdout: stdout.String(), Stderr: stderr.String(),
		StdoutDropped: stdout.dropped, StderrDropped: stderr.dropped,
		Wall: elapsed, WallTimeout: timedOut,
		Sandboxed: sandboxed, CgroupLimits: cg != nil, DedicatedUID: id != nil,
	}
	if id != nil {
		out.hostUID = id.id
	}
	if cg != nil {
		out.MemoryLimit = cg.oomKilled()
	}
	if ctx.Err() != nil {
		return out, ctx.Err()
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) && !errors.Is(werr, exec.ErrWaitDelay) {
		return out, fmt.Errorf("%w: waiting for the sandbox: %w", ErrSandbox, werr)
	}
	_ = statusR.SetReadDeadline(time.Now().Add(2 * time.Second))
	var status bytes.Buffer
	_, _ = io.Copy(&status, io.LimitReader(statusR, 4096))
	started, rest, _ := strings.Cut(status.String(), "\n")
	if started != "started" && !timedOut {
		// The init never ran: the sandbox could not be set up. Say what
		// bubblewrap said.
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = fmt.Sprintf("exit status %d", cmd.ProcessState.ExitCode())
		}
		return Outcome{}, fmt.Errorf("%w: the sandbox could not be set up (%s); it needs bubblewrap >= 0.8 with user namespaces and seccomp, "+
			"or isolation: %s to run without a sandbox (weaker, see SECURITY.md)", ErrNoIsolation, msg, IsolationRlimitsOnly)
	}
	st, cpuSec, ok := parseStatus(rest)
	if !ok {
		// The init itself died (wall-time kill, memory limit): report
		// what the OS says about the process we started. bubblewrap
		// exits with 128+n for an init killed by signal n.
		code := cmd.ProcessState.ExitCode()
		out.ExitCode = code
		if ws, isWS := cmd.ProcessState.Sys().(syscall.WaitStatus); isWS && ws.Signaled() {
			out.ExitCode, out.Signal = -1, ws.Signal().String()
		} else if sandboxed && code > 128 && code < 128+65 {
			out.ExitCode, out.Signal = -1, syscall.Signal(code-128).String()
		}
		out.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		return out, nil
	}
	ws := syscall.WaitStatus(st)
	out.CPU = time.Duration(cpuSec * float64(time.Second))
	switch {
	case ws.Signaled():
		out.ExitCode, out.Signal = -1, ws.Signal().String()
		sig := ws.Signal()
		// SIGKILL after using most of the CPU budget is the hard limit
		// catching code that ignored SIGXCPU (CPU accounting in rusage
		// and in the rlimit check differ slightly).
		cpu := time.Duration(t.cpuSeconds()) * time.Second
		if sig == syscall.SIGXCPU || (sig == syscall.SIGKILL && !out.MemoryLimit && out.CPU >= cpu*8/10) {
			out.CPULimit, out.Signal = true, ""
		}
	default:
		out.ExitCode = ws.ExitStatus()
	}
	return out, nil
}

// killUID kills every process whose real uid is uid. Only used for a
// reserved sandbox uid, where that means exactly the sandbox's processes.
func killUID(uid int) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return
	}
	want := "\nUid:\t" + strconv.Itoa(uid) + "\t"
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/status")
		if err == nil && strings.Contains(string(b), want) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
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
