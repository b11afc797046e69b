package cuda

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/cuda/model"
)

// TestOptionsRefuseNegative is issue 35's negative options, which Open and
// New replaced with the defaults: each is an error naming the option
// (Open's before it loads anything), and a nil model is an error too.
func TestOptionsRefuseNegative(t *testing.T) {
	ref := loadReferences(t)[0]
	m, err := model.NewRandom(ref.cfg, ref.seed, kernels.NewCPU(1))
	require.NoError(t, err)
	for name, opts := range map[string]Options{
		"Threads":        {Threads: -1},
		"BlockSize":      {BlockSize: -16},
		"KVBlocks":       {KVBlocks: -1},
		"KVMemory":       {KVMemory: -1 << 20},
		"MaxSeqs":        {MaxSeqs: -4},
		"MaxBatchTokens": {MaxBatchTokens: -512},
		"MaxContext":     {MaxContext: -1},
	} {
		_, err := New(m, opts)
		require.ErrorContains(t, err, "cuda: Options."+name+" -", name)
		// The directory does not exist: the option is refused before it is read.
		_, err = Open(filepath.Join(t.TempDir(), "absent"), opts)
		require.ErrorContains(t, err, "cuda: Options."+name+" -", name)
	}
	_, err = New(m, Options{MaxSeqs: -1, BlockSize: -1})
	require.ErrorContains(t, err, "Options.BlockSize")
	require.ErrorContains(t, err, "Options.MaxSeqs")

	_, err = New(nil, Options{})
	require.ErrorContains(t, err, "nil model")

	e, err := New(m, Options{}) // zero is still every default
	require.NoError(t, err)
	require.NoError(t, e.Close())
}
