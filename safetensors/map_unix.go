//go:build unix

package safetensors

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapRead maps the first n bytes of fd read-only and shared.
func mapRead(fd *os.File, n int) ([]byte, error) {
	return unix.Mmap(int(fd.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(b []byte) error { return unix.Munmap(b) }
