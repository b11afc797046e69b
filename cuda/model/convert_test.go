package model

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agentrl/agentrl/cuda/kernels"
	"github.com/agentrl/agentrl/safetensors"
)

// oddConfig has fused matrices whose second and third tensors start inside
// a 16-row panel (k_proj at row 24 of q|k|v, up_proj at row 40 of
// gate|up), a vocabulary that is not a multiple of 16, and K not a
// multiple of 16 or 32.
func oddConfig(tie bool) *Config {
	return &Config{ModelType: Qwen3, VocabSize: 301, HiddenSize: 40, IntermediateSize: 40, NumHiddenLayers: 2,
		NumAttentionHeads: 4, NumKeyValueHeads: 2, HeadDim: 6, RMSNormEps: 1e-6, RopeTheta: 1e6, MaxPositionEmbeddings: 64,
		TieWordEmbeddings: tie}
}

// rawTensor draws a tensor's checkpoint bytes of type dt: weight-sized
// normal values with signed zeros, denormals of dt and a NaN mixed in.
func rawTensor(r *rand.Rand, dt safetensors.DType, n int) []byte {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.05)
		switch r.IntN(50) {
		case 0:
			v[i] = float32(math.Copysign(0, -1))
		case 1:
			v[i] = 3e-41 // an f32/bf16 denormal (f16: a flush to ±0 below)
		case 2:
			v[i] = 3e-6 // an f16 denormal
		case 3:
			v[i] = float32(math.NaN())
		}
	}
	switch dt {
	case safetensors.BF16:
		return safetensors.BF16Bytes(v)
	case safetensors.F16:
		b := make([]byte, 2*n)
		for i, f := range v {
			binary.LittleEndian.PutUint16(b[2*i:], f16Of(f))
		}
		return b
	}
	return safetensors.F32Bytes(v)
}

// f16Of truncates f to an IEEE half (the rounding does not matter here:
// any half is a valid checkpoint value).
func f16Of(f float32) uint16 {
	b := math.Float32bits(f)
	sign, exp, mant := uint16(b>>16)&0x8000, int(b>>23&0xff)-127+15, b&0x7fffff
	switch {
	case f != f:
		return sign | 0x7e00
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0:
		if exp < -10 {
			return sign
		}
		return sign | uint16((mant|0x800000)>>uint(14-exp))
	}
	return sign | uint16(exp)<<10 | uint16(mant>>13)
}

