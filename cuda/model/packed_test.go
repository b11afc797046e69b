//go:build linux

package model

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
	"github.com/stretchr/testify/require"
)

// packTo writes m packed into a new directory with src's config.
func packTo(t *testing.T, m *Model, src string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), b, 0o644))
	require.NoError(t, m.WritePacked(filepath.Join(dir, safetensors.SingleFile)))
	return dir
}

// TestPackedRoundTrip: every weight type of every architecture quirk
// (tied or not, Qwen2's biases) written packed loads back, copied or
// mapped, with bit-identical logits and nothing converted; a mapped packed
// model reloads, sleeps, wakes and takes SetTensor like a copied one.
func TestPackedRoundTrip(t *testing.T) {
	cpu := kernels.NewCPU(2)
	for _, arch := range []string{Qwen3, Qwen2} {
		for _, tie := range []bool{false, true} {
			cfg := mapConfig(tie)
			cfg.ModelType = arch
			src := t.TempDir()
			require.NoError(t, WriteRandomDir(src, cfg, 13, WriteOptions{DType: safetensors.BF16}))
			for _, wt := range []WeightType{WeightsInt8, WeightsF32, WeightsBF16, WeightsBF16Z} {
				what := arch + " " + string(wt)
				orig, err := LoadWith(src, cpu, LoadOptions{Weights: wt, Copy: true})
				require.NoError(t, err)
				want := lastLogits(t, orig)
				dir := packTo(t, orig, src)

				m, err := LoadWith(dir, cpu, LoadOptions{Copy: true})
				require.NoError(t, err, what)
				require.Equal(t, wt, m.Weights(), what)
				require.False(t, m.Mapped())
				require.Equal(t, want, lastLogits(t, m), what)

				mm, err := LoadWith(dir, cpu, LoadOptions{})
				require.NoError(t, err, what)
				require.True(t, mm.Mapped())
				in, owned := inPlaceWeights(mm)
				require.Zero(t, owned, what)
				matrices := 4*cfg.NumHiddenLayers + 1 // and the head (a tied one is the table)
				if !tie && wt != WeightsF32 {
					matrices++ // the table, kept in the weight type (an untied fp32 table is float32 rows)
				}
				require.Equal(t, matrices, in, what)
				require.Equal(t, want, lastLogits(t, mm), what)

				require.NoError(t, mm.LoadWeights(dir))
				require.Equal(t, want, lastLogits(t, mm), what)
				mm.DropWeights()
				require.False(t, mm.Mapped())
				require.NoError(t, mm.LoadWeights(dir))
				require.True(t, mm.Mapped())

				// SetTensor copies the matrix it writes; the file is untouched.
				name := "model.layers.0.self_attn.o_proj.weight"
				shape := cfg.TensorShapes()[name]
				v := make([]float32, shape[0]*shape[1])
				for i := range v {
					v[i] = float32(i%5) / 4
				}
				require.NoError(t, mm.SetTensor(name, shape, v))
				require.NoError(t, orig.SetTensor(name, shape, v))
				require.Equal(t, lastLogits(t, orig), lastLogits(t, mm), what)
				in2, owned2 := inPlaceWeights(mm)
				require.Equal(t, [2]int{in - 1, 1}, [2]int{in2, owned2}, what)
				again, err := LoadWith(dir, cpu, LoadOptions{})
				require.NoError(t, err)
				require.Equal(t, want, lastLogits(t, again), what)
				require.NoError(t, again.Close())
				require.NoError(t, mm.Close())
			}
		}
	}
}

// TestPackedErrors: a packed checkpoint is refused, with an error naming
// what is wrong, where it cannot be used as it is.
func TestPackedErrors(t *testing.T) {
	cfg := mapConfig(true)
	src := t.TempDir()
	require.NoError(t, WriteRandomDir(src, cfg, 2, WriteOptions{DType: safetensors.BF16}))
	orig, err := LoadWith(src, nil, LoadOptions{Weights: WeightsInt8})
	require.NoError(t, err)
	dir := packTo(t, orig, src)

	_, err = LoadWith(dir, nil, LoadOptions{Weights: WeightsF32})
	require.ErrorIs(t, err, ErrWeights)
	require.ErrorContains(t, err, "holds int8 weights packed for this engine, not fp32")
	_, err = LoadWith(dir, nil, LoadOptions{Device: CUDA})
	require.ErrorContains(t, err, "packed for the CPU engine")
	_, _, err = OpenCheckpoint(dir)
	require.ErrorIs(t, err, ErrWeights)
	require.ErrorContains(t, err, "not a Hugging Face checkpoint")
	// An fp32 model reloading from it refuses before changing anything.
	f32, err := LoadWith(src, nil, LoadOptions{Weights: WeightsF32})
	require.NoError(t, err)
	want := lastLogits(t, f32)
	require.ErrorContains(t, f32.LoadWeights(dir), "the model stores fp32")
	require.Equal(t, want, lastLogits(t, f32))

	// A config that does not match the packed shapes names the tensor.
	other := *cfg
	other.IntermediateSize = 128
	b, err := os.ReadFile(filepath.Join(dir, safetensors.SingleFile))
	require.NoError(t, err)
	bad := t.TempDir()
	require.NoError(t, writeConfig(bad, &other, safetensors.BF16))
	require.NoError(t, os.WriteFile(filepath.Join(bad, safetensors.SingleFile), b, 0o644))
	_, err = LoadWith(bad, nil, LoadOptions{})
	require.ErrorIs(t, err, ErrWeights)
	require.ErrorContains(t, err, `packed tensor "layers.0.gate_up.q8"`)

	// Another engine's layout (a different panel height, say) is refused.
	ts := fileTensors(t, filepath.Join(dir, safetensors.SingleFile))
	alien := t.TempDir()
	require.NoError(t, writeConfig(alien, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(alien, safetensors.SingleFile), ts, map[string]string{PackedLayoutKey: "int8 panel=32 q8_block=32 v1"}))
	_, err = LoadWith(alien, nil, LoadOptions{})
	require.ErrorContains(t, err, `packed layout "int8 panel=32 q8_block=32 v1" is not this engine's`)

	// Misaligned tensors (one byte before them) are copied, the rest
	// stay in place, and the logits are the same.
	ts = append(ts, safetensors.Tensor{Name: "a.pad", DType: safetensors.U8, Shape: []int64{1}, Data: []byte{1}})
	odd := t.TempDir()
	require.NoError(t, writeConfig(odd, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(odd, safetensors.SingleFile), ts, map[string]string{PackedLayoutKey: packedLayout(WeightsInt8)}))
	m, err := LoadWith(odd, nil, LoadOptions{})
	require.NoError(t, err)
	in, owned := inPlaceWeights(m)
	require.Equal(t, [2]int{0, 4*cfg.NumHiddenLayers + 1}, [2]int{in, owned}, "every fp16 scale array is at an odd address")
	require.False(t, m.Mapped(), "nothing in place: the mapping is released")
	require.Equal(t, lastLogits(t, orig), lastLogits(t, m))

	empty, err := NewWith(cfg, nil, WeightsInt8)
	require.NoError(t, err)
	require.ErrorContains(t, empty.WritePacked(filepath.Join(t.TempDir(), "x.safetensors")), "weights not set")
}

