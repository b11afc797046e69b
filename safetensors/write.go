package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
)

// Tensor is one tensor to write.
type Tensor struct {
	Name  string
	DType DType
	Shape []int64
	Data  []byte // little-endian elements
}

// BF16Bytes rounds v to bfloat16 (nearest even, as PyTorch's
// .to(torch.bfloat16); NaN stays a quiet NaN) as little-endian bytes.
func BF16Bytes(v []float32) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		u := math.Float32bits(x)
		var h uint16
		if u&0x7fffffff > 0x7f800000 {
			h = uint16(u>>16) | 0x40
		} else {
			h = uint16((u + 0x7fff + (u>>16)&1) >> 16)
		}
		binary.LittleEndian.PutUint16(b[2*i:], h)
	}
	return b
}

// F32Bytes is v as little-endian F32 bytes.
func F32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// F32Tensor makes an F32 Tensor from float32 values.
func F32Tensor(name string, shape []int64, v []float32) Tensor {
	return Tensor{Name: name, DType: F32, Shape: shape, Data: F32Bytes(v)}
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Write writes tensors in safetensors format, in name order, with the
// header padded with spaces to a multiple of 8 bytes so every tensor is
// 8-byte aligned (as the reference writer does).
func Write(w io.Writer, tensors []Tensor, metadata map[string]string) error {
	return WriteStream(w, tensors, metadata, func(t Tensor) ([]byte, error) { return t.Data, nil })
}

// WriteStream is Write for tensors too large to hold at once: tensors
// give names, dtypes and shapes (Data is ignored), and data is called for
// each tensor in the order they are written (by name) for its bytes, which
// are written before the next call, so only one tensor need exist at a
// time.
func WriteStream(w io.Writer, tensors []Tensor, metadata map[string]string, data func(t Tensor) ([]byte, error)) error {
	return WriteStreamTo(w, tensors, metadata, func(t Tensor, size int64, w io.Writer) error {
		b, err := data(t)
		if err != nil {
			return err
		}
		if int64(len(b)) != size {
			return fmt.Errorf("%s%v needs %d bytes, got %d", t.DType, t.Shape, size, len(b))
		}
		_, err = w.Write(b)
		return err
	})
}

// WriteStreamTo is WriteStream for tensors produced piecewise: write is
// called for each tensor in name order with the tensor's size in bytes and
// a writer that takes exactly that many bytes (writing more, or returning
// having written fewer, is an error), so a tensor converted on the way out
// (int32 values stored as I64, say) never exists whole as bytes.
func WriteStreamTo(w io.Writer, tensors []Tensor, metadata map[string]string, write func(t Tensor, size int64, w io.Writer) error) error {
	ts := append([]Tensor(nil), tensors...)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	hdr := make(map[string]any, len(ts)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	sizes := make([]int64, len(ts))
	var off int64
	for i, t := range ts {
		if i > 0 && t.Name == ts[i-1].Name {
			return fmt.Errorf("safetensors: duplicate tensor name %q", t.Name)
		}
		if t.Name == "__metadata__" {
			return fmt.Errorf("safetensors: tensor name %q is reserved", t.Name)
		}
		n := int64(t.DType.Size())
		if n == 0 {
			return fmt.Errorf("safetensors: tensor %q: unknown dtype %q", t.Name, t.DType)
		}
		for _, d := range t.Shape {
			if d < 0 {
				return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
			}
			if d != 0 && n > math.MaxInt64/d {
				return fmt.Errorf("safetensors: tensor %q: shape %v overflows", t.Name, t.Shape)
			}
			n *= d
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		hdr[t.Name] = headerEntry{DType: t.DType, Shape: shape, DataOffsets: [2]int64{off, off + n}}
		sizes[i] = n
		off += n
	}
	js, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: header: %w", err)
	}
	for len(js)%8 != 0 {
		js = append(js, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenb [8]byte
	binary.LittleEndian.PutUint64(lenb[:], uint64(len(js)))
	if _, err := bw.Write(lenb[:]); err != nil {
		return err
	}
	if _, err := bw.Write(js); err != nil {
		return err
	}
	for i, t := range ts {
		lw := &limitedWriter{w: bw, left: sizes[i]}
		if err := write(t, sizes[i], lw); err != nil {
			if lw.werr != nil {
				return lw.werr // the destination failed: not this tensor's fault
			}
			return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
		}
		if lw.left != 0 {
			return fmt.Errorf("safetensors: tensor %q: %s%v needs %d bytes, got %d", t.Name, t.DType, t.Shape, sizes[i], sizes[i]-lw.left)
		}
	}
	return bw.Flush()
}

// limitedWriter passes at most left bytes on to w; more is an error, so a
// tensor's bytes can never run into the next tensor's range.
type limitedWriter struct {
	w    io.Writer
	left int64
	werr error // an error from w itself
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.left {
		return 0, fmt.Errorf("%d bytes written past the tensor's end", int64(len(p))-l.left)
	}
	n, err := l.w.Write(p)
	l.left -= int64(n)
	if err != nil {
		l.werr = err
	}
	return n, err
}

// WriteFile writes tensors to path (see Write and WriteFileStream).
func WriteFile(path string, tensors []Tensor, metadata map[string]string) error {
	return WriteFileStream(path, tensors, metadata, func(t Tensor) ([]byte, error) { return t.Data, nil })
}

// WriteFileStream writes tensors to path (see WriteStream). It writes a
// new file beside path and renames it over path once complete, so that a
// reader never sees a partial file, a failed write leaves path as it
// was, and an engine computing from a mapping of the old file goes on
// with the old file (Mapping.Changed stays quiet) until it loads the new
// one. The file is created with permissions 0644.
func WriteFileStream(path string, tensors []Tensor, metadata map[string]string, data func(t Tensor) ([]byte, error)) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	tmp := f.Name()
	err = WriteStream(f, tensors, metadata, data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		// The rename is the last step: on any error tmp is still there.
		return errors.Join(fmt.Errorf("safetensors: writing %s: %w", path, err), os.Remove(tmp))
	}
	return nil
}
