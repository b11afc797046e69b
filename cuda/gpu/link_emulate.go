//go:build cuda && cudaemu

package gpu

// #cgo CFLAGS: -O2 -std=c11 -Wall
// #cgo LDFLAGS: -lm
// long agl_gpu_emu_live(void);
// void agl_gpu_emu_fail_after(long n);
import "C"

// EmulatedLiveBuffers is the number of device allocations not yet freed
// (emulation only: the tags `cuda cudaemu`).
func EmulatedLiveBuffers() int { return int(C.agl_gpu_emu_live()) }

// EmulateOutOfMemoryAfter makes every allocation after the next n fail
// with out-of-memory; n < 0 lifts the limit (emulation only).
func EmulateOutOfMemoryAfter(n int) { C.agl_gpu_emu_fail_after(C.long(n)) }