// widenRaw is the reference widening of checkpoint bytes, element by
// element in Go.
func widenRaw(b []byte, dt safetensors.DType) []float32 {
	out := make([]float32, len(b)/dt.Size())
	for i := range out {
		switch dt {
		case safetensors.BF16:
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		case safetensors.F16:
			out[i] = safetensors.HalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
		default:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	return out
}

// writeRawDir writes a checkpoint of cfg's tensors in dt and returns each
// tensor's bytes.
func writeRawDir(t *testing.T, dir string, cfg *Config, dt safetensors.DType, seed uint64) map[string][]byte {
	r := rand.New(rand.NewPCG(seed, 1))
	shapes := cfg.TensorShapes()
	raw := map[string][]byte{}
	var ts []safetensors.Tensor
	for _, name := range cfg.TensorNames() {
		n := 1
		for _, d := range shapes[name] {
			n *= int(d)
		}
		raw[name] = rawTensor(r, dt, n)
		ts = append(ts, safetensors.Tensor{Name: name, DType: dt, Shape: shapes[name], Data: raw[name]})
	}
	require.NoError(t, writeConfig(dir, cfg, dt))
	require.NoError(t, safetensors.WriteFile(filepath.Join(dir, safetensors.SingleFile), ts, nil))
	return raw
}

// packedValues is p's panels as float32, from Data or Half (widened on a
// copy of p, which stays as it is).
func packedValues(p *kernels.Packed) []float32 {
	c := *p
	c.ToFloat32()
	return c.Data
}

// requireHalf checks that every fp32 matrix of m is held in Half (half)
// or in float32 panels.
func requireHalf(t *testing.T, m *Model, half bool, msg string) {
	t.Helper()
	n := 0
	m.w.Each(func(w **cpuWeight) {
		if *w != nil && (*w).mat != nil {
			n++
			require.Equal(t, half, (*w).mat.Half != nil, "%s: a matrix in Half", msg)
			require.Equal(t, half, (*w).mat.Data == nil, "%s: a matrix in Data", msg)
		}
	})
	require.Positive(t, n, msg)
}

// requireSameWeights compares every stored weight of two CPU models bit
// for bit.
func requireSameWeights(t *testing.T, want, got *Model, msg string) {
	t.Helper()
	var ws, gs []*cpuWeight
	want.w.Each(func(w **cpuWeight) { ws = append(ws, *w) })
	got.w.Each(func(w **cpuWeight) { gs = append(gs, *w) })
	require.Equal(t, len(ws), len(gs))
	f32bits := func(v []float32) []uint32 {
		out := make([]uint32, len(v))
		for i, f := range v {
			out[i] = math.Float32bits(f)
		}
		return out
	}
	for i := range ws {
		w, g := ws[i], gs[i]
		if w == nil {
			require.Nil(t, g)
			continue
		}
		switch {
		case w.mat != nil:
			// The values, however each model holds them (Half or Data).
			require.Equal(t, f32bits(packedValues(w.mat)), f32bits(packedValues(g.mat)), "%s: packed weight %d", msg, i)
		case w.bf != nil:
			require.Equal(t, w.bf.Data, g.bf.Data, "%s: bf16 weight %d", msg, i)
		case w.q8 != nil:
			require.Equal(t, w.q8.Q, g.q8.Q, "%s: int8 weight %d", msg, i)
			require.Equal(t, w.q8.D, g.q8.D, "%s: int8 scales %d", msg, i)
		default:
			require.Equal(t, f32bits(w.vec), f32bits(g.vec), "%s: vector %d", msg, i)
		}
	}
}

// TestLoadConvertedBitIdentical: loading an F32, F16 or BF16 checkpoint
// into fp32, bf16 or int8 weights (copied: the mapped bf16 load is
// TestLoadMapped's) stores exactly the bits SetTensor stores
// from the exactly widened values (PackRows, ToBF16, QuantizeRows), with
// NaN, signed zeros and denormals in the checkpoint, panels shared by two
// tensors, tensors cut into many jobs over several threads, and tied and
// untied heads.
func TestLoadConvertedBitIdentical(t *testing.T) {
	defer func(a, b int) { loadPiece, convertPiece = a, b }(loadPiece, convertPiece)
	for _, pieces := range [][2]int{{4 << 20, 512 << 10}, {3000, 700}} {
		loadPiece, convertPiece = pieces[0], pieces[1]
		for _, tie := range []bool{false, true} {
			cfg := oddConfig(tie)
			for _, dt := range []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16} {
				dir := t.TempDir()
				raw := writeRawDir(t, dir, cfg, dt, 11)
				for _, wt := range []WeightType{WeightsF32, WeightsBF16, WeightsInt8} {
					msg := fmt.Sprintf("pieces %v tied %v %s as %s", pieces, tie, dt, wt)
					cpu := kernels.NewCPU(3)
					got, err := LoadWith(dir, cpu, LoadOptions{Weights: wt, Copy: true})
					require.NoError(t, err, msg)
					want, err := NewWith(cfg, cpu, wt)
					require.NoError(t, err)
					for name, b := range raw {
						require.NoError(t, want.SetTensor(name, cfg.TensorShapes()[name], widenRaw(b, dt)))
					}
					requireSameWeights(t, want, got, msg)
					if wt == WeightsF32 {
						// BF16 tensors' values are bf16 values: kept in half the bytes.
						requireHalf(t, got, dt == safetensors.BF16, msg)
					}
					// Sleep and wake: the weights are dropped, then read again
					// into fresh memory.
					got.DropWeights()
					require.NoError(t, got.LoadWeights(dir), msg)
					require.Empty(t, got.Missing())
					requireSameWeights(t, want, got, msg+" after DropWeights")
					if wt == WeightsF32 {
						requireHalf(t, got, dt == safetensors.BF16, msg+" after DropWeights")
					}
				}
			}
		}
	}
}

// TestNewQ8Fill: the model's parallel newQ8 holds what kernels.NewQ8 holds
// (q = 0 everywhere: the byte 128; scales 0), over chunk boundaries.
func TestNewQ8Fill(t *testing.T) {
	m := &Model{cpu: kernels.NewCPU(3)}
	for _, sh := range [][2]int{{1, 1}, {17, 33}, {300, 4000}, {0, 32}} {
		want, got := kernels.NewQ8(sh[0], sh[1]), m.newQ8(sh[0], sh[1], false)
		require.Equal(t, want, got, "%v", sh)
	}
	b := make([]byte, 1000)
	fill(b[1:999], 7)
	require.Equal(t, byte(0), b[0])
	require.Equal(t, byte(0), b[999])
	for _, v := range b[1:999] {
		require.Equal(t, byte(7), v)
	}
}

// TestLoadF16Truncated: an F16 checkpoint cut short after it was opened is
// an error for every weight type (the conversions read only what pread
// returned), and no weight counts as loaded.
func TestLoadF16Truncated(t *testing.T) {
	cfg := oddConfig(true)
	for _, wt := range []WeightType{WeightsF32, WeightsBF16, WeightsInt8} {
		dir := t.TempDir()
		writeRawDir(t, dir, cfg, safetensors.F16, 3)
		set, err := safetensors.OpenDir(dir)
		require.NoError(t, err)
		path := filepath.Join(dir, safetensors.SingleFile)
		st, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(path, st.Size()*2/3))
		m, err := NewWith(cfg, kernels.NewCPU(2), wt)
		require.NoError(t, err)
		err = m.loadFrom(set, dir)
		require.ErrorIs(t, err, ErrWeights, "%s", wt)
		require.ErrorContains(t, err, "truncated")
		require.Len(t, m.Missing(), len(cfg.TensorShapes()))
		require.NoError(t, set.Close())
	}
}
