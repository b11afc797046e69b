//go:build linux

package model

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// pagesAt returns the whole 4 KiB pages inside bytes [off, off+n) of the
// memory at p (nil if there are none), as bytes. (Rounded as addresses:
// a range inside one page has no whole page, even when the page starts
// before p.)
func pagesAt(p unsafe.Pointer, off, n uintptr) []byte {
	const page = 4096
	addr := uintptr(p)
	lo := (addr + off + page - 1) &^ (page - 1)
	hi := (addr + off + n) &^ (page - 1)
	if p == nil || hi <= lo {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Add(p, lo-addr)), hi-lo)
}

// populate asks the kernel to map the whole pages inside bytes [off,
// off+n) of the writable memory at p without touching their contents
// (MADV_POPULATE_WRITE, Linux 5.14+). It reports false when the kernel
// cannot.
func populate(p unsafe.Pointer, off, n uintptr) bool {
	b := pagesAt(p, off, n)
	return b == nil || unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil
}

// populateRange is populate for bytes [off, off+n) of the memory at p.
func populateRange(p unsafe.Pointer, off, n uintptr) {
	if b := pagesAt(p, off, n); b != nil {
		_ = unix.Madvise(b, unix.MADV_POPULATE_WRITE)
	}
}

// populateRead maps the whole pages of b, a read-only file mapping, in
// one call (MADV_POPULATE_READ, Linux 5.14+), as llama.cpp's MAP_POPULATE
// does, so the first forward pass takes no page faults. A page past the
// end of a file that shrank is an error (the kernel reports EFAULT where
// an access would raise SIGBUS). A kernel without the call leaves the
// pages to be mapped by use.
func populateRead(b []byte) error {
	b = pagesAt(unsafe.Pointer(unsafe.SliceData(b)), 0, uintptr(len(b)))
	if b == nil {
		return nil
	}
	switch err := unix.Madvise(b, unix.MADV_POPULATE_READ); err {
	case nil, unix.EINVAL:
		return nil
	default:
		return err
	}
}

// releasePages drops the whole pages of b, part of a read-only file
// mapping, from the process's memory (MADV_DONTNEED): the page cache
// keeps them, and a later read maps them again. For bytes read once, so
// that they do not stay in the process's resident set beside what was
// made of them.
func releasePages(b []byte) {
	if p := pagesAt(unsafe.Pointer(unsafe.SliceData(b)), 0, uintptr(len(b))); p != nil {
		_ = unix.Madvise(p, unix.MADV_DONTNEED)
	}
}
