//go:build !linux

package kernels

const mapGuardSupported = false

func guardMapping([]byte) (*MapGuard, error) { return nil, ErrMapGuardUnsupported }

func slotDamaged(int) bool { return false }

func releaseSlot(int) bool { return false }
