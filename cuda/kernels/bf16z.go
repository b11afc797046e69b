package kernels

/*
#include "par.h"
#include "bf16z.h"
*/
import "C"

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"unsafe"
)

// BF16Z is a bf16 matrix W[N][K] compressed losslessly: every value is
// kept bit for bit, in 12 bits and a few escapes instead of 16, so that a
// memory-bound product (batch-1 decode) reads three quarters of the bytes.
// MatMulBF16Z gives the bits MatMulBF16 gives on the same values.
//
// Each value's low byte (the exponent's last bit and the mantissa) is
// stored as is; its high byte (sign and the exponent's upper 7 bits) as a
// 4-bit code, the index of that byte in Table, which holds
// the matrix's 15 most frequent high bytes. Code 15 is an escape: the byte
// is the row's next one in Esc (row r's escapes are Esc[EscOff[r]:
// EscOff[r+1]]). Weights cluster within a few octaves of their scale, so
// escapes are rare: a few in 10,000 values of normally distributed
// weights. Rows are padded to a multiple of 64 values (KP), and each group
// of 64 is 96 bytes of Data, 32 of codes and 64 of low bytes, in the
// order the kernels unpack them (see bf16z.h), so that a row is one stream
// of memory as a bf16 row is. The
// arrays are plain bytes so that a packed checkpoint can hold them and a
// model can compute from a mapping of it (read-only; the kernels never
// write them).
type BF16Z struct {
	N, K   int
	Table  [16]uint8
	Data   []uint8  // N·KP·3/2: codes and low bytes, a row after another
	Esc    []uint8  // EscOff[N] bytes
	EscOff []uint32 // N+1, EscOff[0] = 0, non-decreasing
}

// BF16ZEscape is the code of an escape.
const BF16ZEscape = C.AGL_BF16Z_ESC

// KP is K rounded up to whole groups of 64.
func (z *BF16Z) KP() int {
	return (z.K + C.AGL_BF16Z_GROUP - 1) / C.AGL_BF16Z_GROUP * C.AGL_BF16Z_GROUP
}

// Bytes is the memory the matrix holds.
func (z *BF16Z) Bytes() int64 {
	return int64(len(z.Data)) + int64(len(z.Esc)) + 4*int64(len(z.EscOff)) + int64(len(z.Table))
}

// ErrBF16Z is wrapped by Check's and Validate's errors.
var ErrBF16Z = errors.New("kernels: bad compressed bf16 matrix")

// Check checks the arrays' sizes and the escape offsets (O(N)): what the
// kernels need to read no byte outside the arrays. Data from a file
// (a packed checkpoint) is checked before it is used; Validate also
// checks that each row has as many escapes as its codes say.
func (z *BF16Z) Check() error {
	kp := z.KP()
	switch {
	case z.N < 0 || z.K < 0:
		return fmt.Errorf("%w: shape %d×%d", ErrBF16Z, z.N, z.K)
	case len(z.Data) != z.N*kp*3/2:
		return fmt.Errorf("%w: %d data bytes for %d rows of %d (padded to %d): want %d",
			ErrBF16Z, len(z.Data), z.N, z.K, kp, z.N*kp*3/2)
	case len(z.EscOff) != z.N+1:
		return fmt.Errorf("%w: %d escape offsets for %d rows, want %d", ErrBF16Z, len(z.EscOff), z.N, z.N+1)
	case z.Table[BF16ZEscape] != 0:
		// An escape past the row's escape bytes decodes as this entry in
		// the kernels and as 0 in the scalar decoder: both 0.
		return fmt.Errorf("%w: table entry %d (the escape code's) is %#x, not 0", ErrBF16Z, BF16ZEscape, z.Table[BF16ZEscape])
	case z.EscOff[0] != 0:
		return fmt.Errorf("%w: escape offsets start at %d, not 0", ErrBF16Z, z.EscOff[0])
	case int64(z.EscOff[z.N]) != int64(len(z.Esc)):
		return fmt.Errorf("%w: escape offsets end at %d, the escapes are %d bytes", ErrBF16Z, z.EscOff[z.N], len(z.Esc))
	}
	for r := range z.N {
		if z.EscOff[r+1] < z.EscOff[r] {
			return fmt.Errorf("%w: escape offsets decrease at row %d (%d after %d)", ErrBF16Z, r, z.EscOff[r+1], z.EscOff[r])
		}
	}
	return nil
}

