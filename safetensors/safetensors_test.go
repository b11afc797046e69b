package safetensors

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func writeTemp(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, os.WriteFile(p, b, 0o644))
	return p
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	a := []float32{1, -2.5, 3e-8, float32(math.Inf(1))}
	bf := []byte{0x80, 0x3f, 0x00, 0xc0} // bf16 1.0, -2.0
	require.NoError(t, Write(&buf, []Tensor{
		F32Tensor("b.weight", []int64{2, 2}, a),
		{Name: "a.bf", DType: BF16, Shape: []int64{2}, Data: bf},
		{Name: "scalar", DType: F32, Data: make([]byte, 4)},
		{Name: "ids", DType: I32, Shape: []int64{3}, Data: []byte{1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 1, 0, 0}},
	}, map[string]string{"format": "pt"}))
	hdrLen := binary.LittleEndian.Uint64(buf.Bytes())
	require.Zero(t, hdrLen%8, "header padded to 8 bytes")

	f, err := Open(writeTemp(t, buf.Bytes()))
	require.NoError(t, err)
	defer f.Close()
	require.Equal(t, map[string]string{"format": "pt"}, f.Metadata)
	got, info, err := f.Float32("b.weight")
	require.NoError(t, err)
	require.Equal(t, a, got)
	require.Equal(t, []int64{2, 2}, info.Shape)
	got, _, err = f.Float32("a.bf")
	require.NoError(t, err)
	require.Equal(t, []float32{1, -2}, got)
	got, info, err = f.Float32("scalar")
	require.NoError(t, err)
	require.Equal(t, []float32{0}, got)
	require.Equal(t, int64(1), info.NumElements())
	_, _, err = f.Float32("missing")
	require.ErrorIs(t, err, ErrNotFound)
	ids, info, err := f.Int32("ids")
	require.NoError(t, err)
	require.Equal(t, []int32{1, -2, 256}, ids)
	require.Equal(t, []int64{3}, info.Shape)
	_, _, err = f.Int32("b.weight")
	require.ErrorContains(t, err, `"b.weight"`)
	require.ErrorContains(t, err, "not I32")
	_, _, err = f.Int32("missing")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, f.Close())
	require.NoError(t, f.Close())
}

// TestHalfGolden checks F16 and BF16 conversion against values numpy and
// PyTorch produced (testdata/gen_half.py).
func TestHalfGolden(t *testing.T) {
	fh, err := os.Open("testdata/half.txt")
	require.NoError(t, err)
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	n := 0
	for sc.Scan() {
		parts := strings.Fields(sc.Text())
		require.Len(t, parts, 3)
		in, err := strconv.ParseUint(parts[1], 16, 16)
		require.NoError(t, err)
		want, err := strconv.ParseUint(parts[2], 16, 32)
		require.NoError(t, err)
		dst := make([]float32, 1)
		require.NoError(t, ToFloat32(dst, DType(parts[0]), []byte{byte(in), byte(in >> 8)}))
		require.Equalf(t, uint32(want), math.Float32bits(dst[0]), "%s %s", parts[0], parts[1])
		n++
	}
	require.NoError(t, sc.Err())
	require.Greater(t, n, 400)
}

func rawFile(hdr string, data int) []byte {
	b := make([]byte, 8, 8+len(hdr)+data)
	binary.LittleEndian.PutUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	return append(b, make([]byte, data)...)
}

