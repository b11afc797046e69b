//go:build linux

package model

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// halfMatrices counts a model's fp32 matrices held in Half and in float32
// panels (a tied head is the table, counted once).
func halfMatrices(m *Model) (half, full int) {
	seen := map[*cpuWeight]bool{}
	m.w.Each(func(h **cpuWeight) {
		w := *h
		if w == nil || w.mat == nil || seen[w] {
			return
		}
		seen[w] = true
		if w.mat.Half != nil {
			half++
		} else {
			full++
		}
	})
	return half, full
}

// TestFP32HalfMatchesFloat32: an fp32 model loaded from a BF16 checkpoint
// holds its matrices in half the bytes and computes the bits of the same
// model held in float32 panels (set tensor by tensor from the widened
// values), copied and mapped, packed and reloaded; an update that is not
// bf16 values moves just its matrix to float32 panels, a reload of the
// checkpoint moves it back, and a checkpoint that mixes BF16 and F32 in
// one fused matrix keeps that matrix in float32.
func TestFP32HalfMatchesFloat32(t *testing.T) {
	cpu := kernels.NewCPU(2)
	for _, arch := range []string{Qwen3, Qwen2} {
		for _, tie := range []bool{false, true} {
			cfg := mapConfig(tie)
			cfg.ModelType = arch
			src := t.TempDir()
			require.NoError(t, WriteRandomDir(src, cfg, 17, WriteOptions{DType: safetensors.BF16}))
			matrices := 4*cfg.NumHiddenLayers + 1 // and the head (a tied one is the table)

			// The reference: every matrix in float32 panels.
			ref, err := NewWith(cfg, cpu, WeightsF32)
			require.NoError(t, err)
			set, err := safetensors.OpenDir(src)
			require.NoError(t, err)
			for _, name := range cfg.TensorNames() {
				v, info, err := set.Float32(name)
				require.NoError(t, err)
				require.NoError(t, ref.SetTensor(name, info.Shape, v))
			}
			require.NoError(t, set.Close())
			require.Equal(t, [2]int{0, matrices}, pair(halfMatrices(ref)), "SetTensor on a new model fills float32 panels")
			want := lastLogits(t, ref)

			m, err := LoadWith(src, cpu, LoadOptions{Weights: WeightsF32, Copy: true})
			require.NoError(t, err)
			require.Equal(t, [2]int{matrices, 0}, pair(halfMatrices(m)), arch)
			require.Equal(t, want, lastLogits(t, m), arch)

			// WeightBytes: the matrices take half the bytes; a decode step
			// reads everything but an untied (float32 rows) table.
			refStored, refStep, ok := ref.WeightBytes()
			require.True(t, ok)
			stored, step, ok := m.WeightBytes()
			require.True(t, ok)
			panels := 0
			seen := map[*cpuWeight]bool{}
			ref.w.Each(func(h **cpuWeight) {
				if w := *h; w != nil && w.mat != nil && !seen[w] {
					seen[w] = true
					panels += 4 * len(w.mat.Data)
				}
			})
			require.Equal(t, refStored-int64(panels/2), stored)
			table := int64(0)
			if !tie {
				table = 4 * int64(cfg.VocabSize*cfg.HiddenSize)
			}
			require.Equal(t, [2]int64{refStored - table, stored - table}, [2]int64{refStep, step})

			// Packed: BF16 panels, loaded copied and mapped.
			dir := packTo(t, m, src)
			pset, err := safetensors.OpenDir(dir)
			require.NoError(t, err)
			info, ok := pset.Lookup("layers.0.qkv.panels")
			require.True(t, ok)
			require.Equal(t, safetensors.BF16, info.DType)
			require.NoError(t, pset.Close())
			for _, cp := range []bool{true, false} {
				pm, err := LoadWith(dir, cpu, LoadOptions{Copy: cp})
				require.NoError(t, err)
				require.Equal(t, WeightsF32, pm.Weights())
				require.Equal(t, [2]int{matrices, 0}, pair(halfMatrices(pm)), "copy %v", cp)
				require.Equal(t, want, lastLogits(t, pm), "copy %v", cp)
				require.NoError(t, pm.Close())
			}

			// An update with values that are not bf16 values.
			name := "model.layers.1.mlp.up_proj.weight"
			shape := cfg.TensorShapes()[name]
			r := rand.New(rand.NewPCG(5, 6))
			v := make([]float32, shape[0]*shape[1])
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
			require.NoError(t, m.SetTensor(name, shape, v))
			require.NoError(t, ref.SetTensor(name, shape, v))
			require.Equal(t, [2]int{matrices - 1, 1}, pair(halfMatrices(m)))
			updated := lastLogits(t, ref)
			require.Equal(t, updated, lastLogits(t, m))
			// Packed again: the moved matrix as F32 panels, the rest BF16.
			dir2 := packTo(t, m, src)
			pm, err := LoadWith(dir2, cpu, LoadOptions{})
			require.NoError(t, err)
			require.True(t, pm.Mapped())
			require.Equal(t, [2]int{matrices - 1, 1}, pair(halfMatrices(pm)))
			require.Equal(t, updated, lastLogits(t, pm))
			require.NoError(t, pm.Close())
			// Reloading the checkpoint returns it to Half.
			require.NoError(t, m.LoadWeights(src))
			require.Equal(t, [2]int{matrices, 0}, pair(halfMatrices(m)))
			require.Equal(t, want, lastLogits(t, m))
			require.NoError(t, m.Close())
		}
	}

	// One F32 tensor in a fused matrix (k_proj of q|k|v) whose values are
	// not bf16 values: that matrix loads as float32 panels, the rest in
	// Half, and the logits are the reference's.
	cfg := mapConfig(false)
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 8))
	var ts []safetensors.Tensor
	ref, err := NewWith(cfg, cpu, WeightsF32)
	require.NoError(t, err)
	for _, name := range cfg.TensorNames() {
		shape := cfg.TensorShapes()[name]
		n := 1
		for _, d := range shape {
			n *= int(d)
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.05)
		}
		dt := safetensors.F32
		if name != "model.layers.0.self_attn.k_proj.weight" {
			dt = safetensors.BF16
			for i := range v {
				v[i] = math.Float32frombits(math.Float32bits(v[i]) &^ 0xffff)
			}
		}
		require.NoError(t, ref.SetTensor(name, shape, v))
		b := make([]byte, len(v)*dt.Size())
		for i, f := range v {
			if dt == safetensors.BF16 {
				binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(f)>>16))
			} else {
				binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
			}
		}
		ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shape, Data: b})
	}
	require.NoError(t, writeConfig(dir, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, safetensors.SingleFile), ts, nil))
	m, err := LoadWith(dir, cpu, LoadOptions{Weights: WeightsF32})
	require.NoError(t, err)
	require.Equal(t, [2]int{4 * cfg.NumHiddenLayers, 1}, pair(halfMatrices(m)), "untied: the head and 4 a layer, q|k|v of layer 0 in float32")
	require.Equal(t, lastLogits(t, ref), lastLogits(t, m))
	require.NoError(t, m.Close())
}

