package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"syscall"
)

// DType is a safetensors element type name as it appears in the header.
type DType string

// The element types this package understands. Other dtypes are accepted in
// a header (their sizes are known) but cannot be converted to float32.
const (
	F32  DType = "F32"
	F16  DType = "F16"
	BF16 DType = "BF16"
	F64  DType = "F64"
	I64  DType = "I64"
	I32  DType = "I32"
	I16  DType = "I16"
	I8   DType = "I8"
	U8   DType = "U8"
	BOOL DType = "BOOL"
)

// Size returns the size in bytes of one element, or 0 for an unknown dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64, "U64":
		return 8
	case F32, I32, "U32":
		return 4
	case F16, BF16, I16, "U16":
		return 2
	case I8, U8, BOOL, "F8_E4M3", "F8_E5M2":
		return 1
	}
	return 0
}

// ErrFormat is wrapped by every error about a malformed file or header.
var ErrFormat = errors.New("safetensors: malformed file")

// ErrNotFound is returned when a tensor name is not in the file.
var ErrNotFound = errors.New("safetensors: tensor not found")

// maxHeaderLen bounds the JSON header so a corrupt length cannot make us
// allocate or parse gigabytes (the reference implementation uses 100 MB).
const maxHeaderLen = 100 << 20

// Info describes one tensor in a file.
type Info struct {
	Name  string
	DType DType
	Shape []int64
	// Begin and End are byte offsets relative to the start of the data
	// section (the byte after the header).
	Begin, End int64
}

// NumElements is the product of the shape (1 for a scalar).
func (i Info) NumElements() int64 {
	n := int64(1)
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// Header is a parsed and validated safetensors header.
type Header struct {
	Tensors  []Info // sorted by Begin
	Metadata map[string]string
	byName   map[string]int
}

// Lookup returns the tensor called name.
func (h *Header) Lookup(name string) (Info, bool) {
	i, ok := h.byName[name]
	if !ok {
		return Info{}, false
	}
	return h.Tensors[i], true
}

type rawEntry struct {
	DType       string  `json:"dtype"`
	Shape       []int64 `json:"shape"`
	DataOffsets []int64 `json:"data_offsets"`
}

// ParseHeader parses the first bytes of a safetensors file: the 8-byte
// length and the JSON header. dataLen is the size of the data section that
// follows the header (file size − 8 − header length); every tensor's range
// is checked against it. It returns the header and the offset at which the
// data section starts.
func ParseHeader(prefix []byte, fileSize int64) (*Header, int64, error) {
	if len(prefix) < 8 || fileSize < 8 {
		return nil, 0, fmt.Errorf("%w: file is %d bytes, shorter than the 8-byte header length", ErrFormat, fileSize)
	}
	n := binary.LittleEndian.Uint64(prefix[:8])
	if n > maxHeaderLen {
		return nil, 0, fmt.Errorf("%w: header length %d exceeds the %d-byte limit", ErrFormat, n, maxHeaderLen)
	}
	if int64(n) > fileSize-8 {
		return nil, 0, fmt.Errorf("%w: header length %d but only %d bytes follow it (truncated file?)", ErrFormat, n, fileSize-8)
	}
	if int64(len(prefix)) < 8+int64(n) {
		return nil, 0, fmt.Errorf("%w: header length %d but only %d header bytes given", ErrFormat, n, len(prefix)-8)
	}
	js := prefix[8 : 8+n]
	if len(js) == 0 || js[0] != '{' {
		return nil, 0, fmt.Errorf("%w: header does not start with '{'", ErrFormat)
	}
	dataStart := 8 + int64(n)
	h, err := parseJSONHeader(js, fileSize-dataStart)
	if err != nil {
		return nil, 0, err
	}
	return h, dataStart, nil
}

func parseJSONHeader(js []byte, dataLen int64) (*Header, error) {
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(js))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%w: header JSON: %v", ErrFormat, err)
	}
	// Trailing spaces are the format's padding; anything else is corruption.
	if rest := bytes.TrimRight(js[dec.InputOffset():], " "); len(rest) != 0 {
		return nil, fmt.Errorf("%w: unexpected bytes after the header JSON object", ErrFormat)
	}
	h := &Header{byName: make(map[string]int, len(raw))}
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &h.Metadata); err != nil {
				return nil, fmt.Errorf("%w: __metadata__ must map strings to strings: %v", ErrFormat, err)
			}
			continue
		}
		var e rawEntry
		dec := json.NewDecoder(bytes.NewReader(msg))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("%w: tensor %q: %v", ErrFormat, name, err)
		}
		info, err := checkEntry(name, e, dataLen)
		if err != nil {
			return nil, err
		}
		h.Tensors = append(h.Tensors, info)
	}
	sort.Slice(h.Tensors, func(i, j int) bool {
		a, b := h.Tensors[i], h.Tensors[j]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.Name < b.Name
	})
	for i, t := range h.Tensors {
		if i > 0 {
			prev := h.Tensors[i-1]
			if t.Begin < prev.End {
				return nil, fmt.Errorf("%w: tensor %q bytes [%d,%d) overlap tensor %q bytes [%d,%d)",
					ErrFormat, t.Name, t.Begin, t.End, prev.Name, prev.Begin, prev.End)
			}
		}
		h.byName[t.Name] = i
	}
	return h, nil
}

