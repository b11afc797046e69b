//go:build !linux

package capture

import "os"

// datasync makes f durable; elsewhere than Linux, with fsync.
func datasync(f *os.File) error { return f.Sync() }
