//go:build linux

package kernels

import (
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// partsReadOnlyMem returns vals copied into memory outside the Go heap:
// an anonymous mapping made read-only once filled, the values ending
// exactly where an inaccessible guard page begins. A write through the
// returned slice, or a read past its end, faults.
func partsReadOnlyMem(t *testing.T, vals []uint16) []uint16 {
	t.Helper()
	page := syscall.Getpagesize()
	size := 2*len(vals) + page - 1
	size -= size % page
	m, err := syscall.Mmap(-1, 0, size+page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, syscall.Munmap(m)) })
	require.NoError(t, syscall.Mprotect(m[size:], syscall.PROT_NONE))
	at := size - 2*len(vals)
	out := unsafe.Slice((*uint16)(unsafe.Pointer(&m[at])), len(vals))
	copy(out, vals)
	require.NoError(t, syscall.Mprotect(m[:size], syscall.PROT_READ))
	return out
}

// faultsOnAccess reports whether f faults (a bad memory access, turned into a
// panic for the test).
func faultsOnAccess(f func()) (faulted bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { faulted = recover() != nil }()
	f()
	return false
}

// partsSink keeps the test's reads from being optimized away.
var partsSink uint16

// TestPartsReadOnlyMem checks the premise of the test below: the memory
// is readable, not writable, and ends at a guard.
func TestPartsReadOnlyMem(t *testing.T) {
	s := partsReadOnlyMem(t, []uint16{1, 2, 3})
	require.Equal(t, []uint16{1, 2, 3}, s)
	require.True(t, faultsOnAccess(func() { s[0] = 9 }), "write")
	past := unsafe.Slice(&s[0], 4)
	require.True(t, faultsOnAccess(func() { partsSink = past[3] }), "read past the end")
	require.False(t, faultsOnAccess(func() { partsSink = s[2] }), "read")
}

// TestBF16PartsReadOnlyMapping serves parted matrices from read-only
// mappings, as the engine does from a checkpoint: every kernel path must
// only read the parts, and never past a part's last row (the next page
// is a guard), with the bits of the contiguous matrix.
func TestBF16PartsReadOnlyMapping(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, sz := range []struct {
		k    int
		rows []int
	}{
		{100, []int{64, 32, 32}}, // q|k|v-like, a partial last chunk per row
		{1024, []int{8, 3, 5}},   // whole chunks
		{40, []int{81, 1, 97}},   // around a panel of the many-token path
	} {
		n := 0
		for _, rr := range sz.rows {
			n += rr
		}
		t.Run(fmt.Sprintf("k%d_rows%v", sz.k, sz.rows), func(t *testing.T) {
			whole := &BF16{N: n, K: sz.k, Data: randBF16(r, n*sz.k)}
			var parts [][]uint16
			for _, p := range splitPartRows(whole.Data, sz.k, sz.rows) {
				parts = append(parts, partsReadOnlyMem(t, p))
			}
			parted := NewBF16Parts(sz.k, parts...)
			checkPartedReads(t, whole, parted)
			checkPartedMatMul(t, r, whole, parted)
			parted.Own()
			require.Equal(t, whole.Data, parted.Data)
			parted.Data[1] = 7 // the owned copy is writable
		})
	}
}
