package python

// Attacks on the sandbox's memory where no cgroup limits it (cgroup: off,
// or auto where none can be created): kernel memory that no process's RSS
// shows. Each test failed before the sandbox's root and /dev were made
// read-only, its tmpfs mounts got an inode cap, the open-file count, the
// send buffer and the datagram queue were capped, and the launcher's
// network namespace replaced bubblewrap's (loopback up). They are scaled
// down: small limits, and attacks that stop once past what they test.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// TestAttackWritesOutsideTheWritableMounts: bubblewrap's root and /dev
// are tmpfs mounts sized at half the host's memory; writing 256 files of
// 8 MB under /etc once put 2 GB into host memory with disk_mb: 64. Every
// place but the three capped mounts is read-only now.
func TestAttackWritesOutsideTheWritableMounts(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20, Cgroup: "off"})
	out, err := tl.Run(context.Background(), `
import os
for d in ('/etc', '/', '/dev', '/var', '/home', '/proc/..', '/dev/pts/..'):
    p = os.path.join(d, 'agentrl-fill')
    try:
        with open(p, 'wb') as f:
            f.write(b'x' * (1 << 20))
        print('WROTE', d)
    except OSError as e:
        print('refused', d, e.strerror)
    try:
        os.mkdir(p + '.d')
        print('MKDIR', d)
    except OSError as e:
        print('refused mkdir', d, e.strerror)
for d in ('/tmp', '/dev/shm', os.path.expanduser('~')):
    open(os.path.join(d, 'ok'), 'w').write('still writable')
    print('writable', d)
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "WROTE")
	require.NotContains(t, out.Stdout, "MKDIR")
	require.Contains(t, out.Stdout, "refused /etc Read-only file system")
	require.Contains(t, out.Stdout, "refused /dev Read-only file system")
	require.Equal(t, 3, strings.Count(out.Stdout, "writable "), out.Text())
}

// TestAttackEmptyFilesHitTheInodeCap: empty files use no blocks, so a
// size cap does not stop them; 360k of them in a 64 MB /tmp once added
// 460 MB of kernel slab. Each writable tmpfs has an inode cap now.
func TestAttackEmptyFilesHitTheInodeCap(t *testing.T) {
	cfg := Config{WallTimeout: 60, Cgroup: "off", DiskMB: 4}
	tl := newTool(t, cfg)
	limit := tl.cfg.tmpfsInodes()
	// Past the cap by a wide margin, but bounded when there is none.
	tries := 4 * limit
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import os
for d in ('/tmp', '/dev/shm', os.path.expanduser('~')):
    n, why = 0, 'no limit'
    try:
        while n < %d:
            open(os.path.join(d, 'f%%d' %% n), 'w').close()
            n += 1
    except OSError as e:
        why = e.strerror
    links = 0
    try:
        while links < %d:
            os.link(os.path.join(d, 'f0'), os.path.join(d, 'l%%d' %% links))
            links += 1
    except OSError:
        pass
    print(d, n, links, why)
`, tries, tries))
	require.NoError(t, err)
	t.Log(out.Text())
	lines := strings.Split(strings.TrimSpace(out.Stdout), "\n")
	require.Len(t, lines, 3, out.Text())
	for _, l := range lines {
		var dir, why string
		var n, links int
		_, err := fmt.Sscanf(l, "%s %d %d %s", &dir, &n, &links, &why)
		require.NoError(t, err, l)
		require.LessOrEqual(t, n+links, limit, "%s: files and hard links together stay under the inode cap: %s", dir, l)
		require.Contains(t, l, "No space left on device", l)
	}
}

