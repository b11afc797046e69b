package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"sync"
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
	dec := json.NewDecoder(bytes.NewReader(js))
	h := &Header{byName: map[string]int{}}
	err := strictObject(dec, "header", func(name string) error {
		if name == "__metadata__" {
			return decodeMetadata(dec, h)
		}
		var msg json.RawMessage
		if err := dec.Decode(&msg); err != nil {
			return fmt.Errorf("%w: header JSON: tensor %q: %v", ErrFormat, name, err)
		}
		e, err := decodeEntry(name, msg)
		if err != nil {
			return err
		}
		info, err := checkEntry(name, e, dataLen)
		if err != nil {
			return err
		}
		h.Tensors = append(h.Tensors, info)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Trailing spaces are the format's padding; anything else is corruption.
	if rest := bytes.TrimRight(js[dec.InputOffset():], " "); len(rest) != 0 {
		return nil, fmt.Errorf("%w: unexpected bytes after the header JSON object", ErrFormat)
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

// strictObject reads one JSON object from dec, calling value for each key
// with the decoder positioned at that key's value (value must consume it).
// A key that appears twice is an error: encoding/json would silently keep
// the last one, so two readers could disagree on which bytes a tensor is.
func strictObject(dec *json.Decoder, what string, value func(key string) error) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %s JSON: %v", ErrFormat, what, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("%w: %s must be a JSON object", ErrFormat, what)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %s JSON: %v", ErrFormat, what, err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("%w: %s JSON: object key is not a string", ErrFormat, what)
		}
		if seen[key] {
			return fmt.Errorf("%w: %s: duplicate key %q", ErrFormat, what, key)
		}
		seen[key] = true
		if err := value(key); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return fmt.Errorf("%w: %s JSON: %v", ErrFormat, what, err)
	}
	return nil
}

func decodeMetadata(dec *json.Decoder, h *Header) error {
	h.Metadata = map[string]string{}
	return strictObject(dec, "__metadata__", func(key string) error {
		var v string
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("%w: __metadata__ must map strings to strings: key %q: %v", ErrFormat, key, err)
		}
		h.Metadata[key] = v
		return nil
	})
}

func decodeEntry(name string, msg json.RawMessage) (rawEntry, error) {
	var e rawEntry
	dec := json.NewDecoder(bytes.NewReader(msg))
	what := fmt.Sprintf("tensor %q", name)
	err := strictObject(dec, what, func(key string) error {
		var dst any
		switch key {
		case "dtype":
			dst = &e.DType
		case "shape":
			dst = &e.Shape
		case "data_offsets":
			dst = &e.DataOffsets
		default:
			return fmt.Errorf("%w: %s: unknown field %q", ErrFormat, what, key)
		}
		if err := dec.Decode(dst); err != nil {
			return fmt.Errorf("%w: %s: field %q: %v", ErrFormat, what, key, err)
		}
		return nil
	})
	return e, err
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

// File is an open safetensors file with a validated header. Its methods
// are safe for concurrent use until Close.
//
// Tensor bytes are read with pread into memory the caller owns (Set.Map
// is the opt-in exception): a mapping of a file that another process
// truncates raises SIGBUS on the next access, which kills the process when
// the access is in C (the kernels), so a shrunken file must be an error at
// read time instead. Reading straight into the destination costs one copy
// from the page cache, the same as faulting in a mapping, and nothing is
// held twice.
type File struct {
	Header
	path      string
	fd        *os.File
	dataStart int64
	mu        sync.RWMutex // guards fd against Close during a read
}

// Open opens path and reads and validates its header.
func Open(path string) (*File, error) {
	fd, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	h, dataStart, err := readHeader(fd, path)
	if err != nil {
		fd.Close()
		return nil, err
	}
	return &File{Header: *h, path: path, fd: fd, dataStart: dataStart}, nil
}

func readHeader(fd *os.File, path string) (*Header, int64, error) {
	st, err := fd.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("safetensors: %w", err)
	}
	size := st.Size()
	if size < 8 {
		return nil, 0, fmt.Errorf("%w: %s: file is %d bytes, shorter than the 8-byte header length", ErrFormat, path, size)
	}
	var lenb [8]byte
	if _, err := fd.ReadAt(lenb[:], 0); err != nil {
		return nil, 0, fmt.Errorf("%w: %s: reading the header length: %v", ErrFormat, path, err)
	}
	n := binary.LittleEndian.Uint64(lenb[:])
	if n > maxHeaderLen || int64(n) > size-8 {
		// ParseHeader words the error.
		_, _, err := ParseHeader(lenb[:], size)
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	prefix := make([]byte, 8+n)
	if _, err := fd.ReadAt(prefix, 0); err != nil {
		return nil, 0, fmt.Errorf("%w: %s: reading the %d-byte header: %v", ErrFormat, path, n, err)
	}
	h, dataStart, err := ParseHeader(prefix, size)
	if err != nil {
		return nil, 0, fmt.Errorf("%s: %w", path, err)
	}
	return h, dataStart, nil
}

// Close closes the file. It waits for reads in progress.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd == nil {
		return nil
	}
	err := f.fd.Close()
	f.fd = nil
	return err
}

