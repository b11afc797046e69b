package capture

import (
	"os"
	"syscall"
)

// datasync makes f's data durable, and the metadata needed to read it
// back (its size), but not its times: fdatasync(2). On a preallocated
// log, where a record overwrites zero padding and the size does not
// change, it flushes the data without a journal commit.
func datasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			if err != nil {
				return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: err}
			}
			return nil
		}
	}
}
