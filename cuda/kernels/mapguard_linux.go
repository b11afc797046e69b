package kernels

/*
#include "mapguard.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

const mapGuardSupported = true

var (
	guardInstall    sync.Once
	guardInstallErr error
)

func guardMapping(b []byte) (*MapGuard, error) {
	start := uintptr(unsafe.Pointer(&b[0]))
	if start%uintptr(os.Getpagesize()) != 0 {
		return nil, fmt.Errorf("kernels: GuardMapping: start %#x is not page aligned (not a mapping made by mmap)", start)
	}
	guardInstall.Do(func() {
		// From Go code, after the runtime installed its own SIGBUS
		// handler, which the guard records and chains to.
		if e := C.agl_mapguard_install(); e != 0 {
			guardInstallErr = fmt.Errorf("kernels: GuardMapping: installing the SIGBUS handler: %w", syscall.Errno(e))
		}
	})
	if guardInstallErr != nil {
		return nil, guardInstallErr
	}
	guardMu.Lock()
	defer guardMu.Unlock()
	slot := int(C.agl_mapguard_register(C.uintptr_t(start), C.uintptr_t(start+uintptr(len(b)))))
	switch slot {
	case -1:
		return nil, fmt.Errorf("kernels: GuardMapping: all %d slots are in use (Release guards before unmapping)", mapGuardSlots)
	case -2:
		return nil, fmt.Errorf("kernels: GuardMapping: [%#x, %#x) overlaps a registered mapping", start, start+uintptr(len(b)))
	}
	return &MapGuard{slot: slot}, nil
}

// slotDamaged and releaseSlot are called with guardMu held.
func slotDamaged(slot int) bool { return C.agl_mapguard_damaged(C.int(slot)) != 0 }

func releaseSlot(slot int) bool { return C.agl_mapguard_unregister(C.int(slot)) != 0 }

// sumBytesC adds the bytes of b in C code, as a kernel reading weights
// would (test support).
func sumBytesC(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(C.agl_mapguard_sum((*C.uchar)(unsafe.Pointer(&b[0])), C.size_t(len(b))))
}

// guardTestHook changes the guard for a test, in child processes only (see
// agl_mapguard_test_hook): 0 chain to SIG_DFL, 1 to SIG_IGN, 2 to a plain
// handler that exits 3; 3 make repairs of faults off a page boundary fail.
func guardTestHook(mode int) { C.agl_mapguard_test_hook(C.int(mode)) }

// The Go and C table sizes agree (a negative constant does not convert to
// uint, so a mismatch does not compile).
const _ = uint(mapGuardSlots-C.AGL_MAPGUARD_SLOTS) + uint(C.AGL_MAPGUARD_SLOTS-mapGuardSlots)