func TestCorrupt(t *testing.T) {
	tests := []struct {
		name string
		file []byte
		want string
	}{
		{"short", []byte{1, 2, 3}, "shorter than the 8-byte"},
		{"huge header len", func() []byte {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, 1<<40)
			return b
		}(), "exceeds"},
		{"truncated header", func() []byte { b := rawFile(`{"a":1}`, 0); return b[:len(b)-2] }(), "truncated"},
		{"not object", rawFile(`[1,2]   `, 0), "does not start with '{'"},
		{"bad json", rawFile(`{"a":`, 0), "header JSON"},
		{"trailing garbage", rawFile(`{}x`, 0), "after the header"},
		{"unknown dtype", rawFile(`{"a":{"dtype":"Q4","shape":[1],"data_offsets":[0,4]}}`, 4), `tensor "a": unknown dtype`},
		{"size mismatch", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, 8), `tensor "a": F32[2] needs 8 bytes but data_offsets span 4`},
		{"beyond end", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4), "beyond the 4-byte data section"},
		{"reversed offsets", rawFile(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, 4), "invalid data_offsets"},
		{"one offset", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0]}}`, 4), "must have 2 entries"},
		{"negative dim", rawFile(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, 4), "negative dimension"},
		{"no shape", rawFile(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, 4), "missing shape"},
		{"extra field", rawFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, 4), "unknown field"},
		{"overflow", rawFile(`{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,4]}}`, 4), "overflows"},
		{"overlap", rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8), "overlap"},
		{"bad metadata", rawFile(`{"__metadata__":{"a":1}}`, 0), "__metadata__"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(writeTemp(t, tt.file))
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

func TestOpenDirSharded(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"),
		[]Tensor{F32Tensor("x", []int64{1}, []float32{1})}, nil))
	require.NoError(t, WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"),
		[]Tensor{F32Tensor("y", []int64{2}, []float32{2, 3})}, nil))
	writeIndex := func(m map[string]string) {
		b, err := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": m})
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFile), b, 0o644))
	}
	writeIndex(map[string]string{"x": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"})
	s, err := OpenDir(dir)
	require.NoError(t, err)
	require.Equal(t, []string{"x", "y"}, s.Names())
	v, _, err := s.Float32("y")
	require.NoError(t, err)
	require.Equal(t, []float32{2, 3}, v)
	require.NoError(t, s.Close())

	writeIndex(map[string]string{"x": "model-00002-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"})
	_, err = OpenDir(dir)
	require.ErrorContains(t, err, `tensor "x"`)
	writeIndex(map[string]string{"x": "../evil.safetensors"})
	_, err = OpenDir(dir)
	require.ErrorContains(t, err, "invalid shard file name")
	writeIndex(map[string]string{"x": "missing.safetensors"})
	_, err = OpenDir(dir)
	require.Error(t, err)
}

func FuzzParseHeader(f *testing.F) {
	var buf bytes.Buffer
	_ = Write(&buf, []Tensor{F32Tensor("a", []int64{2}, []float32{1, 2}), {Name: "b", DType: F16, Shape: []int64{1, 1}, Data: []byte{0, 0x3c}}}, map[string]string{"k": "v"})
	f.Add(buf.Bytes())
	f.Add(rawFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8))
	f.Add(rawFile(`{}`, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, start, err := ParseHeader(b, int64(len(b)))
		if err != nil {
			return
		}
		// A header that parses must describe in-bounds, non-overlapping
		// ranges whose sizes match dtype × shape.
		var prevEnd int64
		for _, ti := range h.Tensors {
			if ti.Begin < prevEnd || start+ti.End > int64(len(b)) || ti.End-ti.Begin != ti.NumElements()*int64(ti.DType.Size()) {
				t.Fatalf("invalid tensor accepted: %+v", ti)
			}
			prevEnd = ti.End
			if ti.DType == F32 || ti.DType == F16 || ti.DType == BF16 {
				dst := make([]float32, ti.NumElements())
				if err := ToFloat32(dst, ti.DType, b[start+ti.Begin:start+ti.End]); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}

// TestDuplicateKeys: encoding/json keeps the last of two equal keys, so a
// header could name one tensor twice and two readers would disagree on its
// bytes. Every level of the header must reject duplicates.
func TestDuplicateKeys(t *testing.T) {
	tests := []struct {
		name, hdr, want string
	}{
		{"tensor", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, `header: duplicate key "a"`},
		{"metadata", `{"__metadata__":{"k":"v"},"__metadata__":{"k":"w"}}`, `header: duplicate key "__metadata__"`},
		{"metadata key", `{"__metadata__":{"k":"v","k":"w"}}`, `__metadata__: duplicate key "k"`},
		{"entry field", `{"a":{"dtype":"F32","shape":[1],"dtype":"I32","data_offsets":[0,4]}}`, `tensor "a": duplicate key "dtype"`},
		{"offsets", `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"data_offsets":[4,8]}}`, `tensor "a": duplicate key "data_offsets"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(writeTemp(t, rawFile(tt.hdr, 8)))
			require.ErrorIs(t, err, ErrFormat)
			require.ErrorContains(t, err, tt.want)
		})
	}
}

// TestTruncatedAfterOpen: a checkpoint that shrinks after Open (another
// process rewriting it) must give errors naming the tensor. With the file
// memory-mapped, the reads below died with SIGBUS.
func TestTruncatedAfterOpen(t *testing.T) {
	big := make([]float32, 1<<16) // several pages, so truncation drops whole pages
	for i := range big {
		big[i] = float32(i)
	}
	p := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, WriteFile(p, []Tensor{
		F32Tensor("a", []int64{4}, []float32{1, 2, 3, 4}),
		F32Tensor("b", []int64{int64(len(big))}, big),
	}, nil))
	f, err := Open(p)
	require.NoError(t, err)
	defer f.Close()
	got, _, err := f.Float32("b")
	require.NoError(t, err)
	require.Equal(t, big, got)

	require.NoError(t, os.Truncate(p, 4096))
	_, _, err = f.Float32("b")
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, `tensor "b": file ends`)
	_, _, err = f.Bytes("b")
	require.ErrorContains(t, err, "truncated")
	require.Error(t, f.ReadAt("b", make([]byte, 4), int64(4*len(big)-4)))
	v, _, err := f.Float32("a") // still inside the file
	require.NoError(t, err)
	require.Equal(t, []float32{1, 2, 3, 4}, v)
}