// TestAttackSocketBuffers: socket buffers are kernel memory that neither
// RSS nor the address-space limit counts; 6,908 socketpairs queued 1.5 GB
// with an RSS of 11 MB, under an open-file limit inherited from the
// caller. Now the open files, the send buffer and the datagram queue are
// capped, so what one process queues is bounded by max_open_files ×
// (queue + 1) × net.core.wmem_default.
func TestAttackSocketBuffers(t *testing.T) {
	const files = 32
	tl := newTool(t, Config{WallTimeout: 30, Cgroup: "off", MaxOpenFiles: files})
	wmem, err := sysctlInt("/proc/sys/net/core/wmem_default")
	require.NoError(t, err)
	// Stop well past the bound when nothing enforces it.
	stopAt := 4 * files * (dgramQueue + 1) * (wmem + 4096)
	out, err := tl.Run(context.Background(), fmt.Sprintf(`
import fcntl, os, socket, struct, termios
stop = %d
queued, pairs, why = 0, 0, 'no limit'
held = []
try:
    bigger = True
    s = socket.socket(socket.AF_UNIX)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 64 << 20)
    except OSError as e:
        bigger = e.strerror
    s.close()
    print('SO_SNDBUF raised' if bigger is True else 'SO_SNDBUF refused: ' + bigger)
    # One receiving datagram socket; a sender per message, closed after
    # sending: the queue holds the memory without any sender's fd.
    r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    r.bind('\0agentrl-dgram')
    held.append(r)
    msgs = 0
    while queued < stop:
        w = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        w.setblocking(False)
        try:
            w.sendto(b'x' * (w.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF) - 4096), '\0agentrl-dgram')
            msgs += 1
            queued += w.getsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF)
        except OSError:
            w.close()
            break
        w.close()
    print('datagrams queued:', msgs)
    while queued < stop:
        a, b = socket.socketpair()
        held += [a, b]
        pairs += 1
        a.setblocking(False)
        try:
            while True:
                a.send(b'x' * 65536)
        except BlockingIOError:
            pass
        queued += struct.unpack('i', fcntl.ioctl(a, termios.TIOCOUTQ, b'\0\0\0\0'))[0]
except OSError as e:
    why = e.strerror
print('pairs:', pairs, 'queued:', queued, why)
`, stopAt))
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "SO_SNDBUF refused")
	m := regexp.MustCompile(`datagrams queued: (\d+)`).FindStringSubmatch(out.Stdout)
	require.NotNil(t, m, out.Text())
	msgs, _ := strconv.Atoi(m[1])
	require.LessOrEqual(t, msgs, dgramQueue+1, "datagrams queued on one socket")
	m = regexp.MustCompile(`pairs: (\d+) queued: (\d+) (.*)`).FindStringSubmatch(out.Stdout)
	require.NotNil(t, m, out.Text())
	pairs, _ := strconv.Atoi(m[1])
	queued, _ := strconv.Atoi(m[2])
	require.Equal(t, "Too many open files", m[3])
	require.Less(t, 2*pairs, files)
	require.Less(t, queued, files*(dgramQueue+1)*(wmem+4096))
}

// TestAttackOOMScoreAdj: memory that no RSS shows would make the host's
// OOM killer pick the trainer; the sandbox is its first choice instead,
// and cannot lower that.
func TestAttackOOMScoreAdj(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20, Cgroup: "off"})
	out, err := tl.Run(context.Background(), `
import os
print('adj', open('/proc/self/oom_score_adj').read().strip(), open('/proc/1/oom_score_adj').read().strip())
try:
    fd = os.open('/proc/self/oom_score_adj', os.O_WRONLY)
    os.write(fd, b'-1000')
    print('LOWERED')
except OSError as e:
    print('refused', e.strerror)
print('after', open('/proc/self/oom_score_adj').read().strip())
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "adj 1000 1000\n")
	require.NotContains(t, out.Stdout, "LOWERED")
	require.Contains(t, out.Stdout, "after 1000\n")
}

// TestAttackLoopbackIsDown: the network namespace has no interface up, not
// even loopback (bubblewrap's own brings it up), so no TCP or UDP buffers
// of the host's shared pools either.
func TestAttackLoopbackIsDown(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), `
import socket
for fam, addr in ((socket.AF_INET, ('127.0.0.1', 0)), (socket.AF_INET6, ('::1', 0))):
    s = socket.socket(fam)
    try:
        s.bind(addr)
        s.listen()
        c = socket.create_connection(s.getsockname()[:2], timeout=2)
        print('CONNECTED', addr[0])
    except OSError as e:
        print('refused', addr[0], e.strerror)
print(open('/proc/net/dev').read())
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.NotContains(t, out.Stdout, "CONNECTED")
	require.Contains(t, out.Stdout, "refused 127.0.0.1")
	require.Contains(t, out.Stdout, "refused ::1")
}

