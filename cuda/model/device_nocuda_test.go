//go:build !cuda

package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNoCUDA: a binary built without the cuda tag says so when asked for
// the GPU, through every entry point.
func TestNoCUDA(t *testing.T) {
	_, err := NewOn(tinyConfig(), CUDA, nil)
	require.ErrorIs(t, err, ErrNoCUDA)
	require.ErrorContains(t, err, "built without the cuda tag")

	dir := t.TempDir()
	require.NoError(t, WriteDir(dir, tinyConfig(), RandomWeights(tinyConfig(), 1)))
	_, err = LoadOn(dir, CUDA, nil)
	require.ErrorIs(t, err, ErrNoCUDA)
}
