//go:build linux

package kernels

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

var pageSize = os.Getpagesize()

// fileByte is the known content of the mapped test files: never zero, so a
// zero read means the guard's zero page (or the zeros past EOF in the page
// that holds the end of the file).
func fileByte(i int) byte { return byte(i*7%251 + 1) }

// mappedFile writes pages pages of fileByte to a temporary file, maps it
// read-only and shared, and unmaps it when the test ends.
func mappedFile(t testing.TB, pages int) (b []byte, path string) {
	t.Helper()
	data := make([]byte, pages*pageSize)
	for i := range data {
		data[i] = fileByte(i)
	}
	path = filepath.Join(t.TempDir(), "weights.bin")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err = unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unix.Munmap(b)) })
	return b, path
}

// wantSum is what a reader sees after the file was cut to n bytes: the
// file's bytes below n and zeros from n on.
func wantSum(n int) uint64 {
	var s uint64
	for i := 0; i < n; i++ {
		s += uint64(fileByte(i))
	}
	return s
}

func sumBytesGo(b []byte) uint64 {
	var s uint64
	for _, v := range b {
		s += uint64(v)
	}
	return s
}

// TestMapGuardTruncatedReadFromC cuts a mapped file to one page and reads
// all of it from C: without the guard the process dies of SIGBUS; with it
// the first page reads as written, the rest as zeros, and the guard reports
// the damage.
func TestMapGuardTruncatedReadFromC(t *testing.T) {
	b, path := mappedFile(t, 5)
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()

	require.Equal(t, wantSum(len(b)), sumBytesC(b), "intact file")
	require.False(t, g.Damaged(), "intact file")

	require.NoError(t, os.Truncate(path, int64(pageSize)))
	require.Equal(t, wantSum(pageSize), sumBytesC(b))
	require.True(t, g.Damaged())
	for p := 1; p < 5; p++ {
		require.Zero(t, sumBytesC(b[p*pageSize:(p+1)*pageSize]), "page %d", p)
	}
	require.True(t, g.Damaged(), "the mark stays")
}

// TestMapGuardTruncatedReadFromGo is the same read in Go code: the fault
// is the guard's too (no Go panic), and the bytes are the same.
func TestMapGuardTruncatedReadFromGo(t *testing.T) {
	b, path := mappedFile(t, 4)
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()

	require.NoError(t, os.Truncate(path, int64(pageSize)))
	require.Equal(t, wantSum(pageSize), sumBytesGo(b))
	require.True(t, g.Damaged())
	for i := pageSize; i < len(b); i++ {
		if b[i] != 0 {
			t.Fatalf("byte %d = %d after the file was cut to one page, want 0", i, b[i])
		}
	}
}

// TestMapGuardMidPage cuts the file inside a page and faults first on the
// last page: the page holding the end of the file is readable (the kernel
// zero-fills it past EOF), and the guard replaces every page from the
// faulting one on, not only that one.
func TestMapGuardMidPage(t *testing.T) {
	b, path := mappedFile(t, 6)
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()

	n := 2*pageSize + pageSize/2
	require.NoError(t, os.Truncate(path, int64(n)))
	require.Zero(t, sumBytesC(b[5*pageSize:]), "last page first")
	require.True(t, g.Damaged())
	require.Equal(t, wantSum(n), sumBytesC(b))
}

// TestMapGuardWiden reads a truncated bf16 mapping with a loading kernel
// (Widen, as the engine converts checkpoint rows): ones from the page that
// survived, zeros after it.
func TestMapGuardWiden(t *testing.T) {
	const pages = 3
	data := make([]byte, pages*pageSize)
	for i := 0; i < len(data); i += 2 {
		binary.LittleEndian.PutUint16(data[i:], 0x3f80) // bf16 1.0
	}
	path := filepath.Join(t.TempDir(), "bf16.bin")
	require.NoError(t, os.WriteFile(path, data, 0o600))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, len(data), unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(b)) }()
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()

	require.NoError(t, os.Truncate(path, int64(pageSize)))
	out := make([]float32, len(b)/2)
	Widen(out, b, SourceBF16)
	require.True(t, g.Damaged())
	for i, v := range out {
		want := float32(0)
		if i < pageSize/2 {
			want = 1
		}
		if v != want {
			t.Fatalf("element %d = %v, want %v", i, v, want)
		}
	}
}

