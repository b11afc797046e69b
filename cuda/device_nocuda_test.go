//go:build !cuda

package cuda

import (
	"testing"

	"github.com/agentrl/agentrl/cuda/model"
	"github.com/stretchr/testify/require"
)

// TestOpenCUDAWithoutTag: asking a binary built without the cuda tag for
// the GPU is a clear error, not a silent CPU run.
func TestOpenCUDAWithoutTag(t *testing.T) {
	ref := loadReferences(t)[0]
	dir := t.TempDir()
	require.NoError(t, model.WriteDir(dir, ref.cfg, model.RandomWeights(ref.cfg, ref.seed)))
	_, err := Open(dir, Options{Device: model.CUDA})
	require.ErrorIs(t, err, model.ErrNoCUDA)
	require.ErrorContains(t, err, "built without the cuda tag")
}
