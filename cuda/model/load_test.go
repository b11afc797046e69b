package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/stretchr/testify/require"
)

func lastLogits(t *testing.T, m *Model) []float32 {
	t.Helper()
	kv := m.NewKVCache(8, 4)
	out, err := m.Forward(kv, []Seq{{Tokens: []int32{3, 1, 4, 1, 5, 9, 2}, Blocks: seqBlocks(2, 0), AllLogits: true}})
	require.NoError(t, err)
	return append([]float32(nil), out[0]...)
}

// TestLoadWeightTypes: every checkpoint type loads into every weight type
// with the same values SetTensor gives, sharded or not, tied or not.
func TestLoadWeightTypes(t *testing.T) {
	for _, tie := range []bool{false, true} {
		cfg := tinyConfig()
		cfg.NumHiddenLayers = 2
		cfg.TieWordEmbeddings = tie
		f32Dir, bf16Dir := t.TempDir(), t.TempDir()
		require.NoError(t, WriteRandomDir(f32Dir, cfg, 7, WriteOptions{}))
		require.NoError(t, WriteRandomDir(bf16Dir, cfg, 7, WriteOptions{DType: safetensors.BF16, ShardBytes: 3000}))
		cpu := kernels.NewCPU(2)
		shapes := cfg.TensorShapes()
		set := func(wt WeightType, round bool) []float32 {
			m, err := NewWith(cfg, cpu, wt)
			require.NoError(t, err)
			for name, w := range RandomWeights(cfg, 7) {
				if round { // the values a bf16 checkpoint holds
					b := make([]uint16, len(w))
					kernels.ToBF16(b, w)
					kernels.FromBF16(w, b)
				}
				require.NoError(t, m.SetTensor(name, shapes[name], w))
			}
			return lastLogits(t, m)
		}
		wantBF16 := set(WeightsBF16, false)
		wantF32 := set(WeightsF32, false)
		wantF32OfBF16 := set(WeightsF32, true)
		wantBF16OfBF16 := set(WeightsBF16, true) // norms are bf16 in a bf16 checkpoint too
		wantInt8 := set(WeightsInt8, false)
		wantInt8OfBF16 := set(WeightsInt8, true)
		// bf16z holds bf16's values losslessly: bf16's logits, bit for bit.
		require.Equal(t, wantBF16, set(WeightsBF16Z, false))
		for _, tc := range []struct {
			dir  string
			wt   WeightType
			got  WeightType
			want []float32
		}{
			{f32Dir, WeightsAuto, WeightsF32, wantF32},
			{f32Dir, WeightsBF16, WeightsBF16, wantBF16},
			{bf16Dir, WeightsAuto, WeightsBF16, wantBF16OfBF16},
			{bf16Dir, WeightsBF16, WeightsBF16, wantBF16OfBF16},
			{bf16Dir, WeightsF32, WeightsF32, wantF32OfBF16},
			{f32Dir, WeightsInt8, WeightsInt8, wantInt8},
			{bf16Dir, WeightsInt8, WeightsInt8, wantInt8OfBF16},
			{f32Dir, WeightsBF16Z, WeightsBF16Z, wantBF16},
			{bf16Dir, WeightsBF16Z, WeightsBF16Z, wantBF16OfBF16},
		} {
			m, err := LoadWith(tc.dir, cpu, LoadOptions{Weights: tc.wt})
			require.NoError(t, err)
			require.Equal(t, tc.got, m.Weights())
			require.Empty(t, m.Missing())
			require.Equal(t, tc.want, lastLogits(t, m), "tied %v, %s as %q", tie, filepath.Base(tc.dir), tc.wt)
			// Reloading into the same model (a weight update from disk).
			require.NoError(t, m.LoadWeights(tc.dir))
			require.Equal(t, tc.want, lastLogits(t, m))
		}
	}
	_, err := LoadWith(t.TempDir(), nil, LoadOptions{Weights: "int3"})
	require.Error(t, err)
	_, err = NewWith(tinyConfig(), nil, "int3")
	require.ErrorContains(t, err, `unknown weight type "int3"`)
	_, err = ParseWeightType("fp8")
	require.ErrorContains(t, err, "fp8")
	for s, want := range map[string]WeightType{"": WeightsAuto, "BF16": WeightsBF16, "f32": WeightsF32, "int8": WeightsInt8, "Q8_0": WeightsInt8, "bf16z": WeightsBF16Z} {
		got, err := ParseWeightType(s)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
}

// TestLoadTruncatedWhileOpen: a checkpoint cut short after it was opened
// (rewritten by another process) is an error naming a tensor, and the
// model does not count any weight as loaded. With the checkpoint mapped,
// reading it died with SIGBUS.
func TestLoadTruncatedWhileOpen(t *testing.T) {
	cfg := tinyConfig()
	for _, dt := range []safetensors.DType{safetensors.F32, safetensors.BF16} {
		for _, wt := range []WeightType{WeightsF32, WeightsBF16, WeightsInt8} {
			dir := t.TempDir()
			require.NoError(t, WriteRandomDir(dir, cfg, 1, WriteOptions{DType: dt}))
			set, err := safetensors.OpenDir(dir)
			require.NoError(t, err)
			path := filepath.Join(dir, safetensors.SingleFile)
			st, err := os.Stat(path)
			require.NoError(t, err)
			require.NoError(t, os.Truncate(path, st.Size()/2))
			m, err := NewWith(cfg, nil, wt)
			require.NoError(t, err)
			err = m.loadFrom(set, dir)
			require.ErrorIs(t, err, ErrWeights)
			require.ErrorIs(t, err, safetensors.ErrFormat)
			require.ErrorContains(t, err, "truncated")
			require.Len(t, m.Missing(), len(cfg.TensorShapes()))
			require.NoError(t, set.Close())
		}
	}
}