// TestPackedBF16ZCorrupt: a packed bf16z matrix whose escape offsets do
// not fit its escapes is refused at load, copied or mapped, naming what is
// wrong, before any kernel reads it.
func TestPackedBF16ZCorrupt(t *testing.T) {
	cfg := mapConfig(true)
	src := t.TempDir()
	require.NoError(t, WriteRandomDir(src, cfg, 2, WriteOptions{DType: safetensors.BF16}))
	orig, err := LoadWith(src, nil, LoadOptions{Weights: WeightsBF16Z})
	require.NoError(t, err)
	dir := packTo(t, orig, src)
	ts := fileTensors(t, filepath.Join(dir, safetensors.SingleFile))
	for i := range ts {
		if ts[i].Name == "embed.bf16z_escoff" {
			d := ts[i].Data
			d[len(d)-4] ^= 0x10 // the last offset: past the escapes
		}
	}
	bad := t.TempDir()
	require.NoError(t, writeConfig(bad, cfg, safetensors.BF16))
	require.NoError(t, safetensors.WriteFile(filepath.Join(bad, safetensors.SingleFile), ts, map[string]string{PackedLayoutKey: packedLayout(WeightsBF16Z)}))
	for _, copyW := range []bool{false, true} {
		_, err = LoadWith(bad, nil, LoadOptions{Copy: copyW})
		require.ErrorIs(t, err, ErrWeights)
		require.ErrorIs(t, err, kernels.ErrBF16Z)
		require.ErrorContains(t, err, "escape offsets")
	}
}

// TestPackedTruncated: a mapped packed checkpoint truncated under the
// model fails Forward closed, naming the file.
func TestPackedTruncated(t *testing.T) {
	cfg := mapConfig(true)
	src := t.TempDir()
	require.NoError(t, WriteRandomDir(src, cfg, 6, WriteOptions{DType: safetensors.BF16}))
	orig, err := LoadWith(src, nil, LoadOptions{Weights: WeightsF32})
	require.NoError(t, err)
	dir := packTo(t, orig, src)
	m, err := LoadWith(dir, nil, LoadOptions{})
	require.NoError(t, err)
	defer m.Close()
	require.Equal(t, lastLogits(t, orig), lastLogits(t, m))
	path := filepath.Join(dir, safetensors.SingleFile)
	require.NoError(t, os.Truncate(path, 4096))
	_, err = m.Forward(m.NewKVCache(8, 4), []Seq{{Tokens: []int32{3, 1}, Blocks: seqBlocks(1, 0)}})
	require.ErrorIs(t, err, ErrWeights)
	require.ErrorContains(t, err, path)
}

// TestWritePackedFromMapped: a bf16 model computing from its mapped
// checkpoint packs to the same file as a copied one, and stays as it was.
func TestWritePackedFromMapped(t *testing.T) {
	cfg := mapConfig(false)
	src := t.TempDir()
	require.NoError(t, WriteRandomDir(src, cfg, 3, WriteOptions{DType: safetensors.BF16}))
	mm, err := LoadWith(src, nil, LoadOptions{})
	require.NoError(t, err)
	defer mm.Close()
	cp, err := LoadWith(src, nil, LoadOptions{Copy: true})
	require.NoError(t, err)
	a, err := os.ReadFile(filepath.Join(packTo(t, mm, src), safetensors.SingleFile))
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(packTo(t, cp, src), safetensors.SingleFile))
	require.NoError(t, err)
	require.Equal(t, b, a)
	in, owned := inPlaceWeights(mm)
	require.Equal(t, [2]int{4*cfg.NumHiddenLayers + 2, 0}, [2]int{in, owned})
}