func pair(a, b int) [2]int { return [2]int{a, b} }

// TestPackedHalfErrors: a packed fp32 checkpoint whose panels are neither
// F32 nor BF16 is refused naming the tensor; BF16 panels at odd addresses
// are copied (the rest stay mapped) with the same logits.
func TestPackedHalfErrors(t *testing.T) {
	cfg := mapConfig(true)
	src := t.TempDir()
	require.NoError(t, WriteRandomDir(src, cfg, 3, WriteOptions{DType: safetensors.BF16}))
	orig, err := LoadWith(src, nil, LoadOptions{Weights: WeightsF32, Copy: true})
	require.NoError(t, err)
	want := lastLogits(t, orig)
	dir := packTo(t, orig, src)
	ts := fileTensors(t, filepath.Join(dir, safetensors.SingleFile))

	bad := t.TempDir()
	var f16 []safetensors.Tensor
	for _, x := range ts {
		if x.Name == "layers.1.o.panels" {
			x.DType = safetensors.F16 // the same bytes, another type
		}
		f16 = append(f16, x)
	}
	require.NoError(t, writeConfig(bad, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(bad, safetensors.SingleFile), f16, map[string]string{PackedLayoutKey: packedLayout(WeightsF32)}))
	for _, cp := range []bool{true, false} {
		_, err = LoadWith(bad, nil, LoadOptions{Copy: cp})
		require.ErrorIs(t, err, ErrWeights)
		require.ErrorContains(t, err, `packed tensor "layers.1.o.panels" is F16×`)
		require.ErrorContains(t, err, "the layout needs F32×")
		require.ErrorContains(t, err, "or BF16×")
	}

	// A one-byte tensor first puts every tensor after it at an odd address.
	odd := t.TempDir()
	ts = append(ts, safetensors.Tensor{Name: "a.pad", DType: safetensors.U8, Shape: []int64{1}, Data: []byte{1}})
	require.NoError(t, writeConfig(odd, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(odd, safetensors.SingleFile), ts, map[string]string{PackedLayoutKey: packedLayout(WeightsF32)}))
	m, err := LoadWith(odd, nil, LoadOptions{})
	require.NoError(t, err)
	require.Equal(t, [2]int{4*cfg.NumHiddenLayers + 1, 0}, pair(halfMatrices(m)))
	in, owned := inPlaceWeights(m)
	require.Equal(t, [2]int{0, 4*cfg.NumHiddenLayers + 1}, [2]int{in, owned}, "every matrix at an odd address is copied")
	require.Equal(t, want, lastLogits(t, m))
	require.NoError(t, m.Close())
}
