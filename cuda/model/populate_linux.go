//go:build linux

package model

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pages returns the whole 4 KiB pages inside bytes [off, off+n) of a (nil
// if there are none), as bytes.
func pages(a []float32, off, n uintptr) []byte {
	const page = 4096
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), len(a)*4)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (addr+off+page-1)&^(page-1) - addr
	hi := (addr+off+n)&^(page-1) - addr
	if hi <= lo {
		return nil
	}
	return b[lo:hi]
}

// populate asks the kernel to map the whole pages inside bytes [off,
// off+n) of a writable without touching their contents
// (MADV_POPULATE_WRITE, Linux 5.14+). It reports false when the kernel
// cannot.
func populate(a []float32, off, n uintptr) bool {
	b := pages(a, off, n)
	return b == nil || unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}