func TestReadAt(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m.safetensors")
	require.NoError(t, WriteFile(p, []Tensor{F32Tensor("a", []int64{4}, []float32{1, 2, 3, 4})}, nil))
	f, err := Open(p)
	require.NoError(t, err)
	b := make([]byte, 8)
	require.NoError(t, f.ReadAt("a", b, 4))
	require.Equal(t, []byte{0, 0, 0, 0x40, 0, 0, 0x40, 0x40}, b)
	require.ErrorContains(t, f.ReadAt("a", b, 12), "outside its 16 bytes")
	require.ErrorContains(t, f.ReadAt("a", b, -1), "outside")
	require.ErrorIs(t, f.ReadAt("nope", b, 0), ErrNotFound)
	dst := make([]float32, 3)
	_, err = f.Float32Into(dst, "a")
	require.ErrorContains(t, err, "destination holds 3")
	require.NoError(t, f.Close())
	require.ErrorContains(t, f.ReadAt("a", b, 0), "closed")
}

func TestWriteStream(t *testing.T) {
	ts := []Tensor{{Name: "b", DType: BF16, Shape: []int64{3}}, {Name: "a", DType: F32, Shape: []int64{1}}}
	var order []string
	var buf bytes.Buffer
	err := WriteStream(&buf, ts, nil, func(tt Tensor) ([]byte, error) {
		order = append(order, tt.Name)
		if tt.DType == BF16 {
			return BF16Bytes([]float32{1, -2.5, 1 + 1.0/256}), nil
		}
		return F32Bytes([]float32{7}), nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, order, "written in name order")
	f, err := Open(writeTemp(t, buf.Bytes()))
	require.NoError(t, err)
	defer f.Close()
	v, _, err := f.Float32("b")
	require.NoError(t, err)
	require.Equal(t, []float32{1, -2.5, 1}, v, "1+2^-8 is a tie: rounds to even")

	err = WriteStream(&bytes.Buffer{}, ts, nil, func(Tensor) ([]byte, error) { return []byte{1}, nil })
	require.ErrorContains(t, err, `tensor "a": F32[1] needs 4 bytes, got 1`)
	err = WriteStream(&bytes.Buffer{}, ts, nil, func(Tensor) ([]byte, error) { return nil, os.ErrClosed })
	require.ErrorIs(t, err, os.ErrClosed)
}

// TestWriteFileAtomic: WriteFile replaces a file whole, by renaming a
// complete new one over it: a write that fails leaves the old file as it
// was and no temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, SingleFile)
	require.NoError(t, WriteFile(p, []Tensor{F32Tensor("a", []int64{2}, []float32{1, 2})}, nil))
	was, err := os.ReadFile(p)
	require.NoError(t, err)
	st, err := os.Stat(p)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o644), st.Mode().Perm())

	ts := []Tensor{{Name: "a", DType: F32, Shape: []int64{2}}, {Name: "b", DType: F32, Shape: []int64{1}}}
	err = WriteFileStream(p, ts, nil, func(tt Tensor) ([]byte, error) {
		if tt.Name == "b" {
			return nil, os.ErrDeadlineExceeded // the source fails half way
		}
		return F32Bytes([]float32{3, 4}), nil
	})
	require.ErrorIs(t, err, os.ErrDeadlineExceeded)
	require.ErrorContains(t, err, p)
	now, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, was, now)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1, "a temporary file was left behind")

	// A directory that cannot be written to is an error naming it.
	err = WriteFile(filepath.Join(dir, "missing", SingleFile), ts[:1], nil)
	require.ErrorContains(t, err, "missing")
}

// TestIndexStrict: a sharded checkpoint's index may not name a tensor (or
// a top-level key) twice, and must be one JSON object.
func TestIndexStrict(t *testing.T) {
	for _, tt := range []struct{ idx, want string }{
		{`{"weight_map":{"x":"a.safetensors","x":"b.safetensors"}}`, `weight_map: duplicate key "x"`},
		{`{"weight_map":{"x":"a.safetensors"},"weight_map":{"x":"b.safetensors"}}`, `index: duplicate key "weight_map"`},
		{`{"weight_map":{"x":"a.safetensors"}} {}`, "after the index JSON object"},
		{`{"metadata":{"total_size":4}}`, "empty weight_map"},
		{`{"weight_map":{"x":1}}`, `tensor "x"`},
		{`[]`, "must be a JSON object"},
	} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFile), []byte(tt.idx), 0o644))
		_, err := OpenDir(dir)
		require.ErrorIs(t, err, ErrFormat, tt.idx)
		require.ErrorContains(t, err, tt.want, tt.idx)
	}
	m, err := parseIndex([]byte(`{"metadata":{"total_size":4,"x":[1,{"a":null}]},"weight_map":{"x":"a.safetensors","y":"b.safetensors"}}`))
	require.NoError(t, err)
	require.Equal(t, map[string]string{"x": "a.safetensors", "y": "b.safetensors"}, m)
}

func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":4},"weight_map":{"x":"a.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"x":"a","x":"b"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := parseIndex(b)
		if err != nil {
			return
		}
		// What parses is one valid JSON object whose weight_map has
		// exactly the names returned.
		if !json.Valid(b) || len(m) == 0 {
			t.Fatalf("accepted %q", b)
		}
	})
}
