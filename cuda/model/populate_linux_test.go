//go:build linux

package model

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// cacheBytes is each K and V array of a host cache (K[0], V[0], K[1], ...)
// as bytes, from the cache's own slices.
func cacheBytes(kv *KVCache) [][]byte {
	var out [][]byte
	for l := range kv.layers() {
		if kv.KH != nil {
			for _, a := range [][]uint16{kv.KH[l], kv.VH[l]} {
				out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 2*len(a)))
			}
			continue
		}
		for _, a := range [][]float32{kv.K[l], kv.V[l]} {
			out = append(out, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 4*len(a)))
		}
	}
	return out
}

// resident counts the pages of a that are in memory.
func resident(t *testing.T, a []byte) (in, all int) {
	b := pagesAt(unsafe.Pointer(unsafe.SliceData(a)), 0, uintptr(len(a)))
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

// TestPopulate: Populate maps every page of a fresh host cache, fp32 or
// bf16, in the steps asked for, and leaves what the cache holds alone.
func TestPopulate(t *testing.T) {
	cfg := tinyConfig()
	cfg.NumHiddenLayers = 2
	m, err := New(cfg, nil)
	require.NoError(t, err)
	for _, typ := range []KVType{KVF32, KVBF16} {
		t.Run(string(typ), func(t *testing.T) {
			// 4096·16 slots × 2 heads of 8: 4 MiB (fp32) per layer for K and for V
			kv := cacheOf(t, m, typ, 4096, 16)
			arrays := cacheBytes(kv) // K[0], V[0], K[1], V[1]
			// The heap may hand out memory that is already mapped: unmap it
			// (a new cache is all zeros, which is what unmapped pages read
			// as).
			total := 0
			for _, a := range arrays {
				require.NoError(t, unix.Madvise(pagesAt(unsafe.Pointer(unsafe.SliceData(a)), 0, uintptr(len(a))), unix.MADV_DONTNEED))
				total += len(a)
			}
			in, all := resident(t, arrays[2])
			require.Less(t, in, all/2, "unmapped")
			arrays[0][12345], arrays[3][len(arrays[3])-1] = 7, 9

			const step = 1 << 20
			calls := 0
			for !kv.Populate(step) {
				calls++
				require.Less(t, calls, total/step+2, "Populate never finishes")
			}
			require.GreaterOrEqual(t, calls, total/step-1, "Populate did more than asked per call")
			for i, a := range arrays {
				in, all := resident(t, a)
				require.Equal(t, all, in, "array %d", i)
			}
			require.Equal(t, byte(7), arrays[0][12345])
			require.Equal(t, byte(9), arrays[3][len(arrays[3])-1])
			require.Equal(t, byte(0), arrays[2][777])
			require.True(t, kv.Populate(step), "done stays done")
		})
	}
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

// mappedRss is the resident bytes of the process's mappings over a, from
// /proc/self/smaps (mincore would report the page cache for a file).
func mappedRss(t *testing.T, a []byte) int {
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(a)))
	hi := lo + uintptr(len(a))
	data, err := os.ReadFile("/proc/self/smaps")
	require.NoError(t, err)
	rss, in := 0, false
	for line := range strings.Lines(string(data)) {
		var start, end uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &start, &end); n == 2 {
			in = start < hi && end > lo
			continue
		}
		var kb int
		if n, _ := fmt.Sscanf(line, "Rss: %d kB", &kb); n == 1 && in {
			rss += kb << 10
		}
	}
	return rss
}

// TestReleasePages: the whole pages of a read file mapping leave the
// process's resident set, and read back the same after (from the page
// cache again).
func TestReleasePages(t *testing.T) {
	const size = 8 << 20
	path := filepath.Join(t.TempDir(), "f")
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7 / 5)
	}
	require.NoError(t, os.WriteFile(path, want, 0o644))
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	require.NoError(t, err)
	defer func() { require.NoError(t, unix.Munmap(b)) }()
	sum := 0
	for i := 0; i < size; i += 4096 {
		sum += int(b[i])
	}
	require.Positive(t, sum)
	require.Equal(t, size, mappedRss(t, b))
	releasePages(b[100 : size-100]) // the first and last pages are not whole
	// (The kernel may unmap those two with their neighbours' large folio.)
	require.LessOrEqual(t, mappedRss(t, b), 2*4096)
	require.Equal(t, want, b)
	require.Equal(t, size, mappedRss(t, b))
}
