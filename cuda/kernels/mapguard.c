//go:build linux

// SIGBUS guard for read-only file mappings; see mapguard.go for the why.
//
// The handler is async-signal-safe: it reads a fixed table with lock-free
// C11 atomics, calls only the raw mmap syscall, sigaction and raise, and
// saves and restores errno. Registration and removal are serialized by the
// Go side (one mutex), so only the handler runs concurrently with them.

#define _GNU_SOURCE
#include "mapguard.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

_Static_assert(ATOMIC_POINTER_LOCK_FREE == 2, "the handler needs lock-free pointer atomics");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "the handler needs lock-free int atomics");

// A slot is free when start == 0. Register stores end before start and
// removal clears start before end, so a handler that sees a start also sees
// the end that belongs to it.
typedef struct {
	atomic_uintptr_t start, end;
	atomic_int damaged;
} agl_guard_slot;

static agl_guard_slot agl_guard_slots[AGL_MAPGUARD_SLOTS];

// Written once by agl_mapguard_install before the handler is installed (and
// by the test hook in a child process); read by the handler.
static struct sigaction agl_guard_old;
static uintptr_t agl_guard_page;

static void agl_guard_default(int sig) {
	struct sigaction d;
	memset(&d, 0, sizeof d);
	d.sa_handler = SIG_DFL;
	sigemptyset(&d.sa_mask);
	sigaction(sig, &d, NULL);
}

// agl_guard_chain runs the previous action exactly as the kernel would
// have: its sa_sigaction with the same arguments, or its plain handler, or
// the default / ignore disposition.
static void agl_guard_chain(int sig, siginfo_t *info, void *uc) {
	const struct sigaction *o = &agl_guard_old;
	if (o->sa_flags & SA_SIGINFO) {
		if (o->sa_flags & SA_RESETHAND) agl_guard_default(sig);
		o->sa_sigaction(sig, info, uc);
		return;
	}
	void (*h)(int) = o->sa_handler;
	int fault = info != NULL && info->si_code > 0;
	if (h == SIG_IGN) {
		// The kernel cannot ignore a fault: it resets the action and the
		// re-executed access kills the process. A sent SIGBUS is dropped.
		if (fault) agl_guard_default(sig);
		return;
	}
	if (h == SIG_DFL) {
		agl_guard_default(sig);
		// A fault repeats when we return and now kills the process with
		// its own context (and core). A sent signal is raised again; it
		// is blocked here and delivered when the handler returns.
		if (!fault) raise(sig);
		return;
	}
	if (o->sa_flags & SA_RESETHAND) agl_guard_default(sig);
	h(sig);
}

static void agl_guard_handler(int sig, siginfo_t *info, void *uc) {
	int saved = errno;
	// Only kernel-made faults (si_code > 0) carry a fault address; of those,
	// a page past the end of the file (BUS_ADRERR), an I/O error on it
	// (BUS_OBJERR) or a poisoned page (BUS_MCEERR_AR) is a page that cannot
	// be read. Misalignment and anything else are not ours.
	if (info != NULL && (info->si_code == BUS_ADRERR || info->si_code == BUS_OBJERR
#ifdef BUS_MCEERR_AR
	                     || info->si_code == BUS_MCEERR_AR
#endif
	                     )) {
		uintptr_t a = (uintptr_t)info->si_addr;
		for (int i = 0; i < AGL_MAPGUARD_SLOTS; i++) {
			uintptr_t s = atomic_load(&agl_guard_slots[i].start);
			if (s == 0 || a < s) continue;
			uintptr_t e = atomic_load(&agl_guard_slots[i].end);
			if (a >= e) continue;
			// Every page from the faulting one on lies past the end of the
			// file too (the mapping is contiguous in the file), so replace
			// them all at once: one fault per mapping, not one per page.
			uintptr_t lo = a & ~(agl_guard_page - 1);
			uintptr_t hi = (e + agl_guard_page - 1) & ~(agl_guard_page - 1);
			long r = syscall(SYS_mmap, (void *)lo, (size_t)(hi - lo), PROT_READ,
			                 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
			if ((uintptr_t)r == lo) {
				atomic_store(&agl_guard_slots[i].damaged, 1);
				errno = saved;
				return; // the access is retried and reads zeros
			}
			break; // cannot repair: crash as without the guard
		}
	}
	errno = saved;
	agl_guard_chain(sig, info, uc);
}

int agl_mapguard_install(void) {
	long pg = sysconf(_SC_PAGESIZE);
	if (pg <= 0) return EINVAL;
	agl_guard_page = (uintptr_t)pg;
	if (sigaction(SIGBUS, NULL, &agl_guard_old) != 0) return errno;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = agl_guard_handler;
	// SA_ONSTACK: Go threads run on small stacks and handle signals on an
	// alternate stack (os/signal: non-Go handlers must use SA_ONSTACK).
	// The full mask matches the Go runtime's own handler, so the chained
	// Go handler runs under the mask it expects.
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0) return errno;
	return 0;
}

int agl_mapguard_register(uintptr_t start, uintptr_t end) {
	int free_slot = -1;
	for (int i = 0; i < AGL_MAPGUARD_SLOTS; i++) {
		uintptr_t s = atomic_load(&agl_guard_slots[i].start);
		if (s == 0) {
			if (free_slot < 0) free_slot = i;
			continue;
		}
		uintptr_t e = atomic_load(&agl_guard_slots[i].end);
		if (start < e && s < end) return -2;
	}
	if (free_slot < 0) return -1;
	atomic_store(&agl_guard_slots[free_slot].damaged, 0);
	atomic_store(&agl_guard_slots[free_slot].end, end);
	atomic_store(&agl_guard_slots[free_slot].start, start);
	return free_slot;
}

int agl_mapguard_unregister(int slot) {
	atomic_store(&agl_guard_slots[slot].start, 0);
	atomic_store(&agl_guard_slots[slot].end, 0);
	return atomic_load(&agl_guard_slots[slot].damaged);
}

int agl_mapguard_damaged(int slot) { return atomic_load(&agl_guard_slots[slot].damaged); }

uint64_t agl_mapguard_sum(const unsigned char *p, size_t n) {
	// volatile: every byte is loaded, in order, as a kernel streaming the
	// weights would.
	const volatile unsigned char *v = p;
	uint64_t s = 0;
	for (size_t i = 0; i < n; i++) s += v[i];
	return s;
}

static void agl_guard_plain_for_test(int sig) {
	static const char msg[] = "mapguard: plain handler ran\n";
	(void)sig;
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	_exit(3);
}

void agl_mapguard_test_hook(int mode) {
	if (mode == 3) {
		agl_guard_page = 1;
		return;
	}
	struct sigaction o;
	memset(&o, 0, sizeof o);
	sigemptyset(&o.sa_mask);
	o.sa_handler = mode == 0 ? SIG_DFL : mode == 1 ? SIG_IGN : agl_guard_plain_for_test;
	agl_guard_old = o;
}
