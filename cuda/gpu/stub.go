//go:build !cuda

package gpu

// Available reports whether the package was built with CUDA support (the
// `cuda` build tag) and a device is present.
func Available() bool { return false }