// TestMapGuardConcurrentFaults has several goroutines fault on the same
// truncated mapping at once, from C: every one reads the same bytes.
func TestMapGuardConcurrentFaults(t *testing.T) {
	b, path := mappedFile(t, 8)
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()
	require.NoError(t, os.Truncate(path, int64(pageSize)))

	sums := make([]uint64, 4)
	var wg sync.WaitGroup
	for i := range sums {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sums[i] = sumBytesC(b)
		}()
	}
	wg.Wait()
	for i, s := range sums {
		require.Equal(t, wantSum(pageSize), s, "goroutine %d", i)
	}
	require.True(t, g.Damaged())
}

// TestMapGuardSeparateMarks damages one of two registered mappings: only
// its guard reports it, and the mark survives Release.
func TestMapGuardSeparateMarks(t *testing.T) {
	b1, path1 := mappedFile(t, 2)
	b2, _ := mappedFile(t, 2)
	g1, err := GuardMapping(b1)
	require.NoError(t, err)
	g2, err := GuardMapping(b2)
	require.NoError(t, err)

	require.NoError(t, os.Truncate(path1, 0))
	require.Zero(t, sumBytesC(b1))
	require.Equal(t, wantSum(len(b2)), sumBytesC(b2))
	require.True(t, g1.Damaged())
	require.False(t, g2.Damaged())

	g1.Release()
	g1.Release() // idempotent
	g2.Release()
	require.True(t, g1.Damaged(), "after Release")
	require.False(t, g2.Damaged(), "after Release")
}

// anonPages maps n pages of anonymous read-only memory: distinct ranges to
// register.
func anonPages(t *testing.T, n int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, n*pageSize, unix.PROT_READ, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unix.Munmap(b)) })
	return b
}

func TestMapGuardBadInput(t *testing.T) {
	b := anonPages(t, 4)
	_, err := GuardMapping(nil)
	require.ErrorContains(t, err, "empty mapping")
	_, err = GuardMapping(b[1:])
	require.ErrorContains(t, err, "not page aligned")

	g, err := GuardMapping(b[pageSize : 3*pageSize])
	require.NoError(t, err)
	defer g.Release()
	for _, r := range [][2]int{{0, 2}, {2, 3}, {1, 2}, {0, 4}} {
		_, err = GuardMapping(b[r[0]*pageSize : r[1]*pageSize])
		require.ErrorContains(t, err, "overlaps a registered mapping", "pages %v", r)
	}
	g2, err := GuardMapping(b[3*pageSize:]) // adjacent, not overlapping
	require.NoError(t, err)
	g2.Release()
}

// TestMapGuardSlots fills the table, checks the error, and that released
// slots are used again.
func TestMapGuardSlots(t *testing.T) {
	b := anonPages(t, mapGuardSlots+1)
	var gs []*MapGuard
	defer func() {
		for _, g := range gs {
			g.Release()
		}
	}()
	var err error
	for i := 0; i <= mapGuardSlots; i++ {
		var g *MapGuard
		g, err = GuardMapping(b[i*pageSize : (i+1)*pageSize])
		if err != nil {
			break
		}
		gs = append(gs, g)
	}
	require.ErrorContains(t, err, "all 1024 slots are in use")
	require.Equal(t, mapGuardSlots, len(gs), "no other test holds a slot now")

	last := b[mapGuardSlots*pageSize:]
	gs[7].Release()
	g, err := GuardMapping(last)
	require.NoError(t, err, "a released slot is free again")
	require.Equal(t, gs[7].slot, g.slot)
	require.False(t, g.Damaged(), "a reused slot starts clean")
	gs[7] = g
}

// TestMapGuardConcurrentRegister registers, checks and releases guards from
// several goroutines at once (run it with -race).
func TestMapGuardConcurrentRegister(t *testing.T) {
	const workers, rounds = 8, 200
	b := anonPages(t, workers)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				g, err := GuardMapping(b[w*pageSize : (w+1)*pageSize])
				if err != nil {
					errs[w] = err
					return
				}
				if g.Damaged() {
					errs[w] = fmt.Errorf("round %d: a fresh guard reports damage", r)
					return
				}
				g.Release()
				g.Release()
			}
		}()
	}
	wg.Wait()
	for w, err := range errs {
		require.NoError(t, err, "worker %d", w)
	}
}

// The crash tests run the test binary again as a child that does one thing
// (TestMapGuardChild, selected by this variable) and check how it ends.
const mapGuardChildEnv = "AGENTRL_MAPGUARD_CHILD"

type childResult struct {
	out    string
	code   int            // exit status, -1 when killed by a signal
	signal syscall.Signal // the killing signal
}

