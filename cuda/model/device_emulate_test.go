//go:build cuda && cudaemu

package model

import (
	"errors"
	"testing"

	"github.com/agentrl/agentrl/cuda/gpu"
	"github.com/stretchr/testify/require"
)

// These tests need the emulated device (tags `cuda cudaemu`), which counts
// allocations and can fail them on demand.

// gpuRun makes a GPU model, loads it, and runs a prefill then a larger
// batch (which grows the scratch), returning what it made so far.
func gpuRun(ref reference) (m *Model, kv *KVCache, err error) {
	m, err = NewOn(ref.cfg, CUDA, nil)
	if err != nil {
		return nil, nil, err
	}
	shapes, weights := ref.cfg.TensorShapes(), RandomWeights(ref.cfg, ref.seed)
	for _, name := range ref.cfg.TensorNames() {
		if err := m.SetTensor(name, shapes[name], weights[name]); err != nil {
			return m, nil, err
		}
	}
	if kv, err = m.AllocKVCache(16, 4); err != nil {
		return m, nil, err
	}
	if _, err := m.Forward(kv, []Seq{{Tokens: ref.prompt[:3], Blocks: []int32{0}}}); err != nil {
		return m, kv, err
	}
	_, err = m.Forward(kv, []Seq{{Tokens: ref.prompt, Blocks: seqBlocks(4, 4), AllLogits: true}, {Tokens: ref.prompt[:2], Start: 3, Blocks: []int32{0, 1}}})
	return m, kv, err
}

func closeAll(m *Model, kv *KVCache) error {
	var errs []error
	if kv != nil {
		errs = append(errs, kv.Close())
	}
	if m != nil {
		errs = append(errs, m.Close())
	}
	return errors.Join(errs...)
}

// TestDeviceMemoryFreed: DropWeights frees the weights and scratch, a KV
// cache's Close its layers, the model's Close the rest.
func TestDeviceMemoryFreed(t *testing.T) {
	base := gpu.EmulatedLiveBuffers()
	ref := loadReferences(t)[3] // llama_bias: every optional weight but QK-norm
	m, kv, err := gpuRun(ref)
	require.NoError(t, err)
	layers := ref.cfg.NumHiddenLayers
	m.DropWeights()
	require.Equal(t, base+1+2*layers, gpu.EmulatedLiveBuffers(), "inv_freq and the KV cache stay")
	require.NoError(t, closeAll(m, kv))
	require.Equal(t, base, gpu.EmulatedLiveBuffers())
}

// TestDeviceOutOfMemory fails the n-th device allocation for every n a
// full run makes: each failure is a clear error, and closing what was made
// frees everything.
func TestDeviceOutOfMemory(t *testing.T) {
	base := gpu.EmulatedLiveBuffers()
	for _, ref := range loadReferences(t) {
		for n := 0; ; n++ {
			gpu.EmulateOutOfMemoryAfter(n)
			m, kv, err := gpuRun(ref)
			gpu.EmulateOutOfMemoryAfter(-1)
			require.NoError(t, closeAll(m, kv))
			require.Equal(t, base, gpu.EmulatedLiveBuffers(), "%s: failing allocation %d", ref.name, n)
			if err == nil {
				t.Logf("%s: %d allocations", ref.name, n)
				break
			}
			require.ErrorContains(t, err, "out of memory (emulated)", "%s: failing allocation %d", ref.name, n)
		}
	}
}

// TestLazyKVCacheOutOfMemory: a cache from NewKVCache that cannot be
// allocated at the first Forward fails that call, frees its part, and is
// allocated by the next call once memory is there.
func TestLazyKVCacheOutOfMemory(t *testing.T) {
	ref := loadReferences(t)[0]
	m := newRandomOnGPU(t, ref.cfg, ref.seed)
	base := gpu.EmulatedLiveBuffers()
	kv := m.NewKVCache(8, 4)
	seq := []Seq{{Tokens: ref.prompt[:5], Blocks: []int32{6, 2}}}
	gpu.EmulateOutOfMemoryAfter(1)
	_, err := m.Forward(kv, seq)
	gpu.EmulateOutOfMemoryAfter(-1)
	require.ErrorContains(t, err, "KV cache: gpu: cudaMalloc: out of memory (emulated)")
	require.Equal(t, base, gpu.EmulatedLiveBuffers())
	_, err = m.Forward(kv, seq)
	require.NoError(t, err)
	require.NoError(t, kv.Close())
}