// TestAttackSIGINTToTheInit: PID 1 of the sandbox is our init; SIGINT
// raised KeyboardInterrupt in it and ended it before the code. The code
// itself still gets SIGINT as usual.
func TestAttackSIGINTToTheInit(t *testing.T) {
	tl := newTool(t, Config{WallTimeout: 20})
	out, err := tl.Run(context.Background(), `
import os, signal, time
for _ in range(5):
    os.kill(1, signal.SIGINT)
    time.sleep(0.05)
try:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(1)
except KeyboardInterrupt:
    print('own SIGINT: KeyboardInterrupt')
print('code survived')
`)
	require.NoError(t, err)
	t.Log(out.Text())
	require.Contains(t, out.Stdout, "own SIGINT: KeyboardInterrupt\ncode survived\n")
	require.Equal(t, 0, out.ExitCode, out.Text())
	require.Empty(t, out.Signal)
}

// TestInterpreterWithoutIsolatedMode: an interpreter that rejects -I -S
// (Python 2, or another program) is named as the cause, not reported as
// missing isolation.
func TestInterpreterWithoutIsolatedMode(t *testing.T) {
	interpreter(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	fake := filepath.Join(dir, "python2")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'Unknown option: -I' >&2\necho 'usage: python2 [option] ... [-c cmd | -m mod | file | -] [arg] ...' >&2\nexit 2\n"), 0o755))
	for _, iso := range []string{IsolationBubblewrap, IsolationRlimitsOnly} {
		tl, err := New(Config{Interpreter: fake, ReadOnlyPaths: []string{dir}, Isolation: iso})
		if err == nil {
			_, err = tl.Run(context.Background(), "print('hi')")
		}
		require.Error(t, err, iso)
		require.NotErrorIs(t, err, ErrNoIsolation, iso)
		require.ErrorContains(t, err, "-I -S", iso)
		require.ErrorContains(t, err, "Unknown option: -I", iso)
	}
}

// TestHostIDSkipsIDsInUse: ids of running processes and ranges given to
// containers (subordinate ids, user namespaces' maps) are never drawn.
func TestHostIDSkipsIDsInUse(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("uid reservations are made under root")
	}
	tmp := t.TempDir()
	defer func(d string, r func() int, s []string) { hostIDLockDir, randID, subIDFiles = d, r, s }(hostIDLockDir, randID, subIDFiles)
	hostIDLockDir = filepath.Join(tmp, "ids")
	sub := filepath.Join(tmp, "subuid")
	// A container's range [base+100, base+200), as /etc/subuid gives it.
	require.NoError(t, os.WriteFile(sub, []byte(fmt.Sprintf("someone:%d:100\n", hostIDBase+100)), 0o644))
	subIDFiles = []string{sub}
	// A process running as base+7 (a container's root, say).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := exec.CommandContext(ctx, "sleep", "30")
	p.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: hostIDBase + 7, Gid: hostIDBase + 7}}
	require.NoError(t, p.Start())
	defer func() { cancel(); _ = p.Wait() }()
	require.Eventually(t, func() bool { return idsInUse().has(hostIDBase + 7) }, 10*time.Second, 10*time.Millisecond)

	draws := []int{7, 150, 199, 100, 8}
	randID = func() int { d := draws[0]; draws = draws[1:]; return d }
	id, err := reserveHostID()
	require.NoError(t, err)
	defer id.release()
	require.Equal(t, hostIDBase+8, id.id, "7 is a process's, 100-199 a container's")
}

// TestStaleReservationsAreRemoved: a reservation file whose holder died
// (its lock went with it) is removed; one still held is not.
func TestStaleReservationsAreRemoved(t *testing.T) {
	dir := t.TempDir()
	stale := filepath.Join(dir, strconv.Itoa(hostIDBase+1))
	held := filepath.Join(dir, strconv.Itoa(hostIDBase+2))
	other := filepath.Join(dir, "not-an-id")
	for _, p := range []string{stale, held, other} {
		require.NoError(t, os.WriteFile(p, nil, 0o600))
	}
	// The holder of held is another process (flock locks are per open
	// file, so a lock of ours would not count as someone else's).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := exec.CommandContext(ctx, "flock", held, "sh", "-c", "echo locked; sleep 30")
	stdout, err := holder.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, holder.Start(), "flock(1) is in util-linux")
	defer func() { cancel(); _ = holder.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	require.Equal(t, "locked\n", line)

	sweepStale(dir)
	_, err = os.Stat(stale)
	require.True(t, errors.Is(err, os.ErrNotExist), "the stale reservation is removed")
	for _, p := range []string{held, other} {
		_, err := os.Stat(p)
		require.NoError(t, err)
	}
}

