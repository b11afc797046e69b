package python

// The bound SECURITY.md states for a call without a cgroup, measured from
// outside the sandbox while the call tries to exceed it, as a non-root
// user (under root the test runs itself again as uid 65534).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// noCgroupBound is SECURITY.md's bound on what one call holds of the
// host's memory without a cgroup, in bytes: per process its address
// space, the socket buffers its open files may queue ((queue + 1) ×
// net.core.wmem_default each) and its kernel bookkeeping (page tables,
// stack, tables: 1 MiB + 1/256 of the address space); the three tmpfs
// mounts with their inodes (1 KiB of slab each); 8 MiB for bubblewrap and
// the setup files; and the pipe pages the caller's uid may raise pipes to
// beyond their default size (fs.pipe-user-pages-soft).
func noCgroupBound(c Config, wmem, pipePagesSoft int64) int64 {
	const mib = 1 << 20
	mem := int64(c.MemoryMB) * mib
	perProcess := mem + int64(c.MaxOpenFiles)*(dgramQueue+1)*wmem + mib + mem/256
	tmpfs := 3 * (int64(c.DiskMB)*mib + int64(c.tmpfsInodes())*1024)
	return int64(c.MaxProcesses)*perProcess + tmpfs + 8*mib + pipePagesSoft*4096
}

// memoryAttack fills every kind of memory a call may hold, each well past
// its share of the bound where nothing stops it (and then stops, so that a
// missing limit costs the test machine a bounded amount): two children
// and the code itself fill sockets and their address space; the code also
// fills the writable mounts (and tries the read-only ones) with data and
// empty files, and six pipes raised to 1 MiB before its sockets. Each then
// holds it for a while. (Datagrams queued by senders that closed are
// bounded too, TestAttackSocketBuffers, but their sockets are not listed
// where this test reads socket buffers, so they are left out here.)
const memoryAttack = `
import fcntl, os, socket, sys, time
HOLD, STOP = %v, %d
def report(*a):
    print(os.getpid(), *a, flush=True)
def sockets():
    held, why = [], 'no limit'
    try:
        while len(held) < 4096:
            a, b = socket.socketpair()
            held += [a, b]
            a.setblocking(False)
            try:
                while True:
                    a.send(b'x' * 65536)
            except BlockingIOError:
                pass
    except OSError as e:
        why = e.strerror
    report('sockets', len(held), why)
    return held
def pipes():
    held, n = [], 0
    try:
        while n < 6:
            r, w = os.pipe()
            held += [r, w]
            try:
                fcntl.fcntl(w, 1031, 1 << 20)  # F_SETPIPE_SZ
            except OSError:
                pass
            os.set_blocking(w, False)
            try:
                while True:
                    os.write(w, b'x' * 65536)
            except BlockingIOError:
                pass
            n += 1
    except OSError as e:
        pass
    report('pipes', n)
    return held
def memory():
    blocks = []
    try:
        while len(blocks) << 20 < STOP:
            blocks.append(b'\1' * (1 << 20))  # written, so resident
    except MemoryError:
        blocks = blocks[:-2]  # room to report
    report('memory MiB', len(blocks))
    return blocks
def disk():
    for d in ('/tmp', '/dev/shm', os.path.expanduser('~'), '/', '/etc', '/dev', '/var'):
        n = files = 0
        try:
            while n << 20 < STOP:
                with open(os.path.join(d, 'fill%%d' %% n), 'wb') as f:
                    f.write(b'x' * (1 << 20))
                n += 1
        except OSError:
            pass
        try:
            while files < STOP >> 10:
                open(os.path.join(d, 'e%%d' %% files), 'w').close()
                files += 1
        except OSError:
            pass
        report('disk', d, n, 'MiB', files, 'files')
kids = []
for i in range(2):
    pid = os.fork()
    if pid == 0:
        s = sockets()
        m = memory()
        time.sleep(HOLD)
        os._exit(0)
    kids.append(pid)
disk()
p = pipes()
s = sockets()
m = memory()
time.sleep(HOLD)
for pid in kids:
    os.waitpid(pid, 0)
report('done')
`

