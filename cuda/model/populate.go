package model

import "unsafe"

// populateCursor is how far Populate has got: array i of the K/V list
// (K[0], V[0], K[1], ...), byte offset off in it.
type populateCursor struct {
	i    int
	off  uintptr
	done bool
}

// Populate maps up to n more bytes of a host cache's memory into the
// process, without changing what it holds, and reports whether the whole
// cache is mapped. A large new slice is backed by pages the OS maps on
// first write; unmapped, the first requests pay those faults inside their
// forward steps (measured here: a quarter of a 512-token prefill's time on
// a fresh cache). The engine calls it in small steps while it is idle. It
// is best effort: where the OS cannot populate ahead of use it reports done
// and the pages are mapped by use. A device cache is always done.
//
// Like Forward, it must not run concurrently with other uses of the cache.
func (kv *KVCache) Populate(n int) bool {
	if kv.Populated() {
		return true
	}
	for n > 0 && kv.pop.i < 2*kv.layers() {
		a, size := kv.array(kv.pop.i)
		if kv.pop.off >= size {
			kv.pop.i, kv.pop.off = kv.pop.i+1, 0
			continue
		}
		step := min(uintptr(n), size-kv.pop.off)
		if !populate(a, kv.pop.off, step) {
			kv.pop.done = true
			return true
		}
		kv.pop.off += step
		n -= int(step)
	}
	kv.pop.done = kv.pop.i >= 2*kv.layers()
	return kv.pop.done
}

// array is the i-th array of K[0], V[0], K[1], ... (KH and VH for a bf16
// cache) and its size in bytes.
func (kv *KVCache) array(i int) (unsafe.Pointer, uintptr) {
	if kv.KH != nil {
		a := kv.KH[i/2]
		if i%2 == 1 {
			a = kv.VH[i/2]
		}
		return unsafe.Pointer(unsafe.SliceData(a)), uintptr(len(a)) * 2
	}
	a := kv.K[i/2]
	if i%2 == 1 {
		a = kv.V[i/2]
	}
	return unsafe.Pointer(unsafe.SliceData(a)), uintptr(len(a)) * 4
}

// Populated reports whether Populate has nothing left to do.
func (kv *KVCache) Populated() bool { return kv.dev != nil || kv.pop.done }
