package kernels

import (
	"errors"
	"sync"
)

// A MapGuard keeps a read-only file mapping from crashing the process when
// the file shrinks under it.
//
// Serving weights straight from a read-only mmap of the checkpoint (as
// llama.cpp, PyTorch and safetensors can) has one hazard: if another
// process truncates the file while it is mapped, the next read of a page
// past the new end raises SIGBUS. Inside C code (these kernels) the Go
// runtime cannot turn that into a panic, and the whole process dies.
//
// GuardMapping registers a mapping with a process-wide SIGBUS handler,
// installed on first use. For a fault at an address inside a registered
// mapping the handler maps anonymous zero pages (PROT_READ, MAP_FIXED) over
// the faulting page and every later page of the mapping, marks the
// registration damaged and returns: the access is retried and reads zeros.
// Callers must check Damaged after using the bytes (the engine after each
// forward pass) and report an error instead of the results — the guard
// fails closed, it never makes truncated weights look valid. Faults handled
// are those that mean "page cannot be read": past the end of the file
// (BUS_ADRERR), an I/O error (BUS_OBJERR) or a poisoned page
// (BUS_MCEERR_AR).
//
// Every other SIGBUS — outside registered mappings, sent with kill, or a
// misaligned access — goes to the handler that was installed before the
// guard (normally the Go runtime's), called exactly as the kernel would
// have: its SA_SIGINFO handler with the same signal, siginfo and context,
// its plain handler, or the default action (the process dies of SIGBUS)
// or ignore. So Go's own behaviour is unchanged: debug.SetPanicOnFault
// panics and the runtime's crash reports. If the zero pages cannot be
// mapped the fault is chained too, and the process crashes as without the
// guard rather than looping.
//
// The handler follows the os/signal rules for non-Go handlers in cgo
// programs: SA_ONSTACK, the Go handler recorded and invoked for faults that
// are not ours, the signal mask of Go threads left alone. It is
// async-signal-safe: a fixed table of 1024 ranges read with lock-free C11
// atomics, no allocation and no locks, errno saved and restored.
//
// Limits:
//   - Only pages that cannot be read are detected. A file rewritten in
//     place (same length, new bytes) is not: a shared mapping shows the new
//     bytes. A mapped checkpoint must be replaced by writing a new file and
//     renaming it over the old one, never overwritten in place.
//   - The guard is one process-wide SIGBUS handler. The Go runtime never
//     reinstalls its SIGBUS handler after start-up (signal.Notify, Ignore
//     and Reset leave the synchronous signals' handlers alone), but non-Go
//     code that installs its own SIGBUS handler later replaces the guard
//     unless it chains the same way.
//   - Release must be called before the mapping is unmapped, and no reader
//     may use the mapping after Release: a fault racing with Release and
//     munmap could otherwise map zero pages over whatever is mapped there
//     next.
//   - Linux only; elsewhere GuardMapping returns ErrMapGuardUnsupported and
//     the caller should copy the bytes instead of mapping them.
type MapGuard struct {
	slot     int
	released bool
	damaged  bool // the mark, kept at Release
}

// mapGuardSlots is how many mappings can be registered at once (the C
// table's size, AGL_MAPGUARD_SLOTS).
const mapGuardSlots = 1024

// ErrMapGuardUnsupported is returned by GuardMapping where the guard is not
// implemented (outside Linux).
var ErrMapGuardUnsupported = errors.New("kernels: SIGBUS guard for mapped files is not supported on this system")

// MapGuardSupported reports whether GuardMapping is implemented here
// (Linux), so that a caller can choose to copy instead of mapping.
func MapGuardSupported() bool { return mapGuardSupported }

// guardMu serializes registration and removal; the handler itself takes no
// lock.
var guardMu sync.Mutex

// GuardMapping registers b — bytes of a read-only file mapping made with
// mmap, starting at a page boundary — with the SIGBUS guard, installing the
// handler on the first call. Ranges may not overlap a registered one, and
// at most 1024 can be registered at once. Call Release before
// unmapping b.
func GuardMapping(b []byte) (*MapGuard, error) {
	if len(b) == 0 {
		return nil, errors.New("kernels: GuardMapping: empty mapping")
	}
	return guardMapping(b)
}

// Damaged reports whether a page of the mapping could not be read (the file
// shrank, or an I/O or memory error) and was replaced by zeros. Once true
// it stays true; after Release it reports the mark as it was at Release.
func (g *MapGuard) Damaged() bool {
	guardMu.Lock()
	defer guardMu.Unlock()
	if g.released {
		return g.damaged
	}
	return slotDamaged(g.slot)
}

// Release unregisters the mapping, so its slot can be reused; call it
// before munmap, once no reader uses the mapping. It is idempotent and safe
// for concurrent use.
func (g *MapGuard) Release() {
	guardMu.Lock()
	defer guardMu.Unlock()
	if g.released {
		return
	}
	g.damaged = releaseSlot(g.slot)
	g.released = true
}