// TestCallMemoryBoundWithoutCgroup: with cgroup: off and as a non-root
// user, what a call holds of the host's memory (its processes' RSS, tmpfs
// pages and slab as /proc/meminfo counts them, its sockets' buffers as the
// kernel reports them) stays under noCgroupBound while the call tries to
// hold several times more. Scaled down: 4 processes of 64 MiB, 32 open
// files each, 8 MiB mounts.
func TestCallMemoryBoundWithoutCgroup(t *testing.T) {
	if os.Geteuid() == 0 {
		runAsNobody(t, "^TestCallMemoryBoundWithoutCgroup$")
		return
	}
	for _, tool := range []string{"nsenter", "ss"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFail(t, "measuring the sandbox's sockets needs %s (util-linux, iproute2): %v", tool, err)
		}
	}
	cfg := Config{Interpreter: interpreter(t), Cgroup: "off", MaxProcesses: 4, MemoryMB: 64, MaxOpenFiles: 32, DiskMB: 8, WallTimeout: 60, MaxOutputBytes: 1 << 16}
	tl, err := New(cfg)
	if err == nil {
		_, err = tl.Run(context.Background(), "pass")
	}
	if errors.Is(err, ErrNoIsolation) {
		skipOrFail(t, "the sandbox cannot run here: %v", err)
	}
	require.NoError(t, err)
	wmem, err := sysctlInt("/proc/sys/net/core/wmem_default")
	require.NoError(t, err)
	pipeSoft, err := sysctlInt("/proc/sys/fs/pipe-user-pages-soft")
	require.NoError(t, err)
	bound := noCgroupBound(tl.cfg, int64(wmem), int64(pipeSoft))
	// Each kind of memory is tried up to the whole bound: several times
	// what the bound allows it, all together.
	stop := bound

	before := readMeminfo(t)
	var (
		mu   sync.Mutex
		peak sample
	)
	done := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			s := measure(before)
			mu.Lock()
			if s.total() > peak.total() {
				peak = s
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	out, err := tl.Run(context.Background(), fmt.Sprintf(memoryAttack, 3.0, stop))
	close(done)
	<-sampled
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, " done\n", "the attack ran to its end: %s", out.Text())
	require.False(t, out.CgroupLimits)
	require.Equal(t, 3, strings.Count(out.Stdout, "memory MiB"), "three processes filled their memory")

	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	t.Logf("bound %s; peak: RSS %s (%d processes), tmpfs/shmem %s, slab %s, sockets %s (%d), sum %s; host used %s more",
		mib(bound), mib(peak.rss), peak.procs, mib(peak.shmem), mib(peak.slab), mib(peak.sockets), peak.nsockets, mib(peak.total()), mib(peak.used))
	require.Positive(t, peak.procs, "the sandbox's processes were seen")
	require.Positive(t, peak.sockets, "ss, run by nsenter in the launcher's user and network namespaces (which this uid owns), listed the sandbox's sockets")
	require.Less(t, peak.total(), bound, "what the call held stays under SECURITY.md's bound")
	// Each part stays under its own share too.
	require.Less(t, peak.shmem, 3*(int64(cfg.DiskMB)<<20)+8<<20, "tmpfs: the three mounts of disk_mb, nothing else written")
	require.Less(t, peak.sockets, int64(cfg.MaxProcesses*cfg.MaxOpenFiles*(dgramQueue+1)*wmem), "socket buffers")
}

// sample is one measurement of the sandbox from outside.
type sample struct {
	rss, shmem, slab, sockets, used int64
	procs, nsockets                 int
}

func (s sample) total() int64 { return s.rss + s.shmem + s.slab + s.sockets }

// measure reads the RSS of this process's descendants (the sandbox), the
// growth of Shmem (tmpfs pages) and slab since before, and the buffers of
// the sockets in the sandbox's network namespace (ss in the launcher's
// namespaces, which this uid owns).
func measure(before map[string]int64) sample {
	var s sample
	now := map[string]int64{}
	if m, err := meminfo(); err == nil {
		now = m
	}
	s.shmem = max(0, now["Shmem"]-before["Shmem"])
	s.slab = max(0, now["Slab"]-before["Slab"])
	s.used = (now["MemTotal"] - now["MemAvailable"]) - (before["MemTotal"] - before["MemAvailable"])
	kids := descendants(os.Getpid())
	for _, pid := range kids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			continue
		}
		if m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b); m != nil {
			kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
			s.rss += kb << 10
			s.procs++
		}
	}
	for _, pid := range kids {
		comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
		if strings.TrimSpace(string(comm)) != "bwrap" {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		b, err := exec.CommandContext(ctx, "nsenter", "-t", strconv.Itoa(pid), "-U", "-n", "--preserve-credentials", "ss", "-x", "-a", "-m").Output()
		cancel()
		if err != nil {
			continue
		}
		for _, m := range regexp.MustCompile(`skmem:\(r(\d+),rb\d+,t(\d+),`).FindAllSubmatch(b, -1) {
			r, _ := strconv.ParseInt(string(m[1]), 10, 64)
			w, _ := strconv.ParseInt(string(m[2]), 10, 64)
			s.sockets += r + w
			s.nsockets++
		}
		break
	}
	return s
}

// descendants lists the processes below pid.
func descendants(pid int) []int {
	ents, _ := os.ReadDir("/proc")
	children := map[int][]int{}
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pp, _ := strconv.Atoi(f[1])
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// meminfo reads /proc/meminfo in bytes; Slab is SReclaimable + SUnreclaim.
func meminfo() (map[string]int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var name string
		var kb int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &name, &kb); err == nil {
			m[strings.TrimSuffix(name, ":")] = kb << 10
		}
	}
	m["Slab"] = m["SReclaimable"] + m["SUnreclaim"]
	return m, sc.Err()
}

func readMeminfo(t *testing.T) map[string]int64 {
	m, err := meminfo()
	require.NoError(t, err)
	return m
}

// skipOrFail skips, or under CI=1 fails: a CI machine must run the test.
func skipOrFail(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI=1: "+format, args...)
	}
	t.Skipf(format, args...)
}

// runAsNobody runs the tests matching run from a copy of this test binary
// as uid and gid 65534 and reports their result as this test's.
func runAsNobody(t *testing.T, run string) {
	dir, err := os.MkdirTemp("", "agentrl-nobody-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o1777))
	bin := filepath.Join(dir, "python.test")
	src, err := os.Open(os.Args[0])
	require.NoError(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	src.Close()
	require.NoError(t, err)
	require.NoError(t, dst.Close())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.run="+run, "-test.v", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TMPDIR=" + dir, "LANG=C.UTF-8", "CI=" + os.Getenv("CI")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false, Groups: []uint32{}}}
	b, err := cmd.CombinedOutput()
	t.Logf("as uid 65534:\n%s", b)
	switch {
	case bytes.Contains(b, []byte("--- SKIP")):
		t.Skip("skipped as uid 65534 (see the log)")
	case err != nil:
		t.Fatalf("as uid 65534: %v", err)
	}
	require.Contains(t, string(b), "--- PASS")
}
