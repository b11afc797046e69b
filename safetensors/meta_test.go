package safetensors

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSetMetadata(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, WriteFile(filepath.Join(dir, SingleFile), []Tensor{F32Tensor("x", []int64{1}, []float32{1})},
		map[string]string{"format": "pt", "k": "v"}))
	s, err := OpenDir(dir)
	require.NoError(t, err)
	defer s.Close()
	v, ok := s.Metadata("k")
	require.True(t, ok)
	require.Equal(t, "v", v)
	_, ok = s.Metadata("missing")
	require.False(t, ok)
}
