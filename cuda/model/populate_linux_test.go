//go:build linux

package model

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// resident counts the pages of a that are in memory.
func resident(t *testing.T, a []float32) (in, all int) {
	b := pages(a, 0, uintptr(len(a))*4)
	vec := make([]byte, len(b)/4096)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	require.Zero(t, errno)
	for _, v := range vec {
		if v&1 == 1 {
			in++
		}
	}
	return in, len(vec)
}

// TestPopulate: Populate maps every page of a fresh host cache, in the
// steps asked for, and leaves what the cache holds alone.
func TestPopulate(t *testing.T) {
	cfg := tinyConfig()
	cfg.NumHiddenLayers = 2
	m, err := New(cfg, nil)
	require.NoError(t, err)
	kv := m.NewKVCache(4096, 16) // 4096·16 slots × 2 heads of 8: 4 MiB per layer for K and for V
	// The heap may hand out memory that is already mapped: unmap it (a new
	// cache is all zeros, which is what unmapped pages read as).
	for _, a := range append(append([][]float32{}, kv.K...), kv.V...) {
		require.NoError(t, unix.Madvise(pages(a, 0, uintptr(len(a))*4), unix.MADV_DONTNEED))
	}
	in, all := resident(t, kv.K[1])
	require.Less(t, in, all/2, "unmapped")
	kv.K[0][12345], kv.V[1][len(kv.V[1])-1] = 1.5, -2.5

	const step = 1 << 20
	total := 0
	for _, a := range append(append([][]float32{}, kv.K...), kv.V...) {
		total += len(a) * 4
	}
	calls := 0
	for !kv.Populate(step) {
		calls++
		require.Less(t, calls, total/step+2, "Populate never finishes")
	}
	require.GreaterOrEqual(t, calls, total/step-1, "Populate did more than asked per call")
	for _, a := range append(append([][]float32{}, kv.K...), kv.V...) {
		in, all := resident(t, a)
		require.Equal(t, all, in)
	}
	require.Equal(t, float32(1.5), kv.K[0][12345])
	require.Equal(t, float32(-2.5), kv.V[1][len(kv.V[1])-1])
	require.Equal(t, float32(0), kv.K[1][777])
	require.True(t, kv.Populate(step), "done stays done")
}

// TestPagesAt: only whole pages inside the range, rounded as addresses; a
// range inside one page, or empty, has none.
func TestPagesAt(t *testing.T) {
	buf := make([]byte, 5*4096)
	base := unsafe.Pointer(unsafe.SliceData(buf))
	addr := uintptr(base)
	first := (addr+4095)&^4095 - addr // offset of the first page boundary
	p := unsafe.Add(base, first+100)  // 100 bytes into a page
	require.Nil(t, pagesAt(p, 0, 200))
	require.Nil(t, pagesAt(p, 0, 0))
	require.Nil(t, pagesAt(nil, 0, 8192))
	require.Nil(t, pagesAt(p, 0, 4096)) // crosses a boundary but holds no whole page
	b := pagesAt(p, 0, 2*4096)
	require.Len(t, b, 4096)
	require.Equal(t, addr+first+4096, uintptr(unsafe.Pointer(&b[0])))
	b = pagesAt(base, first, 3*4096)
	require.Len(t, b, 3*4096)
	require.Equal(t, addr+first, uintptr(unsafe.Pointer(&b[0])))
	buf[first+4096+7] = 42
	populateRange(p, 0, 2*4096) // maps, changes nothing
	require.Equal(t, byte(42), buf[first+4096+7])
	populateRange(p, 0, 10)
	populateRange(nil, 0, 10)
}
