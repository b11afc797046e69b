//go:build unix

package safetensors

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

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

// TestMapChanged: Changed is quiet for an untouched file, for one
// renamed over (the mapping keeps the old file) and for one hard-linked
// (a backup), and names the file for
// every way of changing it in place: a same-size write, a truncation, a
// write whose modification time is then set back (rsync --inplace
// --times), and a metadata change.
func TestMapChanged(t *testing.T) {
	tensors := []Tensor{F32Tensor("w", []int64{1024}, make([]float32, 1024))}
	open := func(t *testing.T) (string, *Mapping) {
		p := filepath.Join(t.TempDir(), SingleFile)
		require.NoError(t, WriteFile(p, tensors, nil))
		s, err := OpenDir(filepath.Dir(p))
		require.NoError(t, err)
		m, err := s.Map()
		require.NoError(t, err)
		require.NoError(t, s.Close()) // the mapping watches its own descriptor
		t.Cleanup(func() { require.NoError(t, m.Close()) })
		require.NoError(t, m.Changed())
		afterTick(t, p)
		return p, m
	}
	for _, tc := range []struct {
		name, what string
		change     func(t *testing.T, p string)
	}{
		{"write", "it was modified", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteAt([]byte{1}, 200)
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}},
		{"truncate", "its size went from", func(t *testing.T, p string) {
			require.NoError(t, os.Truncate(p, 0))
		}},
		{"rewrite, times set back", "its contents or metadata changed", func(t *testing.T, p string) {
			st, err := os.Stat(p)
			require.NoError(t, err)
			b, err := os.ReadFile(p)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, 0o644)) // O_TRUNC, in place, the same bytes
			require.NoError(t, os.Chtimes(p, st.ModTime(), st.ModTime()))
		}},
		{"chmod", "its contents or metadata changed", func(t *testing.T, p string) {
			require.NoError(t, os.Chmod(p, 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, m := open(t)
			tc.change(t, p)
			err := m.Changed()
			require.ErrorIs(t, err, ErrChanged)
			require.ErrorContains(t, err, p)
			require.ErrorContains(t, err, tc.what)
		})
	}
	t.Run("renamed over", func(t *testing.T) {
		p, m := open(t)
		next := p + ".new"
		require.NoError(t, WriteFile(next, []Tensor{F32Tensor("w", []int64{8}, make([]float32, 8))}, nil))
		require.NoError(t, os.Rename(next, p))
		require.NoError(t, m.Changed())
	})
	t.Run("WriteFile over it", func(t *testing.T) {
		// WriteFile renames a new file over the old one: the mapping
		// keeps the old bytes.
		p, m := open(t)
		_, was, err := m.Tensor("w")
		require.NoError(t, err)
		was = append([]byte(nil), was...)
		ones := make([]float32, 1024)
		for i := range ones {
			ones[i] = 1
		}
		require.NoError(t, WriteFile(p, []Tensor{F32Tensor("w", []int64{1024}, ones)}, nil))
		require.NoError(t, m.Changed())
		_, now, err := m.Tensor("w")
		require.NoError(t, err)
		require.Equal(t, was, now)
	})
	t.Run("hard-linked", func(t *testing.T) {
		p, m := open(t)
		require.NoError(t, os.Link(p, p+".backup"))
		require.NoError(t, m.Changed())
	})
	t.Run("closed", func(t *testing.T) {
		p, m := open(t)
		require.NoError(t, m.Close())
		require.NoError(t, os.Truncate(p, 0))
		require.NoError(t, m.Changed())
	})
}

// afterTick returns once the file system's clock has moved past p's
// change time, so that a change made afterwards gets other timestamps
// (the kernel stamps files from a clock as coarse as its timer tick).
func afterTick(t *testing.T, p string) {
	t.Helper()
	ctime := func(p string) [2]int64 {
		f, err := os.Open(p)
		require.NoError(t, err)
		defer f.Close()
		s, err := stampOf(f)
		require.NoError(t, err)
		return s.ctime
	}
	was := ctime(p)
	probe := filepath.Join(t.TempDir(), "tick")
	for range 10000 {
		require.NoError(t, os.WriteFile(probe, nil, 0o644))
		if now := ctime(probe); now[0] > was[0] || now[0] == was[0] && now[1] > was[1] {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("the file system's clock did not move past %v", was)
}