// Validate is Check and then a pass over every code: each row's escape
// count must be its share of Esc.
func (z *BF16Z) Validate() error {
	if err := z.Check(); err != nil {
		return err
	}
	if z.N == 0 {
		return nil
	}
	c, pin := z.pinned()
	defer pin.Unpin()
	if r := int(C.agl_bf16z_bad_row(&c, C.int64_t(z.N))); r >= 0 {
		return fmt.Errorf("%w: row %d has %d escape bytes, its codes name another count", ErrBF16Z, r, z.EscOff[r+1]-z.EscOff[r])
	}
	return nil
}

func u8ptr(s []uint8) *C.uint8_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&s[0]))
}

// bf16zDecoded holds decoded rows for MatMulBF16Z's paths that decode.
var bf16zDecoded sync.Pool

// pinned is z as the kernels' struct, its arrays pinned (a C struct passed
// to C may hold Go pointers only to pinned memory; a mapping's are not Go
// memory, and pinning them does nothing) until the caller unpins. The
// table is copied into the struct, so it points into no Go struct.
func (z *BF16Z) pinned() (C.agl_bf16z, *runtime.Pinner) {
	pin := new(runtime.Pinner)
	for _, b := range [][]uint8{z.Data, z.Esc} {
		if len(b) > 0 {
			pin.Pin(&b[0])
		}
	}
	pin.Pin(&z.EscOff[0])
	c := C.agl_bf16z{data: u8ptr(z.Data), esc: u8ptr(z.Esc), eoff: (*C.uint32_t)(unsafe.Pointer(&z.EscOff[0])), k: C.int64_t(z.K)}
	for i, b := range z.Table {
		c.table[i] = C.uint8_t(b)
	}
	return c, pin
}

// CompressBF16 compresses w (owned or parted) on the CPU's threads.
func (c *CPU) CompressBF16(w *BF16) *BF16Z {
	z := &BF16Z{N: w.N, K: w.K, EscOff: make([]uint32, w.N+1)}
	kp := z.KP()
	z.Data = make([]uint8, w.N*kp*3/2)
	if w.N == 0 || w.K == 0 {
		return z
	}
	blocks := w.blocks()
	// The table: the 15 most frequent high bytes (ties to the smaller).
	hist := make([]uint64, 256*c.threads)
	var total [256]uint64
	for _, b := range blocks {
		clear(hist)
		rows := len(b.data) / w.K
		helpers, chunk := c.chunks(rows)
		C.agl_par_bf16z_hist(c.pool, helpers, chunk, u16ptr(b.data), C.int64_t(rows), C.int64_t(w.K),
			(*C.uint64_t)(unsafe.Pointer(&hist[0])))
		for i, h := range hist {
			total[i%256] += h
		}
	}
	order := make([]int, 256)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(total[b], total[a]) })
	var inv [256]uint8
	for i := range inv {
		inv[i] = BF16ZEscape
	}
	for code, hb := range order[:BF16ZEscape] {
		if total[hb] == 0 {
			break
		}
		z.Table[code], inv[hb] = uint8(hb), uint8(code)
	}
	// Count each row's escapes, lay them out, then encode.
	cnt := make([]uint32, w.N)
	for _, b := range blocks {
		rows := len(b.data) / w.K
		helpers, chunk := c.chunks(rows)
		C.agl_par_bf16z_count(c.pool, helpers, chunk, C.int(c.level), u16ptr(b.data), C.int64_t(rows), C.int64_t(w.K),
			(*C.uint8_t)(unsafe.Pointer(&inv[0])), (*C.uint32_t)(unsafe.Pointer(&cnt[b.row0])))
	}
	for r, n := range cnt {
		z.EscOff[r+1] = z.EscOff[r] + n
	}
	z.Esc = make([]uint8, z.EscOff[w.N])
	for _, b := range blocks {
		rows := len(b.data) / w.K
		helpers, chunk := c.chunks(rows)
		// Each chunk's first row's offset is in place; encode writes the rest.
		C.agl_par_bf16z_encode(c.pool, helpers, chunk, C.int(c.level), u16ptr(b.data), C.int64_t(rows), C.int64_t(w.K),
			(*C.uint8_t)(unsafe.Pointer(&inv[0])), u8ptr(z.Data), u8ptr(z.Esc),
			(*C.uint32_t)(unsafe.Pointer(&z.EscOff[0])), C.int64_t(b.row0))
	}
	runtime.KeepAlive(c)
	return z
}

// blocks is w's rows as contiguous blocks: the parts, or Data.
func (w *BF16) blocks() []bf16Part {
	if w.parts != nil {
		return w.parts
	}
	return []bf16Part{{data: w.Data}}
}