// TestHostIDLockDirIsMachineWide: processes with different TMPDIRs use
// one reservation directory.
func TestHostIDLockDirIsMachineWide(t *testing.T) {
	require.True(t, hostIDLockDir == "/run/agentrl-sandbox-ids" || hostIDLockDir == "/tmp/agentrl-sandbox-ids", hostIDLockDir)
	t.Setenv("TMPDIR", t.TempDir())
	cmd := exec.Command(os.Args[0], "-test.run=^TestPrintLockDirHelper$", "-test.v")
	cmd.Env = append(os.Environ(), "AGENTRL_PRINT_LOCK_DIR=1")
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.Contains(t, string(b), "lock dir: "+hostIDLockDir+"\n")
}

func TestPrintLockDirHelper(t *testing.T) {
	if os.Getenv("AGENTRL_PRINT_LOCK_DIR") == "" {
		t.Skip("helper process of TestHostIDLockDirIsMachineWide")
	}
	fmt.Println("lock dir: " + hostIDLockDir)
}

// TestWarnsWhenAutoFindsNoCgroup: cgroup: auto falling back to
// per-process limits says so, once per tool; cgroup: off does not.
func TestWarnsWhenAutoFindsNoCgroup(t *testing.T) {
	var log strings.Builder
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
	tl := newTool(t, Config{WallTimeout: 20, Logger: logger})
	var cg bool
	for i := 0; i < 2; i++ {
		out, err := tl.Run(context.Background(), "pass")
		require.NoError(t, err)
		cg = out.CgroupLimits
	}
	if cg {
		require.Empty(t, log.String(), "a cgroup was in effect")
	} else {
		require.Equal(t, 1, strings.Count(log.String(), "level=WARN"), log.String())
		require.Contains(t, log.String(), "no cgroup")
	}
	log.Reset()
	off := newTool(t, Config{WallTimeout: 20, Logger: logger, Cgroup: "off"})
	_, err := off.Run(context.Background(), "pass")
	require.NoError(t, err)
	require.Empty(t, log.String())
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func sysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// TestAttackSocketBuffersUnderCgroup checks that Unix socket buffers are
// charged to the sandbox's memory cgroup: with 64 MiB for the whole
// sandbox and open files enough to queue 256 MiB, the call must be stopped
// by the memory limit (killed, or refused a send) long before its queues
// pass the limit. Without the charge the kernel would let every queued
// byte through, since no process's RSS grows (TestAttackSocketBuffers
// bounds the same memory by open files when there is no cgroup).
func TestAttackSocketBuffersUnderCgroup(t *testing.T) {
	const memoryMB = 64
	tl := newTool(t, Config{MemoryMB: memoryMB, WallTimeout: 30, MaxOpenFiles: 8192})
	out, err := tl.Run(context.Background(), `
import fcntl, socket, struct, termios, sys
stop = 256 << 20
queued, pairs, why = 0, 0, 'stop reached'
held = []
try:
    while queued < stop:
        a, b = socket.socketpair()
        held += [a, b]
        pairs += 1
        a.setblocking(False)
        try:
            while True:
                a.send(b'x' * 65536)
        except BlockingIOError:
            pass
        queued += struct.unpack('i', fcntl.ioctl(a, termios.TIOCOUTQ, b'\0\0\0\0'))[0]
        if pairs % 64 == 0:
            print('queued:', queued, flush=True)
except OSError as e:
    why = e.strerror
except MemoryError:
    why = 'MemoryError'
print('pairs:', pairs, 'queued:', queued, why, flush=True)
`)
	require.NoError(t, err)
	t.Log(out.Text(), out.Metrics())
	if !cgroupInEffect(out) {
		skipOrFail(t, "no cgroup could be created here, so the kernel's charge of socket buffers to it cannot be checked (see SECURITY.md)")
	}
	// The largest amount the call reported queued, whether it finished or
	// was killed mid-way.
	most := 0
	for _, m := range regexp.MustCompile(`queued:? (\d+)`).FindAllStringSubmatch(out.Stdout, -1) {
		n, _ := strconv.Atoi(m[1])
		most = max(most, n)
	}
	require.Less(t, most, memoryMB<<20, "socket buffers queued past the sandbox's memory limit: %s", out.Text())
	require.NotContains(t, out.Stdout, "stop reached", "256 MiB queued under a 64 MiB cgroup")
	require.True(t, memoryLimitHit(out) || out.Signal != "" || strings.Contains(out.Stdout, "pairs:"),
		"stopped by the memory limit: %s", out.Text())
}