func checkEntry(name string, e rawEntry, dataLen int64) (Info, error) {
	dt := DType(e.DType)
	size := dt.Size()
	if size == 0 {
		return Info{}, fmt.Errorf("%w: tensor %q: unknown dtype %q", ErrFormat, name, e.DType)
	}
	if len(e.DataOffsets) != 2 {
		return Info{}, fmt.Errorf("%w: tensor %q: data_offsets must have 2 entries, has %d", ErrFormat, name, len(e.DataOffsets))
	}
	if e.Shape == nil {
		return Info{}, fmt.Errorf("%w: tensor %q: missing shape", ErrFormat, name)
	}
	begin, end := e.DataOffsets[0], e.DataOffsets[1]
	if begin < 0 || end < begin {
		return Info{}, fmt.Errorf("%w: tensor %q: invalid data_offsets [%d,%d]", ErrFormat, name, begin, end)
	}
	if end > dataLen {
		return Info{}, fmt.Errorf("%w: tensor %q: data_offsets end %d beyond the %d-byte data section (truncated file?)", ErrFormat, name, end, dataLen)
	}
	elems := int64(1)
	for i, d := range e.Shape {
		if d < 0 {
			return Info{}, fmt.Errorf("%w: tensor %q: negative dimension %d at index %d", ErrFormat, name, d, i)
		}
		if d != 0 && elems > math.MaxInt64/d/int64(size) {
			return Info{}, fmt.Errorf("%w: tensor %q: shape %v overflows", ErrFormat, name, e.Shape)
		}
		elems *= d
	}
	if want := elems * int64(size); end-begin != want {
		return Info{}, fmt.Errorf("%w: tensor %q: %s%v needs %d bytes but data_offsets span %d", ErrFormat, name, dt, e.Shape, want, end-begin)
	}
	return Info{Name: name, DType: dt, Shape: e.Shape, Begin: begin, End: end}, nil
}

// File is an open, memory-mapped safetensors file. Its methods are safe for
// concurrent use until Close.
type File struct {
	Header
	path string
	mm   []byte // whole file mapping
	data []byte // data section
}

// Open memory-maps path and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	defer fd.Close()
	st, err := fd.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	size := st.Size()
	if size < 8 {
		return nil, fmt.Errorf("%w: %s: file is %d bytes, shorter than the 8-byte header length", ErrFormat, path, size)
	}
	if size > math.MaxInt {
		return nil, fmt.Errorf("%w: %s: file too large to map", ErrFormat, path)
	}
	mm, err := syscall.Mmap(int(fd.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("safetensors: mmap %s: %w", path, err)
	}
	h, dataStart, err := ParseHeader(mm, size)
	if err != nil {
		_ = syscall.Munmap(mm)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &File{Header: *h, path: path, mm: mm, data: mm[dataStart:]}, nil
}

// Close unmaps the file. Slices returned by Bytes become invalid.
func (f *File) Close() error {
	if f.mm == nil {
		return nil
	}
	err := syscall.Munmap(f.mm)
	f.mm, f.data = nil, nil
	return err
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// Bytes returns the raw little-endian bytes of a tensor, aliasing the
// mapping (valid until Close).
func (f *File) Bytes(name string) (Info, []byte, error) {
	info, ok := f.Lookup(name)
	if !ok {
		return Info{}, nil, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.path)
	}
	if f.data == nil {
		return Info{}, nil, fmt.Errorf("safetensors: %s is closed", f.path)
	}
	return info, f.data[info.Begin:info.End], nil
}

// Float32 returns a tensor converted to a new float32 slice. F32, F16 and
// BF16 are supported.
func (f *File) Float32(name string) ([]float32, Info, error) {
	info, b, err := f.Bytes(name)
	if err != nil {
		return nil, info, err
	}
	out := make([]float32, info.NumElements())
	if err := ToFloat32(out, info.DType, b); err != nil {
		return nil, info, fmt.Errorf("tensor %q in %s: %w", name, f.path, err)
	}
	return out, info, nil
}

// Int32 returns an I32 tensor as a new int32 slice (token ids, lengths).
func (f *File) Int32(name string) ([]int32, Info, error) {
	info, b, err := f.Bytes(name)
	if err != nil {
		return nil, info, err
	}
	if info.DType != I32 {
		return nil, info, fmt.Errorf("safetensors: tensor %q in %s is %s, not I32", name, f.path, info.DType)
	}
	out := make([]int32, info.NumElements())
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, info, nil
}

// ToFloat32 converts little-endian elements of dtype dt in src to dst.
// len(dst) must equal the number of elements in src.
func ToFloat32(dst []float32, dt DType, src []byte) error {
	size := dt.Size()
	if size == 0 || len(src) != len(dst)*size {
		return fmt.Errorf("safetensors: %d bytes of %s do not hold %d elements", len(src), dt, len(dst))
	}
	switch dt {
	case F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case BF16:
		for i := range dst {
			dst[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(src[2*i:])) << 16)
		}
	case F16:
		for i := range dst {
			dst[i] = HalfToFloat32(binary.LittleEndian.Uint16(src[2*i:]))
		}
	default:
		return fmt.Errorf("safetensors: cannot convert %s to float32", dt)
	}
	return nil
}

// HalfToFloat32 converts an IEEE 754 binary16 value to float32 exactly
// (every half value, including subnormals, infinities and NaN payloads, is
// representable in float32).
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f: // inf or NaN: keep the payload
		return math.Float32frombits(sign | 0xff<<23 | mant<<13)
	case exp != 0: // normal: rebias 15 → 127
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal half: value = mant × 2^-24, exactly representable.
	v := float32(mant) * (1.0 / (1 << 24))
	if sign != 0 {
		v = -v
	}
	return v
}