// DecodeBF16Z writes rows [r0, r1) of z as bf16 rows into dst ((r1−r0)·K
// values), on the CPU's threads. z must pass Check, as for MatMulBF16Z.
func (c *CPU) DecodeBF16Z(dst []uint16, z *BF16Z, r0, r1 int) {
	if r0 < 0 || r1 > z.N || r0 > r1 || len(dst) != (r1-r0)*z.K {
		panic(fmt.Sprintf("kernels: DecodeBF16Z: rows [%d, %d) of %d into %d values for K=%d", r0, r1, z.N, len(dst), z.K))
	}
	if r0 == r1 || z.K == 0 {
		return
	}
	zc, pin := z.pinned()
	defer pin.Unpin()
	helpers, chunk := c.chunks(r1 - r0)
	C.agl_par_bf16z_decode(c.pool, helpers, chunk, C.int(c.level), &zc, C.int64_t(r0), C.int64_t(r1), u16ptr(dst))
	runtime.KeepAlive(z)
	runtime.KeepAlive(c)
}

// RowFloat32 widens row i into dst (len K): an embedding lookup.
func (z *BF16Z) RowFloat32(dst []float32, i int) {
	if len(dst) != z.K || i < 0 || i >= z.N {
		panic(fmt.Sprintf("kernels: BF16Z.RowFloat32: row %d of %d into %d values for K=%d", i, z.N, len(dst), z.K))
	}
	if z.K == 0 {
		return
	}
	row := make([]uint16, z.K)
	zc, pin := z.pinned()
	C.agl_bf16z_decode(C.int(Detect()), &zc, C.int64_t(i), C.int64_t(i+1), u16ptr(row))
	pin.Unpin()
	FromBF16(dst, row)
}

// MatMulBF16Z computes y[t][n] = Σ_k bf16(x[t][k])·W[n][k] + bias[n] with
// W compressed: the bits of MatMulBF16 on the decoded matrix, at every
// level, batch and thread count. At AVX512BF16 with up to 8 tokens (decode)
// the weights are decoded in registers as they stream by; otherwise rows
// are decoded into small per-thread buffers and the bf16 kernels run on
// them. z must pass Check (CompressBF16's output does; check data from
// elsewhere first): the kernels trust its escape offsets.
func (c *CPU) MatMulBF16Z(y, x []float32, t int, z *BF16Z, bias []float32) {
	kp := z.KP()
	if len(x) < t*z.K || len(y) < t*z.N || (bias != nil && len(bias) != z.N) || len(z.Data) != z.N*kp*3/2 ||
		len(z.EscOff) != z.N+1 {
		panic(fmt.Sprintf("kernels: MatMulBF16Z: x %d, y %d, bias %d, %d data bytes, %d escape offsets for t=%d N=%d K=%d",
			len(x), len(y), len(bias), len(z.Data), len(z.EscOff), t, z.N, z.K))
	}
	if t == 0 || z.N == 0 {
		return
	}
	if z.K == 0 {
		// No products: each output is its bias (the bf16 kernels' tree of
		// zero lanes is 0).
		for j := range t {
			for r := range z.N {
				y[j*z.N+r] = 0
				if bias != nil {
					y[j*z.N+r] = bias[r]
				}
			}
		}
		return
	}
	zc, pin := z.pinned()
	defer pin.Unpin()
	if c.level >= AVX512BF16 && t >= bf16ManyTokens {
		xp, pk, pw, done := c.manyScratch(x, t, z.K)
		defer done()
		rw := int(C.agl_bf16_panel_rows()) * z.K
		dec := pooledU16(&bf16zDecoded, c.threads*rw)
		defer bf16zDecoded.Put(&dec)
		items := c.manyItems(z.N)
		helpers, _ := c.chunks(items) // items are taken one at a time
		C.agl_par_gemm_bf16z_many(c.pool, helpers, u32ptr(*xp), C.int64_t(t), &zc, C.int64_t(z.N), fptr(bias), fptr(y),
			C.int64_t(items), u32ptr(*pk), C.int64_t(pw), u16ptr(dec), C.int64_t(rw))
		runtime.KeepAlive(c)
		return
	}
	ldx := (z.K + 31) / 32 * 32
	xb, done := roundActs(x, t, z.K, ldx)
	defer done()
	var scratch []uint16
	if c.level < AVX512BF16 || t > 8 {
		scratch = pooledU16(&bf16zDecoded, c.threads*C.AGL_BF16Z_SCRATCH_ROWS*z.K)
		defer bf16zDecoded.Put(&scratch)
	}
	helpers, chunk := c.chunks((z.N + bf16Rows - 1) / bf16Rows)
	C.agl_par_gemm_bf16z(c.pool, helpers, chunk, C.int(c.level), u16ptr(xb), C.int64_t(t), C.int64_t(ldx), &zc,
		C.int64_t(z.N), fptr(bias), fptr(y), u16ptr(scratch))
	runtime.KeepAlive(c)
}
