//go:build unix

package safetensors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMap: every tensor of a sharded set maps to the bytes ReadAt reads,
// the mapping outlives the Set, and Close is idempotent.
func TestMap(t *testing.T) {
	dir := t.TempDir()
	big := make([]float32, 5000)
	for i := range big {
		big[i] = float32(i) - 0.5
	}
	require.NoError(t, WriteFile(filepath.Join(dir, "model-00001-of-00002.safetensors"), []Tensor{
		F32Tensor("x", []int64{1}, []float32{1}),
		{Name: "h", DType: BF16, Shape: []int64{2, 3}, Data: BF16Bytes([]float32{1, 2, 3, 4, 5, 6})},
	}, nil))
	require.NoError(t, WriteFile(filepath.Join(dir, "model-00002-of-00002.safetensors"),
		[]Tensor{F32Tensor("y", []int64{int64(len(big))}, big)}, nil))
	b, err := json.Marshal(map[string]any{"weight_map": map[string]string{
		"x": "model-00001-of-00002.safetensors", "h": "model-00001-of-00002.safetensors", "y": "model-00002-of-00002.safetensors"}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, IndexFile), b, 0o644))

	s, err := OpenDir(dir)
	require.NoError(t, err)
	m, err := s.Map()
	require.NoError(t, err)
	want := map[string][]byte{}
	for _, name := range s.Names() {
		info, _ := s.Lookup(name)
		want[name] = make([]byte, info.End-info.Begin)
		require.NoError(t, s.ReadAt(name, want[name], 0))
	}
	require.NoError(t, s.Close())
	for name, w := range want {
		info, got, err := m.Tensor(name)
		require.NoError(t, err, name)
		require.Equal(t, name, info.Name)
		require.Equal(t, w, got, name)
		require.Equal(t, len(got), cap(got), "%s: the slice must not reach the next tensor", name)
	}
	paths, regions := m.Regions()
	require.Len(t, paths, 2)
	require.Len(t, regions, 2)
	require.Equal(t, "model-00002-of-00002.safetensors", filepath.Base(paths[1]))
	_, _, err = m.Tensor("z")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close())
	_, _, err = m.Tensor("x")
	require.ErrorContains(t, err, "mapping closed")
}

// TestMapTruncated: a file that shrank between OpenDir and Map is an
// error naming it, not a mapping whose last pages raise SIGBUS.
func TestMapTruncated(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, SingleFile)
	require.NoError(t, WriteFile(p, []Tensor{F32Tensor("b", []int64{1 << 14}, make([]float32, 1<<14))}, nil))
	s, err := OpenDir(dir)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, os.Truncate(p, 4096))
	_, err = s.Map()
	require.ErrorIs(t, err, ErrFormat)
	require.ErrorContains(t, err, "truncated after it was opened")
	require.ErrorContains(t, err, p)

	require.NoError(t, s.Close())
	_, err = s.Map()
	require.ErrorContains(t, err, "is closed")
}
