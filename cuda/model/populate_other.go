//go:build !linux

package model

import "unsafe"

// populate is not available: pages are mapped by use.
func populate(p unsafe.Pointer, off, n uintptr) bool { return false }

// populateRange does nothing: pages are mapped by use.
func populateRange(p unsafe.Pointer, off, n uintptr) {}

// populateRead does nothing: pages are mapped by use.
func populateRead(b []byte) error { return nil }

// releasePages does nothing: the pages stay mapped until the mapping goes.
func releasePages(b []byte) {}