// Path is the file's path as given to Open.
func (f *File) Path() string { return f.path }

// ReadAt reads len(dst) bytes of tensor name starting off bytes into the
// tensor. The range must lie inside the tensor. A file that has shrunk
// since Open is an ErrFormat error naming the tensor, not a crash. Reads
// of different ranges may run concurrently (they are pread calls).
func (f *File) ReadAt(name string, dst []byte, off int64) error {
	info, ok := f.Lookup(name)
	if !ok {
		return fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.path)
	}
	size := info.End - info.Begin
	if off < 0 || off > size || int64(len(dst)) > size-off {
		return fmt.Errorf("safetensors: tensor %q in %s: bytes [%d,%d) outside its %d bytes", name, f.path, off, off+int64(len(dst)), size)
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.fd == nil {
		return fmt.Errorf("safetensors: %s is closed", f.path)
	}
	n, err := f.fd.ReadAt(dst, f.dataStart+info.Begin+off)
	if n == len(dst) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s: tensor %q: file ends %d bytes into it (truncated after it was opened?)", ErrFormat, f.path, name, off+int64(n))
	}
	return fmt.Errorf("safetensors: %s: tensor %q: %w", f.path, name, err)
}

// Bytes returns a copy of the raw little-endian bytes of a tensor.
func (f *File) Bytes(name string) (Info, []byte, error) {
	info, ok := f.Lookup(name)
	if !ok {
		return Info{}, nil, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.path)
	}
	b := make([]byte, info.End-info.Begin)
	if err := f.ReadAt(name, b, 0); err != nil {
		return info, nil, err
	}
	return info, b, nil
}

// convertChunk bounds the scratch buffer Float32Into reads through, so
// converting a tensor never holds its raw bytes and its float32 values at
// once.
const convertChunk = 1 << 20

// Float32Into converts tensor name into dst, which must hold exactly its
// number of elements. F32, F16 and BF16 are supported. It reads through a
// bounded scratch buffer.
func (f *File) Float32Into(dst []float32, name string) (Info, error) {
	info, ok := f.Lookup(name)
	if !ok {
		return Info{}, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.path)
	}
	if int64(len(dst)) != info.NumElements() {
		return info, fmt.Errorf("safetensors: tensor %q in %s has %d elements, destination holds %d", name, f.path, info.NumElements(), len(dst))
	}
	size := info.DType.Size()
	switch info.DType {
	case F32, F16, BF16:
	default:
		return info, fmt.Errorf("safetensors: tensor %q in %s: cannot convert %s to float32", name, f.path, info.DType)
	}
	per := convertChunk / size
	buf := make([]byte, min(len(dst), per)*size)
	for lo := 0; lo < len(dst); lo += per {
		hi := min(lo+per, len(dst))
		b := buf[:(hi-lo)*size]
		if err := f.ReadAt(name, b, int64(lo*size)); err != nil {
			return info, err
		}
		if err := ToFloat32(dst[lo:hi], info.DType, b); err != nil {
			return info, fmt.Errorf("tensor %q in %s: %w", name, f.path, err)
		}
	}
	return info, nil
}

// Float32 returns a tensor converted to a new float32 slice. F32, F16 and
// BF16 are supported.
func (f *File) Float32(name string) ([]float32, Info, error) {
	info, ok := f.Lookup(name)
	if !ok {
		return nil, Info{}, fmt.Errorf("%w: %q in %s", ErrNotFound, name, f.path)
	}
	out := make([]float32, info.NumElements())
	if _, err := f.Float32Into(out, name); err != nil {
		return nil, info, err
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
