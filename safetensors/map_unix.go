//go:build unix

package safetensors

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// mapRead maps the first n bytes of fd read-only and shared.
func mapRead(fd *os.File, n int) ([]byte, error) {
	return unix.Mmap(int(fd.Fd()), 0, n, unix.PROT_READ, unix.MAP_SHARED)
}

func unmap(b []byte) error { return unix.Munmap(b) }

// dupFile is a second descriptor of f's open file (close-on-exec), which
// stays valid after f is closed.
func dupFile(f *os.File) (*os.File, error) {
	// ForkLock keeps a concurrent fork+exec from inheriting the
	// descriptor before it is marked (not every unix has F_DUPFD_CLOEXEC).
	syscall.ForkLock.RLock()
	fd, err := unix.Dup(int(f.Fd()))
	if err == nil {
		unix.CloseOnExec(fd)
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, fmt.Errorf("duplicating the descriptor: %w", err)
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// stampOf reads f's fileStamp (fstat: the open file, whatever its path
// now names).
func stampOf(f *os.File) (fileStamp, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return fileStamp{}, fmt.Errorf("fstat: %w", err)
	}
	return fileStamp{
		size:  st.Size,
		mtime: [2]int64{int64(st.Mtim.Sec), int64(st.Mtim.Nsec)},
		ctime: [2]int64{int64(st.Ctim.Sec), int64(st.Ctim.Nsec)},
		links: uint64(st.Nlink),
	}, nil
}
