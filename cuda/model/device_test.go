package model

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseDevice(t *testing.T) {
	tests := []struct {
		in   string
		want Device
		err  string
	}{
		{"", CPU, ""},
		{"cpu", CPU, ""},
		{"cuda", CUDA, ""},
		{"gpu", "", `unknown device "gpu" (want cpu or cuda)`},
	}
	for _, tt := range tests {
		got, err := ParseDevice(tt.in)
		if tt.err != "" {
			require.ErrorContains(t, err, tt.err)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tt.want, got)
	}
	_, err := NewOn(tinyConfig(), "tpu", nil)
	require.ErrorContains(t, err, `unknown device "tpu"`)
}

// TestCPUDeviceLifecycle: on the CPU, NewOn is New, AllocKVCache is
// NewKVCache, and Close releases a cache so that it is no longer accepted.
func TestCPUDeviceLifecycle(t *testing.T) {
	m, err := NewOn(tinyConfig(), CPU, nil)
	require.NoError(t, err)
	require.Equal(t, CPU, m.Device())
	for name, v := range RandomWeights(m.Config(), 3) {
		require.NoError(t, m.SetTensor(name, m.Config().TensorShapes()[name], v))
	}
	kv, err := m.AllocKVCache(4, 4)
	require.NoError(t, err)
	seq := []Seq{{Tokens: []int32{1, 2, 3}, Blocks: []int32{2}}}
	_, err = m.Forward(kv, seq)
	require.NoError(t, err)
	require.NoError(t, kv.Close())
	_, err = m.Forward(kv, seq)
	require.ErrorIs(t, err, ErrInput)
	require.NoError(t, m.Close())
}
