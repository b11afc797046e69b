//go:build !linux

package cputime

import "time"

// Thread is not measured on this platform: it is always 0, and PerCall
// returns 0, which its callers take as "cannot measure".
func Thread() time.Duration { return 0 }