func runChild(t *testing.T, mode string) childResult {
	t.Helper()
	// A bounded wait: a guard that fails to chain would make the child
	// retry its fault forever.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMapGuardChild$", "-test.count=1")
	// GOTRACEBACK=single: the report format the crash tests compare,
	// whatever the caller's setting.
	// TMPDIR in the parent's temporary directory: a child killed by its
	// signal never runs its own cleanup, and would leave its files behind.
	cmd.Env = append(os.Environ(), mapGuardChildEnv+"="+mode, "GOTRACEBACK=single", "TMPDIR="+t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	r := childResult{out: out.String(), code: cmd.ProcessState.ExitCode()}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.signal = ws.Signal()
	}
	if ctx.Err() != nil {
		t.Fatalf("child %s did not end within a minute (a fault retried forever?):\n%s", mode, r.out)
	}
	if err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("running child %s: %v", mode, err)
		}
	}
	t.Logf("child %s: code %d signal %v\n%s", mode, r.code, r.signal, r.out)
	return r
}

// mapGuardSink makes the children's Go reads real loads.
var mapGuardSink byte

// TestMapGuardChild is the child's body; it does nothing in a normal run.
func TestMapGuardChild(t *testing.T) {
	mode := os.Getenv(mapGuardChildEnv)
	if mode == "" {
		t.Skip("runs only as a child of the crash tests")
	}
	// No core files from the children that die of SIGBUS on purpose.
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{}))
	// Every mode but the control installs the guard (through a registered
	// mapping of its own), then faults on an unregistered one.
	if mode != "cfault-noguard" {
		other, _ := mappedFile(t, 1)
		g, err := GuardMapping(other)
		require.NoError(t, err)
		defer g.Release()
	}
	b, path := mappedFile(t, 3)
	require.NoError(t, os.Truncate(path, int64(pageSize)))
	fault := unsafe.Pointer(&b[2*pageSize])
	switch mode {
	case "gopanic":
		debug.SetPanicOnFault(true)
		func() {
			defer func() {
				e := recover()
				re, ok := e.(runtime.Error)
				require.True(t, ok, "recovered %v, want a runtime.Error", e)
				addr, ok := re.(interface{ Addr() uintptr })
				require.True(t, ok, "recovered %v, want a fault with an address", e)
				fmt.Printf("recovered: %v at %#x, fault at %#x\n", re, addr.Addr(), uintptr(fault))
			}()
			mapGuardSink = b[2*pageSize]
		}()
		return
	case "notify":
		// signal.Notify does not take SIGBUS from the guard.
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGBUS)
		defer signal.Stop(c)
		reg, regPath := mappedFile(t, 2)
		g, err := GuardMapping(reg)
		require.NoError(t, err)
		defer g.Release()
		require.NoError(t, os.Truncate(regPath, 0))
		require.Zero(t, sumBytesC(reg))
		require.True(t, g.Damaged())
		fmt.Println("notify: guard still active")
		return
	case "cfault", "cfault-noguard":
	case "gofault":
		mapGuardSink = b[2*pageSize]
	case "dfl":
		guardTestHook(0)
	case "ign":
		guardTestHook(1)
	case "plain":
		guardTestHook(2)
	case "repairfail":
		// A registered mapping whose zero pages cannot be mapped: the
		// fault is chained (the process crashes as without the guard), not
		// retried forever.
		guardTestHook(3)
		g, err := GuardMapping(b)
		require.NoError(t, err)
		defer g.Release()
		b = b[2*pageSize+1:]
	case "dfl-kill":
		guardTestHook(0)
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGBUS))
		select {} // the signal ends the process
	default:
		t.Fatalf("unknown child mode %q", mode)
	}
	fmt.Println("read", sumBytesC(b))
	t.Fatal("the read past the end of the file did not end the process")
}

// crashReport is the head of the Go runtime's report of a fatal signal in
// C code, "SIGBUS: bus error" and "PC=… m=… sigcode=… addr=…", with the
// thread (m=) and the fault address removed: they differ between runs.
func crashReport(out string) string {
	lines := strings.SplitN(out, "\n", 3)
	if len(lines) < 3 {
		return out
	}
	var kept []string
	for _, f := range strings.Fields(lines[1]) {
		if !strings.HasPrefix(f, "m=") && !strings.HasPrefix(f, "addr=") {
			kept = append(kept, f)
		}
	}
	return lines[0] + "\n" + strings.Join(kept, " ")
}

// TestMapGuardChainsGoPanic: with the guard installed, a fault outside any
// registered mapping under debug.SetPanicOnFault is still the Go runtime's
// recoverable panic, at the faulting address.
func TestMapGuardChainsGoPanic(t *testing.T) {
	r := runChild(t, "gopanic")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.out, "recovered: runtime error: invalid memory address or nil pointer dereference")
	i := strings.Index(r.out, "recovered:")
	var got, want uintptr
	line := r.out[i:]
	line = line[strings.Index(line, " at ")+1:]
	_, err := fmt.Sscanf(line, "at %v, fault at %v", &got, &want)
	require.NoError(t, err, line)
	require.Equal(t, want, got)
}

// TestMapGuardChainsCrash: a fault in C code outside any registered mapping
// still crashes the process with the Go runtime's own SIGBUS report, the
// same as in a process without the guard.
func TestMapGuardChainsCrash(t *testing.T) {
	control := runChild(t, "cfault-noguard")
	r := runChild(t, "cfault")
	for _, c := range []childResult{control, r} {
		require.Equal(t, 2, c.code, "the Go runtime's fatal-signal exit status")
		require.Regexp(t, `^SIGBUS: bus error\nPC=0x[0-9a-f]+ m=[0-9]+ sigcode=2 addr=0x[0-9a-f]+\nsignal arrived during cgo execution\n`, c.out)
	}
	require.Equal(t, crashReport(control.out), crashReport(r.out), "the same report with and without the guard")

	r = runChild(t, "gofault")
	require.Equal(t, 2, r.code)
	require.Contains(t, r.out, "unexpected fault address")
	require.Contains(t, r.out, "fatal error: fault")
	require.Contains(t, r.out, "[signal SIGBUS: bus error code=0x2 addr=")
}

// TestMapGuardRepairFails: a registered fault whose zero pages cannot be
// mapped ends in the Go runtime's crash report, as without the guard.
func TestMapGuardRepairFails(t *testing.T) {
	r := runChild(t, "repairfail")
	require.Equal(t, 2, r.code)
	require.Regexp(t, `^SIGBUS: bus error\nPC=0x[0-9a-f]+ m=[0-9]+ sigcode=2 addr=0x[0-9a-f]+\nsignal arrived during cgo execution\n`, r.out)
}

// TestMapGuardChainsDefault: where the previous action is SIG_DFL or
// SIG_IGN, an unguarded fault kills the process with SIGBUS, as the kernel
// does; a plain (non-SA_SIGINFO) handler is called; a SIGBUS sent with
// kill under SIG_DFL kills too.
func TestMapGuardChainsDefault(t *testing.T) {
	for _, mode := range []string{"dfl", "ign", "dfl-kill"} {
		r := runChild(t, mode)
		require.Equal(t, syscall.SIGBUS, r.signal, "%s: %s", mode, r.out)
		require.NotContains(t, r.out, "read ", mode)
	}
	r := runChild(t, "plain")
	require.Equal(t, 3, r.code)
	require.Contains(t, r.out, "mapguard: plain handler ran")
}

// TestMapGuardNotify: signal.Notify(SIGBUS) after the guard was installed
// leaves the guard in place.
func TestMapGuardNotify(t *testing.T) {
	r := runChild(t, "notify")
	require.Equal(t, 0, r.code)
	require.Contains(t, r.out, "notify: guard still active")
}

// TestMapGuardPoolThreads: a product over a mapped bf16 matrix whose file
// is cut short faults on the pool's helper threads as well as on the
// caller's; the guard repairs the faults on any thread (the product
// completes, the cut rows read as zero weights) and reports the damage.
func TestMapGuardPoolThreads(t *testing.T) {
	const k = 64
	b, path := mappedFile(t, 256)
	vals := unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
	for i := range vals {
		// Every value of the file is a finite bf16 (fileByte never makes
		// an exponent of all ones).
		require.NotEqual(t, uint16(0x7f80), vals[i]&0x7f80)
	}
	w := NewBF16Parts(k, vals)
	n := w.N
	x := make([]float32, k)
	for i := range x {
		x[i] = float32(i%5) - 2
	}
	want := make([]float32, n)
	NewCPU(1).MatMulBF16(want, x, 1, w, nil)
	g, err := GuardMapping(b)
	require.NoError(t, err)
	defer g.Release()
	require.NoError(t, os.Truncate(path, int64(pageSize)))
	c := NewCPU(2)
	got := make([]float32, n)
	c.MatMulBF16(got, x, 1, w, nil)
	assert.True(t, g.Damaged())
	keep := pageSize / (2 * k) // rows still in the file
	assert.Equal(t, want[:keep], got[:keep])
	for r := keep; r < n; r++ {
		require.Zero(t, got[r], "row %d", r)
	}
}
